//! Trusted origins: who may send cookie-carrying requests and which callback URLs the auth
//! subsystem will redirect to.
//!
//! Patterns, as better-auth reads them: an exact origin (`https://cal.example.com`), a
//! wildcard host (`https://*.example.com` or `*.example.com`), or a custom scheme prefix
//! (`bowline://` matches `bowline://anything`).
//!
//! **Redirect targets** ([`TrustedOrigins::is_allowed_target`]) follow one rule, used by
//! every route that redirects or stores a callback: a target is an absolute URL on a
//! trusted origin, or a relative path that, resolved against the server's base URL as a
//! browser resolves it, stays on that origin. Browsers drop tab, LF and CR from a URL
//! before resolving it and read `\` as `/`, so `/\t/evil.example` and `/\evil.example` are
//! `//evil.example` to them: any ASCII control character, whitespace or backslash anywhere
//! in a target, written or percent-encoded, refuses it, as does a relative target that is
//! not plain ASCII (full-width slashes) or that decodes to a second leading slash.

use percent_encoding::percent_decode_str;
use url::Url;

/// A set of trusted origin patterns, and the server's base URL relative targets resolve
/// against.
#[derive(Debug, Clone, Default)]
pub struct TrustedOrigins {
    exact: Vec<String>,
    wildcard_hosts: Vec<(Option<String>, String)>,
    scheme_prefixes: Vec<String>,
    base: Option<Url>,
}

impl TrustedOrigins {
    /// Builds the set from its patterns.
    pub fn new<S: AsRef<str>>(patterns: impl IntoIterator<Item = S>) -> Self {
        let mut set = Self::default();
        for pattern in patterns {
            let pattern = pattern.as_ref().trim().to_ascii_lowercase();
            let (scheme, rest) = match pattern.split_once("://") {
                Some((scheme, rest)) => (Some(scheme.to_owned()), rest.trim_end_matches('/')),
                None => (None, pattern.trim_end_matches('/')),
            };
            match (scheme, rest.strip_prefix("*.")) {
                (scheme, Some(suffix)) => set.wildcard_hosts.push((scheme, format!(".{suffix}"))),
                (Some(scheme), None) if scheme != "http" && scheme != "https" => {
                    set.scheme_prefixes.push(format!("{scheme}://{rest}"));
                }
                (Some(scheme), None) => set.exact.push(format!("{scheme}://{rest}")),
                (None, None) if !rest.is_empty() => set.exact.push(rest.to_owned()),
                (None, None) => {}
            }
        }
        set
    }

    /// The set of `patterns` for a server at `base_url`, against which relative redirect
    /// targets are resolved (without one, they resolve against a placeholder origin).
    pub fn for_server<S: AsRef<str>>(
        base_url: &str,
        patterns: impl IntoIterator<Item = S>,
    ) -> Self {
        let mut set = Self::new(patterns);
        set.base = Url::parse(base_url).ok();
        set
    }

    /// Whether `origin` (an `Origin` header value, or any URL whose origin counts) is trusted.
    pub fn is_trusted(&self, origin: &str) -> bool {
        let lowered = origin.trim().to_ascii_lowercase();
        if lowered.is_empty() || lowered == "null" {
            return false;
        }
        if self
            .scheme_prefixes
            .iter()
            .any(|prefix| lowered.starts_with(prefix.as_str()))
        {
            return true;
        }
        let Ok(url) = url::Url::parse(&lowered) else {
            return false;
        };
        if !matches!(url.scheme(), "http" | "https") {
            return false;
        }
        let serialized = url.origin().ascii_serialization();
        if self.exact.contains(&serialized) {
            return true;
        }
        let host = url.host_str().unwrap_or_default();
        self.wildcard_hosts.iter().any(|(scheme, suffix)| {
            scheme.as_deref().is_none_or(|s| s == url.scheme()) && host.ends_with(suffix.as_str())
        })
    }

