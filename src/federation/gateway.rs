//! The gateway: a request of a signed-in user to `…/federation/s/:connectionId/api/v1/*`
//! goes to the server of that connection (the origin comes from storage), with the member
//! token attached and nothing of the caller's own credentials; the answer's status, body and
//! `Content-Type` come back unchanged, if it is of a type the API itself answers with
//! ([`RELAYED_TYPES`]). Anything else (an HTML page, a script) would be served from this
//! origin under the user's cookie: it becomes a 502 instead.

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderValue, Method};
use uuid::Uuid;

use super::Federation;
use super::home::token_for;
use super::peer::{MAX_ANSWER_BYTES, PeerAnswer, bearer_header};
use crate::domain::federation::forwarded_path;
use crate::domain::ids::{ConnectionId, UserId};
use crate::error::AppError;
use crate::providers::outbound::OutboundRequest;
use crate::store::Database;
use crate::store::federation_connections as connections;

/// One request for the gateway, as the route parsed it.
#[derive(Debug)]
pub struct GatewayRequest {
    /// The caller.
    pub user_id: UserId,
    /// `:connectionId` (see [`connection_id`]).
    pub connection: ConnectionId,
    /// The rest of the path after the connection id, still percent-encoded.
    pub rest: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// The method.
    pub method: Method,
    /// The caller's `Accept`, if any.
    pub accept: Option<HeaderValue>,
    /// The body (checked to be JSON when not empty).
    pub body: Bytes,
}

fn connection_not_found() -> AppError {
    AppError::not_found("Federated connection not found.")
}

/// `:connectionId` as written in the path; one that is no UUID names no connection (404).
pub fn connection_id(text: &str) -> Result<ConnectionId, AppError> {
    Uuid::parse_str(text)
        .map(ConnectionId::from_uuid)
        .map_err(|_| connection_not_found())
}

/// The content types relayed: JSON, `text/plain` (the `OK` answers), `text/calendar`
/// (exports) and the avatar images.
pub const RELAYED_TYPES: [&str; 6] = [
    "application/json",
    "text/plain",
    "text/calendar",
    "image/jpeg",
    "image/png",
    "image/webp",
];

/// Whether an answer may be relayed: one of [`RELAYED_TYPES`] (parameters such as
/// `charset` aside), or no body at all.
pub fn is_relayable(answer: &PeerAnswer) -> bool {
    match &answer.content_type {
        Some(value) => value.to_str().is_ok_and(|value| {
            let essence = value.split(';').next().unwrap_or_default().trim();
            RELAYED_TYPES
                .iter()
                .any(|relayed| relayed.eq_ignore_ascii_case(essence))
        }),
        None => answer.body.is_empty(),
    }
}

/// 502 `FederatedServerUnreachable` for `server`.
pub fn unreachable(server: &str) -> AppError {
    AppError::BadGateway {
        error: "FederatedServerUnreachable".into(),
        message: "The connected server could not be reached.".into(),
        server: Some(server.to_owned()),
    }
}

/// Forwards `request`; see the module documentation.
pub async fn forward(
    federation: &Federation,
    db: &Database,
    request: GatewayRequest,
) -> Result<PeerAnswer, AppError> {
    let connection = connections::find(db, &request.user_id, request.connection)
        .await?
        .ok_or_else(connection_not_found)?;
    let path = forwarded_path(&request.rest).ok_or_else(|| {
        AppError::bad_request("Only /api/v1/ paths of the connected server can be reached.")
    })?;
    let query = match request.query.as_deref() {
        Some(query)
            if query
                .bytes()
                .any(|b| b.is_ascii_control() || b == b' ' || b == b'#') =>
        {
            return Err(AppError::bad_request("The query string is not usable."));
        }
        Some(query) if !query.is_empty() => format!("?{query}"),
        _ => String::new(),
    };
    let carries_body = !matches!(request.method, Method::GET | Method::HEAD);
    if carries_body
        && !request.body.is_empty()
        && serde_json::from_slice::<serde::de::IgnoredAny>(&request.body).is_err()
    {
        return Err(AppError::bad_request("The body must be JSON."));
    }
    let url =
        Federation::peer_url(&connection.server, &format!("{path}{query}")).map_err(|_| {
            AppError::bad_request("Only /api/v1/ paths of the connected server can be reached.")
        })?;
    let Some(token) = token_for(federation, db, &connection).await? else {
        return Err(AppError::Unauthorized(
            "The connection's credential can no longer be read; connect to the server again."
                .into(),
        ));
    };
    let mut outgoing = OutboundRequest::new(request.method.clone(), url)
        .without_redirects()
        .timeout(federation.request_timeout)
        .max_body_bytes(MAX_ANSWER_BYTES)
        .header(
            ACCEPT,
            request
                .accept
                .unwrap_or_else(|| HeaderValue::from_static("application/json")),
        )
        .header(
            AUTHORIZATION,
            bearer_header(&token).map_err(|_| unreachable(&connection.server))?,
        );
    if carries_body {
        outgoing = outgoing.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if !request.body.is_empty() {
            outgoing = outgoing.body(request.body);
        }
    }
    match federation.send(outgoing).await {
        Ok(answer) if is_relayable(&answer) => Ok(answer),
        Ok(_) => {
            tracing::info!(server = %connection.server, "federation.gateway_type_refused");
            Err(AppError::BadGateway {
                error: "FederatedAnswerRefused".into(),
                message:
                    "The connected server answered with a content type this server does not relay."
                        .into(),
                server: Some(connection.server.clone()),
            })
        }
        Err(err) => {
            tracing::info!(server = %connection.server, error = %err, "federation.gateway_unreachable");
            Err(unreachable(&connection.server))
        }
    }
}
