//! better-auth's origin (CSRF) rules for `/api/auth/*`, and the same rule for
//! cookie-authenticated application requests.
//!
//! The request's origin is its `Origin` header, else Expo's `expo-origin` (the expo plugin
//! copies it into `Origin`), else the origin of `Referer`.

use http::{HeaderMap, Method};

use super::error::AuthError;
use crate::domain::origins::TrustedOrigins;

/// The origin a request claims, by better-auth's rules.
pub fn request_origin(headers: &HeaderMap) -> Option<String> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    header("origin")
        .or_else(|| header("expo-origin"))
        .or_else(|| header("referer"))
}

/// Whether a method changes state (the origin check applies).
pub fn is_mutating(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Rule 1a: a cookie-carrying mutating request needs a trusted origin.
pub fn check_cookie_origin(trusted: &TrustedOrigins, headers: &HeaderMap) -> Result<(), AuthError> {
    match request_origin(headers) {
        None => Err(AuthError::missing_or_null_origin()),
        Some(origin) if origin == "null" => Err(AuthError::missing_or_null_origin()),
        Some(origin) if trusted.is_trusted(&origin) => Ok(()),
        Some(_) => Err(AuthError::invalid_origin()),
    }
}

/// The checks every mutating `/api/auth/*` request passes before its handler. `form_route`
/// marks `/sign-in/email` and `/sign-up/email`, which also apply the Fetch-Metadata rules.
pub fn check_auth_request(
    trusted: &TrustedOrigins,
    method: &Method,
    headers: &HeaderMap,
    form_route: bool,
) -> Result<(), AuthError> {
    if !is_mutating(method) {
        return Ok(());
    }
    let has_cookie = headers.contains_key(http::header::COOKIE);
    if has_cookie {
        return check_cookie_origin(trusted, headers);
    }
    if !form_route {
        return Ok(());
    }
    let fetch = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (site, mode, dest) = (
        fetch("sec-fetch-site"),
        fetch("sec-fetch-mode"),
        fetch("sec-fetch-dest"),
    );
    if site.is_some() || mode.is_some() || dest.is_some() {
        if site == Some("cross-site") && mode == Some("navigate") {
            return Err(AuthError::cross_site_navigation_login_blocked());
        }
        return check_cookie_origin(trusted, headers);
    }
    match request_origin(headers) {
        Some(origin) if !trusted.is_trusted(&origin) => Err(AuthError::invalid_origin()),
        _ => Ok(()),
    }
}

/// Rule 1b: URL fields of a body must be trusted or relative.
pub fn check_body_urls(
    trusted: &TrustedOrigins,
    body: &serde_json::Value,
) -> Result<(), AuthError> {
    type Refusal = fn() -> AuthError;
    let checks: [(&str, Refusal); 4] = [
        ("callbackURL", AuthError::invalid_callback_url),
        ("redirectTo", AuthError::invalid_redirect_url),
        ("errorCallbackURL", AuthError::invalid_error_callback_url),
        (
            "newUserCallbackURL",
            AuthError::invalid_new_user_callback_url,
        ),
    ];
    for (field, error) in checks {
        if let Some(target) = body.get(field).and_then(|v| v.as_str())
            && !target.is_empty()
            && !trusted.is_allowed_target(target)
        {
            return Err(error());
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn trusted() -> TrustedOrigins {
        TrustedOrigins::new(["http://127.0.0.1:7531", "bowline://"])
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn cookie_posts_need_a_trusted_origin() {
        let t = trusted();
        let post = Method::POST;
        assert_eq!(
            check_auth_request(&t, &post, &headers(&[("cookie", "a=b")]), false),
            Err(AuthError::missing_or_null_origin())
        );
        assert_eq!(
            check_auth_request(
                &t,
                &post,
                &headers(&[("cookie", "a=b"), ("origin", "https://evil.io")]),
                false
            ),
            Err(AuthError::invalid_origin())
        );
        assert!(
            check_auth_request(
                &t,
                &post,
                &headers(&[("cookie", "a=b"), ("expo-origin", "bowline://")]),
                false
            )
            .is_ok()
        );
        assert!(
            check_auth_request(&t, &Method::GET, &headers(&[("cookie", "a=b")]), false).is_ok()
        );
        // Bearer-only requests are not subject to the check.
        assert!(
            check_auth_request(&t, &post, &headers(&[("authorization", "Bearer x")]), false)
                .is_ok()
        );
    }

    #[test]
    fn sign_in_form_csrf() {
        let t = trusted();
        let post = Method::POST;
        assert!(check_auth_request(&t, &post, &HeaderMap::new(), true).is_ok());
        assert_eq!(
            check_auth_request(
                &t,
                &post,
                &headers(&[
                    ("sec-fetch-site", "cross-site"),
                    ("sec-fetch-mode", "navigate")
                ]),
                true
            ),
            Err(AuthError::cross_site_navigation_login_blocked())
        );
        assert_eq!(
            check_auth_request(&t, &post, &headers(&[("sec-fetch-mode", "cors")]), true),
            Err(AuthError::missing_or_null_origin())
        );
        assert!(
            check_auth_request(
                &t,
                &post,
                &headers(&[
                    ("sec-fetch-mode", "cors"),
                    ("origin", "http://127.0.0.1:7531")
                ]),
                true
            )
            .is_ok()
        );
        assert_eq!(
            check_auth_request(&t, &post, &headers(&[("origin", "https://evil.io")]), true),
            Err(AuthError::invalid_origin())
        );
    }
}
