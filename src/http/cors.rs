//! Cross-origin policy (pipeline stage 3): an origin whitelist with credentials allowed.
//!
//! Requests without `Origin` (mobile apps, curl, server-to-server) always pass. Allowed
//! origins are the trusted origins: the server's own base URL, `CORS_ORIGINS`,
//! `TRUSTED_ORIGINS` and the app scheme. A request from any other
//! origin is refused with 403 before it reaches a route; preflights from allowed origins are
//! answered here. Every response to an allowed origin, errors included, carries the CORS
//! headers, so browsers can read error bodies.

use http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD, HeaderMap, HeaderValue, ORIGIN,
    VARY,
};
use http::{Method, StatusCode};
use warp::reply::Response;

use crate::domain::origins::TrustedOrigins;

const ALLOWED_METHODS: &str = "GET, POST, PUT, PATCH, DELETE, OPTIONS";
const DEFAULT_ALLOWED_HEADERS: &str =
    "authorization, content-type, x-request-id, expo-origin, better-auth-cookie";
/// Headers browsers may read: the request id and better-auth's bearer token.
const EXPOSED_HEADERS: &str = "x-request-id, set-auth-token";

/// The whitelist.
#[derive(Debug, Clone)]
pub struct CorsPolicy {
    allowed: TrustedOrigins,
}

/// What the policy says about one request.
pub enum CorsDecision {
    /// No `Origin`: not a cross-origin browser request.
    NotCors,
    /// An allowed origin: pass on, then add the headers with [`CorsPolicy::decorate`].
    Allowed(HeaderValue),
    /// An allowed origin's preflight, answered here.
    Preflight(Response),
    /// An origin that is not on the list.
    Forbidden,
}

impl CorsPolicy {
    /// The policy allowing `allowed`.
    pub fn new(allowed: TrustedOrigins) -> Self {
        Self { allowed }
    }

    /// Judges a request by its method and headers.
    pub fn decide(&self, method: &Method, headers: &HeaderMap) -> CorsDecision {
        let Some(origin) = headers.get(ORIGIN) else {
            return CorsDecision::NotCors;
        };
        let allowed = origin.to_str().is_ok_and(|o| self.allowed.is_trusted(o));
        if !allowed {
            return CorsDecision::Forbidden;
        }
        if method == Method::OPTIONS && headers.contains_key(ACCESS_CONTROL_REQUEST_METHOD) {
            let mut response = Response::default();
            *response.status_mut() = StatusCode::NO_CONTENT;
            let out = response.headers_mut();
            Self::decorate_headers(out, origin.clone());
            out.insert(
                ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static(ALLOWED_METHODS),
            );
            out.insert(
                ACCESS_CONTROL_ALLOW_HEADERS,
                headers
                    .get(ACCESS_CONTROL_REQUEST_HEADERS)
                    .cloned()
                    .unwrap_or_else(|| HeaderValue::from_static(DEFAULT_ALLOWED_HEADERS)),
            );
            out.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
            return CorsDecision::Preflight(response);
        }
        CorsDecision::Allowed(origin.clone())
    }

    /// Adds the CORS headers for an allowed `origin` to a response.
    pub fn decorate(response: &mut Response, origin: HeaderValue) {
        let headers = response.headers_mut();
        Self::decorate_headers(headers, origin);
        headers.insert(
            ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSED_HEADERS),
        );
    }

    fn decorate_headers(headers: &mut HeaderMap, origin: HeaderValue) {
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(
            ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
        headers.append(VARY, HeaderValue::from_static("origin"));
    }
}
