//! The home side's operations for one user: preview another server's invite, connect to it
//! (the accept handshake, run here, and the sealed roaming token kept), list and drop
//! connections, and the roaming token to present, rotated first when it is due.

use chrono::Utc;
use entities::federation_connections::Model as Connection;
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use super::Federation;
use super::peer::{HomeProfile, PeerAccepted, PeerAnswer, PeerRotated};
use crate::domain::federation::{
    bare_origin, is_invite_token, needs_rotation, origin_label, peer_too_old,
};
use crate::domain::ids::{ConnectionId, UserId};
use crate::error::AppError;
use crate::providers::outbound::OutboundError;
use crate::store::Database;
use crate::store::federation_connections::{self as connections, NewConnection};

/// `{id, label, remoteUserID, server}`: a connection as clients list it (no credential).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionView {
    /// The connection's id (the gateway's `:connectionId`).
    pub id: Uuid,
    /// The server's `host[:port]`.
    pub label: String,
    /// The shadow user there.
    #[serde(rename = "remoteUserID")]
    pub remote_user_id: String,
    /// The server's origin.
    pub server: String,
}

impl From<&Connection> for ConnectionView {
    fn from(connection: &Connection) -> Self {
        Self {
            id: connection.id.uuid(),
            label: origin_label(&connection.server),
            remote_user_id: connection.remote_user_id.clone(),
            server: connection.server.clone(),
        }
    }
}

/// `{server, calendar}`: the answer to a connect (never a token).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Connected {
    /// The server's origin.
    pub server: String,
    /// The calendar joined there, as it sent it.
    #[schema(value_type = Object)]
    pub calendar: Value,
    /// The connection (not serialized; the caller restarts the user's upstream streams).
    #[serde(skip)]
    pub connection: ConnectionId,
}

/// The `server` of a request as a canonical origin this server may reach, or a 400 that
/// says why not.
pub async fn peer_origin(
    federation: &Federation,
    server: Option<&str>,
) -> Result<String, AppError> {
    let origin = server.and_then(bare_origin).ok_or_else(|| {
        AppError::bad_request(
            "server must be a server address like https://calendar.example.com (http or https, no path).",
        )
    })?;
    if origin == federation.own_origin {
        return Err(AppError::bad_request(
            "That invite belongs to this server — join it directly.",
        ));
    }
    let url = Federation::peer_url(&origin, "/")
        .map_err(|_| AppError::bad_request("server is not a usable address."))?;
    match federation.guard.check(&url).await {
        Ok(()) => Ok(origin),
        Err(OutboundError::Refused(reason)) => Err(AppError::bad_request(format!(
            "Refusing to reach that server: {reason}."
        ))),
        Err(_) => Err(unreachable_server()),
    }
}

/// The invite token of a request, checked for shape.
pub fn invite_token(token: Option<&str>) -> Result<String, AppError> {
    token
        .map(str::trim)
        .filter(|token| is_invite_token(token))
        .map(str::to_owned)
        .ok_or_else(|| {
            AppError::bad_request("token must be a valid invite token (the end of an invite link).")
        })
}

fn unreachable_server() -> AppError {
    AppError::bad_request("That server could not be reached.")
}

/// The other server's public preview of `token`, relayed (status and JSON body).
pub async fn preview(
    federation: &Federation,
    server: Option<&str>,
    token: Option<&str>,
) -> Result<PeerAnswer, AppError> {
    let server = peer_origin(federation, server).await?;
    let token = invite_token(token)?;
    federation
        .preview(&server, &token)
        .await
        .map_err(|_| unreachable_server())
}

