//! [`RequestCtx`]: what the pipeline knows about one request, shared by every stage.
//!
//! The outer pipeline creates it (request id, client address, the request's tracing span)
//! and puts it in the request's extensions; route filters record the matched route pattern
//! and, after authentication, the user id; the renderer and the access log read it back.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use http::HeaderMap;

use crate::metrics::UNMATCHED_ROUTE;

/// Header carrying the request id both ways.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Per-request context; cheap to clone.
#[derive(Debug, Clone)]
pub struct RequestCtx(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    id: String,
    client_addr: SocketAddr,
    span: tracing::Span,
    route: OnceLock<&'static str>,
    user_id: OnceLock<String>,
}

impl RequestCtx {
    /// A context for a request from `client_addr`, logged under `span`.
    pub fn new(id: String, client_addr: SocketAddr, span: tracing::Span) -> Self {
        Self(Arc::new(Inner {
            id,
            client_addr,
            span,
            route: OnceLock::new(),
            user_id: OnceLock::new(),
        }))
    }

    /// The request id (client-supplied if valid, else generated).
    pub fn id(&self) -> &str {
        &self.0.id
    }

    /// The peer address of the connection.
    pub fn client_addr(&self) -> SocketAddr {
        self.0.client_addr
    }

    /// The request's tracing span.
    pub fn span(&self) -> &tracing::Span {
        &self.0.span
    }

    /// Records the route pattern that matched the path; the first match wins.
    pub fn set_route(&self, pattern: &'static str) {
        let _ = self.0.route.set(pattern);
    }

    /// The matched route pattern, or `<unmatched>`.
    pub fn route(&self) -> &'static str {
        self.0.route.get().copied().unwrap_or(UNMATCHED_ROUTE)
    }

    /// Records the authenticated user, for this request's log lines.
    pub fn set_user(&self, user_id: &str) {
        if self.0.user_id.set(user_id.to_owned()).is_ok() {
            self.0.span.record("userId", user_id);
        }
    }

    /// The authenticated user, if any.
    pub fn user_id(&self) -> Option<&str> {
        self.0.user_id.get().map(String::as_str)
    }
}

/// The client's `x-request-id` if it matches `[A-Za-z0-9._-]{1,128}`, else a new UUID.
pub fn request_id_from(headers: &HeaderMap) -> String {
    headers
        .get(REQUEST_ID_HEADER)
        .and_then(|value| value.to_str().ok())
        .filter(|id| is_valid_request_id(id))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

fn is_valid_request_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn with_id(id: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            REQUEST_ID_HEADER,
            HeaderValue::from_str(id).expect("header"),
        );
        headers
    }

    #[test]
    fn keeps_a_valid_client_id() {
        assert_eq!(request_id_from(&with_id("abc-1.2_3")), "abc-1.2_3");
        let long = "a".repeat(128);
        assert_eq!(request_id_from(&with_id(&long)), long);
    }

    #[test]
    fn replaces_an_invalid_client_id() {
        for bad in ["", "has space", "semi;colon", &"a".repeat(129), "ünï"] {
            let headers = if bad.is_ascii() {
                with_id(bad)
            } else {
                HeaderMap::new()
            };
            let id = request_id_from(&headers);
            assert_ne!(id, bad);
            assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
        }
    }
}
