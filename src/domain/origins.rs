//! Trusted origins: who may send cookie-carrying requests and which callback URLs the auth
//! subsystem will redirect to.
//!
//! Patterns, as better-auth reads them: an exact origin (`https://cal.example.com`), a
//! wildcard host (`https://*.example.com` or `*.example.com`), or a custom scheme prefix
//! (`bowline://` matches `bowline://anything`).

/// A set of trusted origin patterns.
#[derive(Debug, Clone, Default)]
pub struct TrustedOrigins {
    exact: Vec<String>,
    wildcard_hosts: Vec<(Option<String>, String)>,
    scheme_prefixes: Vec<String>,
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

    /// Whether `target` may be used as a callback or redirect: a same-origin relative path
    /// (`/x`, never `//x`) or a URL with a trusted origin.
    pub fn is_allowed_target(&self, target: &str) -> bool {
        if target.starts_with('/') {
            return !target.starts_with("//") && !target.contains('\\');
        }
        self.is_trusted(target)
    }
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
        let set = set();
        assert!(set.is_allowed_target("/email-verified"));
        assert!(!set.is_allowed_target("//evil.io/x"));
        assert!(!set.is_allowed_target("/\\evil.io"));
        assert!(set.is_allowed_target("https://cal.example.com/email-verified"));
        assert!(!set.is_allowed_target("https://evil.io/email-verified"));
    }
}
