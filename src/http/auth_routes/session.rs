//! Sessions: `GET /get-session`, `POST /sign-out`, `GET /list-sessions`,
//! `POST /revoke-session`, `POST /revoke-sessions`, `POST /revoke-other-sessions`.

use serde_json::Value;

use super::AuthRequest;
use super::bodies;
use super::wire::{self, DONE, REVOKE_HANDLE_PREFIX, SessionAndUser, Status, Success};
use crate::auth::cookies::{self, DONT_REMEMBER};
use crate::auth::principal::{Identity, Resolution};
use crate::auth::session::{AuthReply, SESSION_TTL, needs_refresh};
use crate::domain::digest::sha256_hex;
use crate::error::AppError;
use crate::store::sessions as session_store;

/// The caller's session and user, `null` without one. Slides a remembered session's expiry
/// once a day (re-setting the cookie, so bearer clients get `set-auth-token`).
#[utoipa::path(
    get,
    path = "/api/auth/get-session",
    tag = "auth",
    security(("bearer" = []), ("cookie" = []), ()),
    params(("disableRefresh" = Option<bool>, Query, description = "`true`: do not extend the session's expiry.")),
    responses(
        (status = 200, description = "The caller's session and user, or `null` without a session (a stale cookie is cleared). Never cached.",
         body = Option<SessionAndUser>, headers(
            ("set-auth-token" = Option<String>, description = "The session token again, when its expiry was extended."),
            ("Cache-Control" = String, description = "`no-store`."),
         )),
    )
)]
pub async fn get_session(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let ctx = &req.ctx;
    match req.resolve().await? {
        Resolution::Authenticated(Identity::Session(current)) => {
            req.rctx.set_user(&current.user.id);
            let mut session = current.session.clone();
            let refresh = req.query("disableRefresh") != Some("true")
                && cookies::read(&req.headers, DONT_REMEMBER).is_none()
                && needs_refresh(&session, req.now);
            if refresh {
                session.expires_at = req.now + SESSION_TTL;
                session.updated_at = req.now;
                session_store::extend(
                    &ctx.db,
                    &current.user.id,
                    &session.id,
                    session.expires_at,
                    req.now,
                )
                .await?;
            }
            let body = SessionAndUser {
                session: wire::session(&session, &current.token),
                user: wire::user(&current.user),
            };
            let mut reply = wire::reply(&body)?.no_store();
            if refresh {
                reply = reply.with_session(&ctx.auth, &current.token, true);
            }
            Ok(reply)
        }
        Resolution::Authenticated(Identity::Member { .. }) => {
            Ok(AuthReply::json(Value::Null).no_store())
        }
        Resolution::Anonymous { stale } => {
            let reply = AuthReply::json(Value::Null).no_store();
            Ok(if stale {
                reply.clearing_cookies(&ctx.auth)
            } else {
                reply
            })
        }
    }
}

/// Ends the caller's session (if any) and clears the cookies; always succeeds.
#[utoipa::path(
    post,
    path = "/api/auth/sign-out",
    tag = "auth",
    security(("bearer" = []), ("cookie" = []), ()),
    responses(
        (status = 200, description = "The caller's session (if any) ended; the session cookies are cleared.", body = Success),
    )
)]
pub async fn sign_out(req: &AuthRequest) -> Result<AuthReply, AppError> {
    if let Resolution::Authenticated(Identity::Session(current)) = req.resolve().await? {
        req.rctx.set_user(&current.user.id);
        session_store::delete(&req.ctx.db, &current.user.id, &current.session.id).await?;
    }
    Ok(wire::reply(&Success { success: true })?.clearing_cookies(&req.ctx.auth))
}

/// The caller's live sessions. Only token hashes are stored, so other sessions carry a
/// revocation handle in `token` instead of their token; `/revoke-session` takes either.
#[utoipa::path(
    get,
    path = "/api/auth/list-sessions",
    tag = "auth",
    security(("bearer" = []), ("cookie" = [])),
    responses(
        (status = 200, description = "The caller's live sessions; others than the caller's own carry a `revoke_<id>` handle as `token`. 403 `SESSION_NOT_FRESH` when the caller's session is a day old or more.",
         body = Vec<wire::Session>),
    )
)]
pub async fn list_sessions(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.fresh_session().await?;
    let sessions = session_store::list_active(&req.ctx.db, &current.user.id, req.now).await?;
    let listed: Vec<wire::Session> = sessions
        .iter()
        .map(|session| {
            if session.id == current.session.id {
                wire::session(session, &current.token)
            } else {
                wire::session(session, &wire::revoke_handle(session))
            }
        })
        .collect();
    wire::reply(&listed)
}

/// Ends one of the caller's sessions, named by its token or revocation handle.
#[utoipa::path(
    post,
    path = "/api/auth/revoke-session",
    tag = "auth",
    security(("bearer" = []), ("cookie" = [])),
    request_body = bodies::RevokeSession,
    responses(
        (status = 200, description = "The session ended (an unknown one too); the cookies are cleared when it was the caller's.", body = Status),
    )
)]
pub async fn revoke_session(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.session().await?;
    let token = req.required_str("token")?;
    let db = &req.ctx.db;
    let own = match token.strip_prefix(REVOKE_HANDLE_PREFIX) {
        Some(id) => {
            session_store::delete_for_user(db, &current.user.id, id).await?;
            id == current.session.id
        }
        None => {
            let hash = sha256_hex(token);
            session_store::delete_by_token_hash_for_user(db, &current.user.id, &hash).await?;
            hash == current.session.token_hash
        }
    };
    let reply = wire::reply(&DONE)?;
    Ok(if own {
        reply.clearing_cookies(&req.ctx.auth)
    } else {
        reply
    })
}

/// Ends all of the caller's sessions.
#[utoipa::path(
    post,
    path = "/api/auth/revoke-sessions",
    tag = "auth",
    security(("bearer" = []), ("cookie" = [])),
    responses(
        (status = 200, description = "Every session of the caller ended; the cookies are cleared.", body = Status),
    )
)]
pub async fn revoke_sessions(req: &AuthRequest) -> Result<AuthReply, AppError> {
    end_sessions(req, false).await
}

/// Ends all of the caller's sessions but the current one.
#[utoipa::path(
    post,
    path = "/api/auth/revoke-other-sessions",
    tag = "auth",
    security(("bearer" = []), ("cookie" = [])),
    responses(
        (status = 200, description = "Every other session of the caller ended.", body = Status),
    )
)]
pub async fn revoke_other_sessions(req: &AuthRequest) -> Result<AuthReply, AppError> {
    end_sessions(req, true).await
}

/// Ends all of the caller's sessions, or all but the current one.
async fn end_sessions(req: &AuthRequest, keep_current: bool) -> Result<AuthReply, AppError> {
    let current = req.session().await?;
    let keep = keep_current.then_some(current.session.id.as_str());
    session_store::end_all_for_user(&req.ctx.db, &current.user.id, keep).await?;
    let reply = wire::reply(&DONE)?;
    Ok(if keep_current {
        reply
    } else {
        reply.clearing_cookies(&req.ctx.auth)
    })
}
