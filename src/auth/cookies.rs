//! better-auth's cookies: names (with the `__Secure-` prefix on https), `Set-Cookie`
//! values (URL-encoded `token.signature`, `Max-Age` only) and reading them back.

use http::HeaderMap;
use http::header::COOKIE;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Session cookie name without prefix.
pub const SESSION_TOKEN: &str = "better-auth.session_token";
/// "Don't remember me" marker.
pub const DONT_REMEMBER: &str = "better-auth.dont_remember";
/// Session cache cookie (never set by Bowline, but cleared with the others).
pub const SESSION_DATA: &str = "better-auth.session_data";
/// The signed state of an OAuth redirect flow (the browser that started it carries it).
pub const STATE: &str = "better-auth.state";
/// How long the state cookie lives.
pub const STATE_MAX_AGE_SECS: u64 = 300;
/// Prefix of every cookie name on https.
pub const SECURE_PREFIX: &str = "__Secure-";
/// Session lifetime: 7 days.
pub const SESSION_MAX_AGE_SECS: u64 = 7 * 24 * 60 * 60;

/// JavaScript's `encodeURIComponent` set.
const URI_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// How this server writes cookies.
#[derive(Debug, Clone, Copy)]
pub struct CookiePolicy {
    secure: bool,
}

impl CookiePolicy {
    /// Secure cookies when the public base URL is https.
    pub fn new(base_url: &str) -> Self {
        Self {
            secure: base_url.starts_with("https://"),
        }
    }

    fn name(&self, base: &str) -> String {
        if self.secure {
            format!("{SECURE_PREFIX}{base}")
        } else {
            base.to_owned()
        }
    }

    fn attributes(&self, max_age: Option<u64>) -> String {
        let mut attributes = String::new();
        if let Some(max_age) = max_age {
            attributes.push_str(&format!("; Max-Age={max_age}"));
        }
        attributes.push_str("; Path=/; HttpOnly; SameSite=Lax");
        if self.secure {
            attributes.push_str("; Secure");
        }
        attributes
    }

    /// The session cookie for `signed` (`token.signature`); a browser-session cookie when the
    /// user asked not to be remembered.
    pub fn session(&self, signed: &str, remember: bool) -> String {
        format!(
            "{}={}{}",
            self.name(SESSION_TOKEN),
            utf8_percent_encode(signed, URI_COMPONENT),
            self.attributes(remember.then_some(SESSION_MAX_AGE_SECS))
        )
    }

    /// The `dont_remember` marker carrying its signed `true`.
    pub fn dont_remember(&self, signed_true: &str) -> String {
        format!(
            "{}={}{}",
            self.name(DONT_REMEMBER),
            utf8_percent_encode(signed_true, URI_COMPONENT),
            self.attributes(None)
        )
    }

    /// The state cookie of an OAuth redirect flow, carrying its signed state.
    pub fn state(&self, signed_state: &str) -> String {
        format!(
            "{}={}{}",
            self.name(STATE),
            utf8_percent_encode(signed_state, URI_COMPONENT),
            self.attributes(Some(STATE_MAX_AGE_SECS))
        )
    }

    /// Clears the state cookie (its flow is over).
    pub fn clear_state(&self) -> String {
        format!("{}={}", self.name(STATE), self.attributes(Some(0)))
    }

    /// Cookies that clear the session, cache and marker.
    pub fn clear_all(&self) -> Vec<String> {
        [SESSION_TOKEN, SESSION_DATA, DONT_REMEMBER]
            .iter()
            .map(|name| format!("{}={}", self.name(name), self.attributes(Some(0))))
            .collect()
    }
}

/// The raw value of cookie `name` (or its `__Secure-` form) in the request's `Cookie` headers.
pub fn read(headers: &HeaderMap, name: &str) -> Option<String> {
    let secure_name = format!("{SECURE_PREFIX}{name}");
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name || *key == secure_name)
        .map(|(_, value)| value.trim().to_owned())
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use http::HeaderValue;

    use super::*;

    #[test]
    fn session_cookie_is_encoded_with_max_age() {
        let policy = CookiePolicy::new("http://127.0.0.1:7531");
        assert_eq!(
            policy.session("tok.a+b/c=", true),
            "better-auth.session_token=tok.a%2Bb%2Fc%3D; Max-Age=604800; Path=/; HttpOnly; SameSite=Lax"
        );
        assert!(!policy.session("t.s", false).contains("Max-Age"));
        let secure = CookiePolicy::new("https://cal.example.com");
        let cookie = secure.session("t.s", true);
        assert!(cookie.starts_with("__Secure-better-auth.session_token="));
        assert!(cookie.ends_with("; Secure"));
        assert!(
            secure
                .clear_all()
                .iter()
                .all(|c| c.contains("Max-Age=0") && c.starts_with("__Secure-"))
        );
    }

    #[test]
    fn reads_plain_and_secure_names() {
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            HeaderValue::from_static("a=1; __Secure-better-auth.session_token=x.y%3D"),
        );
        assert_eq!(read(&headers, SESSION_TOKEN).as_deref(), Some("x.y%3D"));
        assert_eq!(read(&headers, "a").as_deref(), Some("1"));
        assert_eq!(read(&headers, "b"), None);
    }
}
