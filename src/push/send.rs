//! Sending one message to one browser: encrypted to its keys (RFC 8291), authenticated
//! with the server's VAPID key (RFC 8292), POSTed to its push service through the outbound
//! guard (RFC 8030: `TTL`, `Urgency`), and the push service's answer read as what to do
//! next: done, drop the subscription (404, 410), try again later (429, 5xx, no answer), or
//! give up on this message (any other refusal).

use std::time::Duration;

use chrono::Utc;
use http::header::{AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE, HeaderName};
use http::{HeaderValue, Method, StatusCode};
use url::Url;

use super::encryption::SubscriptionKeys;
use super::vapid::{Vapid, endpoint_origin};
use crate::providers::outbound::{OutboundError, OutboundGuard, OutboundRequest, retry_after};
use crate::store::push::Subscription;

/// How soon a message is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// Soon (the thing starts within minutes).
    High,
    /// Normal.
    Normal,
}

impl Urgency {
    fn header(self) -> &'static str {
        match self {
            Self::High => "high",
            Self::Normal => "normal",
        }
    }
}

/// What became of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The push service accepted it.
    Accepted,
    /// The subscription is gone (404, 410): drop it.
    Gone,
    /// Worth trying again (429, 5xx, a timeout or a failed connection), after the push
    /// service's `Retry-After` if it said one; the reason is a failure metric's label.
    Retry {
        /// The push service's `Retry-After`.
        after: Option<Duration>,
        /// `throttled`, `unavailable` or `unreachable`.
        reason: &'static str,
    },
    /// Refused for good (any other answer, a subscription that cannot be encrypted to, or an
    /// endpoint the guard refuses).
    Refused,
}

/// The server's web push sender: its VAPID identity and the outbound guard.
#[derive(Debug, Clone)]
pub struct PushSender {
    vapid: Vapid,
    guard: OutboundGuard,
}

/// How long a VAPID token stays valid (RFC 8292 allows at most 24 hours).
const TOKEN_LIFETIME_SECS: i64 = 12 * 60 * 60;

impl PushSender {
    /// A sender authenticating as `vapid`, sending through `guard`.
    pub fn new(vapid: Vapid, guard: OutboundGuard) -> Self {
        Self { vapid, guard }
    }

    /// Sends `payload` to `subscription`, to be kept by the push service for `ttl` at most.
    pub async fn send(
        &self,
        subscription: &Subscription,
        payload: &[u8],
        ttl: Duration,
        urgency: Urgency,
    ) -> Delivery {
        let Ok(keys) = SubscriptionKeys::from_base64url(&subscription.p256dh, &subscription.auth)
        else {
            return Delivery::Refused;
        };
        let Ok(body) = keys.encrypt(payload) else {
            return Delivery::Refused;
        };
        let (Ok(url), Some(origin)) = (
            Url::parse(&subscription.endpoint),
            endpoint_origin(&subscription.endpoint),
        ) else {
            return Delivery::Refused;
        };
        let expires = Utc::now().timestamp() + TOKEN_LIFETIME_SECS;
        let Ok(authorization) = HeaderValue::from_str(&self.vapid.authorization(&origin, expires))
        else {
            return Delivery::Refused;
        };
        let request = OutboundRequest::new(Method::POST, url)
            .header(AUTHORIZATION, authorization)
            .header(CONTENT_ENCODING, HeaderValue::from_static("aes128gcm"))
            .header(
                CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            )
            .header(
                HeaderName::from_static("ttl"),
                HeaderValue::from(ttl.as_secs()),
            )
            .header(
                HeaderName::from_static("urgency"),
                HeaderValue::from_static(urgency.header()),
            )
            .body(body)
            .without_redirects()
            .max_body_bytes(64 * 1024);
        match self.guard.send(request).await {
            Ok(response) => delivery_of(response.status, &response.headers),
            Err(OutboundError::Timeout | OutboundError::Connect(_)) => Delivery::Retry {
                after: None,
                reason: "unreachable",
            },
            Err(_) => Delivery::Refused,
        }
    }
}

/// A push service's answer, as what to do next.
fn delivery_of(status: StatusCode, headers: &http::HeaderMap) -> Delivery {
    match status.as_u16() {
        200..=299 => Delivery::Accepted,
        404 | 410 => Delivery::Gone,
        429 => Delivery::Retry {
            after: retry_after(headers),
            reason: "throttled",
        },
        500..=599 => Delivery::Retry {
            after: retry_after(headers),
            reason: "unavailable",
        },
        _ => Delivery::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_say_what_to_do_next() {
        let none = http::HeaderMap::new();
        assert_eq!(delivery_of(StatusCode::CREATED, &none), Delivery::Accepted);
        assert_eq!(delivery_of(StatusCode::GONE, &none), Delivery::Gone);
        assert_eq!(delivery_of(StatusCode::NOT_FOUND, &none), Delivery::Gone);
        assert!(matches!(
            delivery_of(StatusCode::TOO_MANY_REQUESTS, &none),
            Delivery::Retry {
                reason: "throttled",
                ..
            }
        ));
        assert!(matches!(
            delivery_of(StatusCode::BAD_GATEWAY, &none),
            Delivery::Retry {
                reason: "unavailable",
                ..
            }
        ));
        assert_eq!(
            delivery_of(StatusCode::BAD_REQUEST, &none),
            Delivery::Refused
        );
        assert_eq!(
            delivery_of(StatusCode::PAYLOAD_TOO_LARGE, &none),
            Delivery::Refused
        );
    }
}
