//! Issuing sessions, and the better-auth response helper that hands one to a client: the
//! signed session cookie plus, for bearer clients, `set-auth-token`.

use crate::store::{Connection, DbErr};
use chrono::{DateTime, Duration, Utc};
use entities::sessions;
use http::header::{HeaderValue, LOCATION, SET_COOKIE};
use http::{HeaderName, StatusCode};
use serde_json::Value;
use warp::reply::Response;

use super::Auth;
use super::tokens::{new_session_token, signed};
use crate::domain::digest::sha256_hex;
use crate::domain::ids::UserId;
use crate::store::sessions::{self as session_store, NewSession};

/// Lifetime of a remembered session.
pub const SESSION_TTL: Duration = Duration::days(7);
/// Lifetime of a "don't remember me" session.
pub const SHORT_SESSION_TTL: Duration = Duration::days(1);
/// A remembered session is extended when it was last extended this long ago.
pub const UPDATE_AGE: Duration = Duration::days(1);
/// A session is "fresh" (for sensitive listings) this long after sign-in.
pub const FRESH_AGE: Duration = Duration::days(1);

/// Where a request came from, recorded on its session.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    /// Client address, `""` when unknown.
    pub ip: String,
    /// `User-Agent`, `""` when absent.
    pub user_agent: String,
}

/// A session just created, with the token only the client will keep.
#[derive(Debug, Clone)]
pub struct IssuedSession {
    /// The raw token.
    pub token: String,
    /// The stored row.
    pub session: sessions::Model,
}

/// Creates a session for `user_id`.
pub async fn issue(
    db: &impl Connection,
    user_id: &UserId,
    remember: bool,
    client: &ClientInfo,
    now: DateTime<Utc>,
) -> Result<IssuedSession, DbErr> {
    let token = new_session_token();
    let ttl = if remember {
        SESSION_TTL
    } else {
        SHORT_SESSION_TTL
    };
    let session = session_store::create(
        db,
        NewSession {
            user_id: user_id.to_owned(),
            token_hash: sha256_hex(&token),
            expires_at: now + ttl,
            remember,
            ip_address: client.ip.clone(),
            user_agent: client.user_agent.clone(),
        },
        now,
    )
    .await?;
    Ok(IssuedSession { token, session })
}

/// Whether a remembered session is due for extension at `now`.
pub fn needs_refresh(session: &sessions::Model, now: DateTime<Utc>) -> bool {
    session.remember && session.expires_at - SESSION_TTL + UPDATE_AGE <= now
}

/// A better-auth response: JSON or redirect, with cookies and headers.
#[derive(Debug)]
pub struct AuthReply {
    status: StatusCode,
    body: Option<Value>,
    cookies: Vec<String>,
    auth_token: Option<String>,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl AuthReply {
    /// `200` with a JSON body.
    pub fn json(body: Value) -> Self {
        Self {
            status: StatusCode::OK,
            body: Some(body),
            cookies: Vec::new(),
            auth_token: None,
            headers: Vec::new(),
        }
    }

    /// `200` with an HTML page.
    pub fn html(page: String) -> Self {
        let mut reply = Self::json(Value::String(page));
        reply.headers.push((
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        ));
        reply
    }

    /// `302` to `location`.
    pub fn redirect(location: &str) -> Self {
        let mut reply = Self::json(Value::Null);
        reply.status = StatusCode::FOUND;
        reply.body = None;
        if let Ok(value) = HeaderValue::from_str(location) {
            reply.headers.push((LOCATION, value));
        }
        reply
    }

    /// Adds `Location` to a JSON answer (sign-in with a callback URL keeps status 200).
    pub fn with_location(mut self, location: &str) -> Self {
        if let Ok(value) = HeaderValue::from_str(location) {
            self.headers.push((LOCATION, value));
        }
        self
    }

    /// Hands the client the session `token` (cookie and `set-auth-token`).
    pub fn with_session(mut self, auth: &Auth, token: &str, remember: bool) -> Self {
        let value = signed(auth.secret(), token);
        self.cookies.push(auth.cookies.session(&value, remember));
        if !remember {
            self.cookies
                .push(auth.cookies.dont_remember(&signed(auth.secret(), "true")));
        }
        self.auth_token = Some(value);
        self
    }

    /// Sets a cookie (a `Set-Cookie` value).
    pub fn with_cookie(mut self, cookie: String) -> Self {
        self.cookies.push(cookie);
        self
    }

    /// Clears the session cookies.
    pub fn clearing_cookies(mut self, auth: &Auth) -> Self {
        self.cookies.extend(auth.cookies.clear_all());
        self
    }

    /// `Cache-Control: no-store` and `Pragma: no-cache` (session reads).
    pub fn no_store(mut self) -> Self {
        self.headers.push((
            http::header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ));
        self.headers
            .push((http::header::PRAGMA, HeaderValue::from_static("no-cache")));
        self
    }

    /// The HTTP response.
    pub fn into_response(self) -> Response {
        let is_html = self
            .headers
            .iter()
            .any(|(name, _)| name == http::header::CONTENT_TYPE);
        let mut response = match self.body {
            Some(Value::String(page)) if is_html => Response::new(page.into()),
            Some(body) => {
                let mut response = Response::new(body.to_string().into());
                response.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                response
            }
            None => Response::default(),
        };
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        for cookie in self.cookies {
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                headers.append(SET_COOKIE, value);
            }
        }
        if let Some(token) = self.auth_token
            && let Ok(value) = HeaderValue::from_str(&token)
        {
            headers.insert(HeaderName::from_static("set-auth-token"), value);
            headers.insert(
                http::header::ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static("set-auth-token"),
            );
        }
        for (name, value) in self.headers {
            headers.insert(name, value);
        }
        response
    }
}
