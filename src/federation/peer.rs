//! Requests to a peer server, each through the outbound guard with the federation timeout,
//! never following redirects: its public invite preview and version, the accept handshake,
//! token rotation, and the stream.

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderValue, Method, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use url::Url;

use super::Federation;
use crate::providers::outbound::{
    OutboundError, OutboundRequest, OutboundResponse, OutboundStream,
};

/// The most a peer's answer may hold (an events read of a big calendar included).
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// How a peer answered, relayed as it came.
#[derive(Debug)]
pub struct PeerAnswer {
    /// Its status.
    pub status: StatusCode,
    /// Its `Content-Type`, if any.
    pub content_type: Option<HeaderValue>,
    /// Its body.
    pub body: Bytes,
}

impl PeerAnswer {
    /// The message a peer's error body carries (`message`, else `error`).
    pub fn message(&self) -> Option<String> {
        let body: Value = serde_json::from_slice(&self.body).ok()?;
        body.get("message")
            .or_else(|| body.get("error"))
            .and_then(Value::as_str)
            .map(|message| message.chars().take(300).collect())
    }
}

impl From<OutboundResponse> for PeerAnswer {
    fn from(response: OutboundResponse) -> Self {
        Self {
            status: response.status,
            content_type: response.headers.get(CONTENT_TYPE).cloned(),
            body: response.body,
        }
    }
}

/// What a peer's accept returned.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerAccepted {
    /// The member token.
    pub member_token: String,
    /// When it expires.
    pub member_token_expires_at: DateTime<Utc>,
    /// The shadow user there.
    #[serde(rename = "userID")]
    pub user_id: String,
    /// The calendar joined (relayed as the peer sent it).
    #[serde(default)]
    pub calendar: Value,
}

/// What a peer's rotation returned.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerRotated {
    /// The new member token.
    pub member_token: String,
    /// When it expires.
    pub member_token_expires_at: DateTime<Utc>,
}

/// The profile this server announces for its user in an accept.
#[derive(Debug, Clone)]
pub struct HomeProfile {
    /// Display name.
    pub name: String,
    /// Email.
    pub email: String,
    /// Avatar URL.
    pub image: Option<String>,
}

/// Why a peer request failed before an answer.
pub type PeerError = OutboundError;

impl Federation {
    /// `origin` + `path_and_query` as a URL.
    pub fn peer_url(origin: &str, path_and_query: &str) -> Result<Url, PeerError> {
        Url::parse(&format!("{origin}{path_and_query}"))
            .map_err(|_| OutboundError::Invalid("unusable peer URL".into()))
    }

    fn request(&self, method: Method, url: Url) -> OutboundRequest {
        OutboundRequest::new(method, url)
            .without_redirects()
            .timeout(self.request_timeout)
            .max_body_bytes(MAX_ANSWER_BYTES)
            .header(ACCEPT, HeaderValue::from_static("application/json"))
    }

    /// Sends `request` through the guard.
    pub async fn send(&self, request: OutboundRequest) -> Result<PeerAnswer, PeerError> {
        self.guard.send(request).await.map(PeerAnswer::from)
    }

    /// `GET <server>/api/v1/calendars/tokens/<token>`: the invite's public preview.
    pub async fn preview(&self, server: &str, token: &str) -> Result<PeerAnswer, PeerError> {
        let url = Self::peer_url(server, &format!("/api/v1/calendars/tokens/{token}"))?;
        self.send(self.request(Method::GET, url)).await
    }

    /// The version `GET <server>/api/v1/server` announces (`None` when unreadable).
    pub async fn version(&self, server: &str) -> Result<Option<String>, PeerError> {
        let url = Self::peer_url(server, "/api/v1/server")?;
        let answer = self.send(self.request(Method::GET, url)).await?;
        if !answer.status.is_success() {
            return Ok(None);
        }
        Ok(serde_json::from_slice::<Value>(&answer.body)
            .ok()
            .and_then(|body| body.get("version")?.as_str().map(str::to_owned)))
    }

    /// `POST <server>/api/v1/federation/accept` for `invite` with this server's profile of
    /// the user, proving an existing shadow with `bearer` when one is held.
    pub async fn accept(
        &self,
        server: &str,
        invite: &str,
        profile: &HomeProfile,
        bearer: Option<&str>,
    ) -> Result<PeerAnswer, PeerError> {
        let url = Self::peer_url(server, "/api/v1/federation/accept")?;
        let body = json!({
            "token": invite,
            "profile": {
                "name": profile.name,
                "email": profile.email,
                "homeServer": self.own_origin,
                "image": profile.image,
            },
        });
        let mut request = self
            .request(Method::POST, url)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body.to_string());
        if let Some(bearer) = bearer {
            request = request.header(AUTHORIZATION, bearer_header(bearer)?);
        }
        self.send(request).await
    }

    /// `POST <server>/api/v1/federation/token/rotate` with `token`.
    pub async fn rotate(&self, server: &str, token: &str) -> Result<PeerAnswer, PeerError> {
        let url = Self::peer_url(server, "/api/v1/federation/token/rotate")?;
        let request = self
            .request(Method::POST, url)
            .header(AUTHORIZATION, bearer_header(token)?);
        self.send(request).await
    }

    /// Opens `GET <server>/api/stream` with `token`.
    pub async fn open_stream(
        &self,
        server: &str,
        token: &str,
    ) -> Result<OutboundStream, PeerError> {
        let url = Self::peer_url(server, "/api/stream")?;
        let request = OutboundRequest::new(Method::GET, url)
            .timeout(self.request_timeout)
            .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
            .header(AUTHORIZATION, bearer_header(token)?);
        self.guard.open(request).await
    }
}

/// `Bearer <token>` as a header value (sensitive: never logged).
pub fn bearer_header(token: &str) -> Result<HeaderValue, PeerError> {
    let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| OutboundError::Invalid("unusable member token".into()))?;
    value.set_sensitive(true);
    Ok(value)
}
