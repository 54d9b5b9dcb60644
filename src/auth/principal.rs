//! Who a request is: the session named by its bearer token (raw or signed) or its signed
//! session cookie, else, for a bearer that is no session, the federated shadow user whose
//! member token hashes to it.
//!
//! A signed value with a bad signature counts as no credential at all (anonymous), as in
//! better-auth; an unsigned cookie is refused, an unsigned bearer is the raw token.

use chrono::{DateTime, Utc};
use entities::{sessions, users};
use http::HeaderMap;
use http::header::AUTHORIZATION;

use super::cookies::{self, SESSION_TOKEN};
use super::tokens::{percent_decoded, verify_signed};
use crate::domain::digest::sha256_hex;
use crate::error::AppError;
use crate::store::{Database, member_tokens, sessions as session_store};

/// How the session token arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// `Authorization: Bearer`.
    Bearer,
    /// The session cookie (browsers, the Expo client).
    Cookie,
}

/// The credentials a request carries.
#[derive(Debug, Clone, Default)]
pub struct Presented {
    /// The session token, once its signature (if any) checked out.
    pub session_token: Option<String>,
    /// How it came.
    pub transport: Option<Transport>,
    /// The raw bearer value, a member-token candidate.
    pub bearer: Option<String>,
    /// Whether a `Cookie` header was sent at all (origin checks).
    pub has_cookie_header: bool,
}

/// Reads the credentials of a request.
pub fn presented(headers: &HeaderMap, secret: &str) -> Presented {
    let has_cookie_header = headers.contains_key(http::header::COOKIE);
    if let Some(bearer) = bearer_token(headers) {
        let decoded = percent_decoded(&bearer);
        let session_token = if decoded.contains('.') {
            verify_signed(secret, &decoded).map(str::to_owned)
        } else {
            Some(decoded)
        };
        return Presented {
            transport: session_token.as_ref().map(|_| Transport::Bearer),
            session_token,
            bearer: Some(bearer),
            has_cookie_header,
        };
    }
    let session_token = cookies::read(headers, SESSION_TOKEN)
        .map(|value| percent_decoded(&value))
        .and_then(|value| verify_signed(secret, &value).map(str::to_owned));
    Presented {
        transport: session_token.as_ref().map(|_| Transport::Cookie),
        session_token,
        bearer: None,
        has_cookie_header,
    }
}

/// `Authorization: Bearer <token>` (scheme case-insensitive).
pub fn bearer_token(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(char::is_whitespace)?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then(|| token.to_owned())
}

/// An authenticated identity.
#[derive(Debug, Clone)]
pub enum Identity {
    /// A signed-in user.
    Session(Box<SessionIdentity>),
    /// A federated shadow user, by member token (identity only).
    Member {
        /// The shadow user.
        user: users::Model,
        /// SHA-256 of the member token presented.
        token_hash: String,
        /// When that token stops authenticating.
        expires_at: DateTime<Utc>,
    },
}

impl Identity {
    /// The user.
    pub fn user(&self) -> &users::Model {
        match self {
            Self::Session(session) => &session.user,
            Self::Member { user, .. } => user,
        }
    }
}

/// A session-authenticated user.
#[derive(Debug, Clone)]
pub struct SessionIdentity {
    /// The user.
    pub user: users::Model,
    /// Their session.
    pub session: sessions::Model,
    /// The raw session token presented.
    pub token: String,
    /// How it was presented.
    pub transport: Transport,
}

/// The outcome of resolving a request.
#[derive(Debug, Clone)]
pub enum Resolution {
    /// A valid identity.
    Authenticated(Identity),
    /// No valid identity. `stale`: a session credential was presented but named no live
    /// session (better-auth then clears the cookies).
    Anonymous {
        /// A session credential was presented and is unknown or expired.
        stale: bool,
    },
}

/// Resolves `presented` against the database.
pub async fn resolve(
    db: &Database,
    presented: &Presented,
    now: DateTime<Utc>,
) -> Result<Resolution, AppError> {
    let mut stale = false;
    if let (Some(token), Some(transport)) = (&presented.session_token, presented.transport) {
        match session_store::find_by_token_hash(db, &sha256_hex(token)).await? {
            Some((session, user)) if session.expires_at > now => {
                return Ok(Resolution::Authenticated(Identity::Session(Box::new(
                    SessionIdentity {
                        user,
                        session,
                        token: token.clone(),
                        transport,
                    },
                ))));
            }
            Some((session, _)) => {
                session_store::delete(db, &session.user_id, &session.id).await?;
                stale = true;
            }
            None => stale = true,
        }
    }
    if let Some(bearer) = &presented.bearer {
        let token_hash = sha256_hex(bearer);
        if let Some((user, expires_at)) = member_tokens::find_user(db, &token_hash, now).await? {
            return Ok(Resolution::Authenticated(Identity::Member {
                user,
                token_hash,
                expires_at,
            }));
        }
    }
    Ok(Resolution::Anonymous { stale })
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use http::HeaderValue;

    use super::*;
    use crate::auth::tokens::signed;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).expect("header"));
        }
        map
    }

    #[test]
    fn bearer_raw_signed_and_encoded() {
        let raw = presented(&headers(&[("authorization", "Bearer abc")]), "s");
        assert_eq!(raw.session_token.as_deref(), Some("abc"));
        assert_eq!(raw.transport, Some(Transport::Bearer));

        let token = signed("s", "abc");
        let signed_bearer = presented(
            &headers(&[("authorization", &format!("bearer {token}"))]),
            "s",
        );
        assert_eq!(signed_bearer.session_token.as_deref(), Some("abc"));

        let encoded = token
            .replace('+', "%2B")
            .replace('/', "%2F")
            .replace('=', "%3D");
        let encoded = presented(
            &headers(&[("authorization", &format!("Bearer {encoded}"))]),
            "s",
        );
        assert_eq!(encoded.session_token.as_deref(), Some("abc"));

        let forged = presented(&headers(&[("authorization", "Bearer abc.Zm9yZ2Vk")]), "s");
        assert_eq!(forged.session_token, None);
        assert_eq!(forged.bearer.as_deref(), Some("abc.Zm9yZ2Vk"));
    }

    #[test]
    fn cookies_must_be_signed() {
        let token = signed("s", "abc");
        let cookie = presented(
            &headers(&[("cookie", &format!("better-auth.session_token={token}"))]),
            "s",
        );
        assert_eq!(cookie.session_token.as_deref(), Some("abc"));
        assert_eq!(cookie.transport, Some(Transport::Cookie));
        assert!(cookie.has_cookie_header);
        let unsigned = presented(
            &headers(&[("cookie", "better-auth.session_token=abc")]),
            "s",
        );
        assert_eq!(unsigned.session_token, None);
    }
}