    /// Whether `target` may be used as a callback or redirect (the module's rule): a URL on a
    /// trusted origin, or a relative path that stays on the server's origin.
    pub fn is_allowed_target(&self, target: &str) -> bool {
        let decoded = percent_decode_str(target).decode_utf8_lossy();
        if !is_clean(target) || !is_clean(&decoded) {
            return false;
        }
        match Url::parse(target) {
            Ok(url) => {
                url.username().is_empty() && url.password().is_none() && self.is_trusted(target)
            }
            Err(url::ParseError::RelativeUrlWithoutBase) => {
                self.stays_on_base(target) && !decoded.starts_with("//")
            }
            Err(_) => false,
        }
    }

    /// Whether the relative `target` is an ASCII path (`/…`, never `//…`) that, resolved
    /// against the base URL, keeps its origin.
    fn stays_on_base(&self, target: &str) -> bool {
        if !target.is_ascii() || !target.starts_with('/') || target.starts_with("//") {
            return false;
        }
        let Some(base) = self
            .base
            .clone()
            .or_else(|| Url::parse("https://base.invalid/").ok())
        else {
            return false;
        };
        base.join(target)
            .is_ok_and(|resolved| resolved.origin() == base.origin())
    }
}

/// No ASCII control character, no whitespace and no backslash anywhere.
fn is_clean(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '\\')
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn set() -> TrustedOrigins {
        TrustedOrigins::new([
            "https://cal.example.com/",
            "http://localhost:8081",
            "*.preview.example",
            "bowline://",
        ])
    }

    #[test]
    fn exact_wildcard_and_scheme_patterns() {
        let set = set();
        assert!(set.is_trusted("https://cal.example.com"));
        assert!(set.is_trusted("HTTPS://CAL.EXAMPLE.COM"));
        assert!(set.is_trusted("https://cal.example.com/reset-password?x=1"));
        assert!(!set.is_trusted("https://cal.example.com.evil.io"));
        assert!(!set.is_trusted("http://cal.example.com"));
        assert!(set.is_trusted("http://localhost:8081"));
        assert!(!set.is_trusted("http://localhost:8082"));
        assert!(set.is_trusted("https://pr-12.preview.example"));
        assert!(!set.is_trusted("https://preview.example.evil"));
        assert!(set.is_trusted("bowline://"));
        assert!(set.is_trusted("bowline://invite/abc"));
        assert!(!set.is_trusted("evil://x"));
        assert!(!set.is_trusted("null"));
        assert!(!set.is_trusted(""));
    }

    #[test]
    fn callback_targets() {
        let set = TrustedOrigins::for_server(
            "https://cal.example.com",
            ["https://cal.example.com", "bowline://"],
        );
        for allowed in [
            "/email-verified",
            "/reset-password?x=1&y=a+b",
            "/calendar#week",
            "https://cal.example.com/email-verified",
            "HTTPS://CAL.EXAMPLE.COM/x",
            "bowline://invite/abc",
        ] {
            assert!(set.is_allowed_target(allowed), "{allowed:?} is allowed");
        }
        for refused in [
            "//evil.io/x",
            "/\\evil.io",
            "\\/evil.io",
            "/\t/evil.io",
            "/\n/evil.io",
            "/\r/evil.io",
            "/\0/evil.io",
            "/ /evil.io",
            "/%09/evil.io",
            "/%0a/evil.io",
            "/%0D/evil.io",
            "/%00/evil.io",
            "/%20/evil.io",
            "/%5c/evil.io",
            "/%2F/evil.io",
            "%2F%2Fevil.io",
            "evil.io",
            "\u{ff0f}\u{ff0f}evil.io",
            "/\u{ff0f}evil.io",
            "https:evil.io",
            "https://evil.io/email-verified",
            "http://cal.example.com@evil.io/",
            "https://user@cal.example.com/",
            "javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "/x\u{3000}y",
        ] {
            assert!(!set.is_allowed_target(refused), "{refused:?} is refused");
        }
    }
}
