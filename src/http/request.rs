//! [`RequestCtx`]: what the pipeline knows about one request, shared by every stage.
//!
//! The outer pipeline creates it (request id, client address, the request's tracing span)
//! and puts it in the request's extensions; route filters record the matched route pattern
//! and, after authentication, the user id; the renderer and the access log read it back.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};

use http::HeaderMap;
use ipnet::IpNet;

use crate::domain::ids::UserId;
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
    client_ip: IpAddr,
    span: tracing::Span,
    route: OnceLock<&'static str>,
    user_id: OnceLock<UserId>,
}

impl RequestCtx {
    /// A context for a request from `client_addr` (acting for `client_ip`, which differs
    /// behind a trusted proxy), logged under `span`.
    pub fn new(
        id: String,
        client_addr: SocketAddr,
        client_ip: IpAddr,
        span: tracing::Span,
    ) -> Self {
        Self(Arc::new(Inner {
            id,
            client_addr,
            client_ip,
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

    /// The client's address for rate limits and session records: the peer, or behind a
    /// trusted proxy the nearest untrusted address of `X-Forwarded-For`.
    pub fn client_ip(&self) -> IpAddr {
        self.0.client_ip
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
    pub fn set_user(&self, user_id: &UserId) {
        if self.0.user_id.set(user_id.clone()).is_ok() {
            self.0.span.record("userId", user_id.as_str());
        }
    }

    /// The authenticated user, if any.
    pub fn user_id(&self) -> Option<&UserId> {
        self.0.user_id.get()
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

/// The client address: the peer itself, unless the peer is one of the `trusted` proxies'
/// networks (empty unless `TRUST_PROXY_HEADERS` is on). Then `X-Forwarded-For` is read from
/// the right, the hop each proxy added: an address in `trusted` is one more proxy, the first
/// other one is the client. A hop that is not an address ends the walk at the last proxy
/// before it (what lies further left is the client's to write), as does a list of proxies
/// only.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_proxy = |ip: IpAddr| trusted.iter().any(|net| net.contains(&ip));
    let peer = peer.to_canonical();
    if !is_proxy(peer) {
        return peer;
    }
    let mut nearest = peer;
    for value in headers.get_all("x-forwarded-for").iter().rev() {
        let Ok(text) = value.to_str() else {
            return nearest;
        };
        for hop in text.rsplit(',') {
            let Ok(hop) = hop.trim().parse::<IpAddr>() else {
                return nearest;
            };
            let hop = hop.to_canonical();
            if !is_proxy(hop) {
                return hop;
            }
            nearest = hop;
        }
    }
    nearest
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

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(
                "x-forwarded-for",
                HeaderValue::from_str(value).expect("header"),
            );
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("ip")
    }

    #[test]
    fn forwarded_for_is_read_only_from_trusted_proxies_right_to_left() {
        let proxies: Vec<IpNet> = vec![
            "127.0.0.1/32".parse().expect("net"),
            "10.0.0.0/8".parse().expect("net"),
        ];
        let loopback = ip("127.0.0.1");
        let public = ip("198.51.100.1");
        let chain = forwarded(&["203.0.113.9, 10.0.0.2"]);
        assert_eq!(client_ip(loopback, &chain, &proxies), ip("203.0.113.9"));
        // Off (no trusted networks) or from an untrusted peer: the peer.
        assert_eq!(client_ip(loopback, &chain, &[]), loopback);
        assert_eq!(client_ip(public, &chain, &proxies), public);
        assert_eq!(
            client_ip(ip("192.168.1.5"), &chain, &proxies),
            ip("192.168.1.5")
        );
        assert_eq!(client_ip(loopback, &HeaderMap::new(), &proxies), loopback);
        // What the client wrote itself lies left of the first untrusted hop: ignored.
        let spoofed = forwarded(&["1.2.3.4, 203.0.113.9"]);
        assert_eq!(client_ip(loopback, &spoofed, &proxies), ip("203.0.113.9"));
        let two_headers = forwarded(&["1.2.3.4", "203.0.113.9, 10.1.1.1"]);
        assert_eq!(
            client_ip(loopback, &two_headers, &proxies),
            ip("203.0.113.9")
        );
        // Garbage ends the walk at the last proxy.
        let garbage = forwarded(&["1.2.3.4, nonsense, 10.0.0.7"]);
        assert_eq!(client_ip(loopback, &garbage, &proxies), ip("10.0.0.7"));
        // A v4-mapped peer is its IPv4 address.
        assert_eq!(
            client_ip(ip("::ffff:127.0.0.1"), &chain, &proxies),
            ip("203.0.113.9")
        );
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