/// Connects `user_id` (announced with `profile`) to the calendar of `token` on `server`:
/// checks the peer's version, runs the accept there (proving the existing shadow with the
/// held token when there is a connection already, else creating one), and stores the
/// connection with the new token sealed.
pub async fn connect(
    federation: &Federation,
    db: &Database,
    user_id: &UserId,
    profile: &HomeProfile,
    server: Option<&str>,
    token: Option<&str>,
) -> Result<Connected, AppError> {
    let server = peer_origin(federation, server).await?;
    let token = invite_token(token)?;
    let secrets = federation.secrets()?;
    if let Some(version) = federation
        .version(&server)
        .await
        .map_err(|_| unreachable_server())?
        && peer_too_old(&version)
    {
        return Err(AppError::bad_request(format!(
            "That server runs version {version}. Connecting needs {} or newer — its owner has to update it first.",
            crate::domain::federation::MIN_PEER_VERSION
        )));
    }
    let held = match connections::find_by_server(db, user_id, &server).await? {
        Some(existing) => secrets.open(&existing.token).ok(),
        None => None,
    };
    let mut answer = federation
        .accept(&server, &token, profile, held.as_deref())
        .await
        .map_err(|_| unreachable_server())?;
    if held.is_some() && answer.status == http::StatusCode::UNAUTHORIZED {
        // The held token no longer proves the shadow (revoked when it lost its last
        // calendar there): join as a new member instead.
        answer = federation
            .accept(&server, &token, profile, None)
            .await
            .map_err(|_| unreachable_server())?;
    }
    if !answer.status.is_success() {
        return Err(AppError::bad_request(
            answer
                .message()
                .unwrap_or_else(|| "That server rejected the invite.".to_owned()),
        ));
    }
    let accepted: PeerAccepted = serde_json::from_slice(&answer.body).map_err(|_| {
        AppError::bad_request("That server answered the invite in a form this server cannot read.")
    })?;
    let now = Utc::now();
    let connection = connections::save(
        db,
        NewConnection {
            user_id: user_id.to_owned(),
            server: server.clone(),
            remote_user_id: accepted.user_id,
            sealed_token: secrets.seal(&accepted.member_token),
            token_expires_at: accepted.member_token_expires_at,
        },
        now,
    )
    .await?;
    Ok(Connected {
        server,
        calendar: accepted.calendar,
        connection: connection.id,
    })
}

/// The user's connections.
pub async fn list(db: &Database, user_id: &UserId) -> Result<Vec<ConnectionView>, AppError> {
    Ok(connections::of_user(db, user_id)
        .await?
        .iter()
        .map(ConnectionView::from)
        .collect())
}

/// Drops the user's connection to `server` (a canonical origin is required; dropping one
/// that does not exist changes nothing). Whether there was one.
pub async fn disconnect(
    db: &Database,
    user_id: &UserId,
    server: Option<&str>,
) -> Result<bool, AppError> {
    let server = server.and_then(bare_origin).ok_or_else(|| {
        AppError::bad_request("server must be a server address (http or https, no path).")
    })?;
    Ok(connections::remove(db, user_id, &server).await?.is_some())
}

/// The token to present for `connection`: its roaming token, exchanged first when within
/// the final 14 days of its life (a failed exchange keeps the old one, still valid). `None`
/// when the stored token cannot be opened (the key changed): the user has to connect again.
pub async fn token_for(
    federation: &Federation,
    db: &Database,
    connection: &Connection,
) -> Result<Option<String>, AppError> {
    let secrets = federation.secrets()?;
    let Ok(token) = secrets.open(&connection.token) else {
        return Ok(None);
    };
    let now = Utc::now();
    if !needs_rotation(&token, connection.token_expires_at, now) {
        return Ok(Some(token));
    }
    let rotated = match federation.rotate(&connection.server, &token).await {
        Ok(answer) if answer.status.is_success() => {
            serde_json::from_slice::<PeerRotated>(&answer.body).ok()
        }
        _ => None,
    };
    let Some(rotated) = rotated else {
        // Unreachable, or another request of this user rotated the same token first: use
        // what that one stored, else the old token (still valid until it expires).
        return Ok(current_token(db, secrets, connection)
            .await?
            .or(Some(token)));
    };
    let stored = connections::replace_token(
        db,
        connection.id,
        &connection.token,
        secrets.seal(&rotated.member_token),
        rotated.member_token_expires_at,
        now,
    )
    .await?;
    if stored {
        return Ok(Some(rotated.member_token));
    }
    // Another request rotated the same token at the same time; use what it stored.
    current_token(db, secrets, connection).await
}

/// The token stored for `connection` now, if it changed since `connection` was read.
async fn current_token(
    db: &Database,
    secrets: &crate::secret_box::SecretBox,
    connection: &Connection,
) -> Result<Option<String>, AppError> {
    let current = connections::find(db, &connection.user_id, connection.id).await?;
    Ok(current
        .filter(|current| current.token != connection.token)
        .and_then(|current| secrets.open(&current.token).ok()))
}
