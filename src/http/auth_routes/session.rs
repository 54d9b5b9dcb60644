//! Sessions: `GET /get-session`, `POST /sign-out`, `GET /list-sessions`,
//! `POST /revoke-session`, `POST /revoke-sessions`, `POST /revoke-other-sessions`.

use serde_json::{Value, json};

use super::AuthRequest;
use super::wire::{self, REVOKE_HANDLE_PREFIX};
use crate::auth::cookies::{self, DONT_REMEMBER};
use crate::auth::principal::{Identity, Resolution};
use crate::auth::session::{AuthReply, SESSION_TTL, needs_refresh};
use crate::auth::tokens::sha256_hex;
use crate::error::AppError;
use crate::store::sessions as session_store;

/// The caller's session and user, `null` without one. Slides a remembered session's expiry
/// once a day (re-setting the cookie, so bearer clients get `set-auth-token`).
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
            let body = json!({
                "session": wire::session(&session, &current.token),
                "user": wire::user(&current.user),
            });
            let mut reply = AuthReply::json(body).no_store();
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
pub async fn sign_out(req: &AuthRequest) -> Result<AuthReply, AppError> {
    if let Resolution::Authenticated(Identity::Session(current)) = req.resolve().await? {
        req.rctx.set_user(&current.user.id);
        session_store::delete(&req.ctx.db, &current.user.id, &current.session.id).await?;
    }
    Ok(AuthReply::json(json!({ "success": true })).clearing_cookies(&req.ctx.auth))
}

/// The caller's live sessions. Only token hashes are stored, so other sessions carry a
/// revocation handle in `token` instead of their token; `/revoke-session` takes either.
pub async fn list_sessions(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.fresh_session().await?;
    let sessions = session_store::list_active(&req.ctx.db, &current.user.id, req.now).await?;
    let listed: Vec<Value> = sessions
        .iter()
        .map(|session| {
            if session.id == current.session.id {
                wire::session(session, &current.token)
            } else {
                wire::session(session, &wire::revoke_handle(session))
            }
        })
        .collect();
    Ok(AuthReply::json(Value::Array(listed)))
}

/// Ends one of the caller's sessions, named by its token or revocation handle.
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
    let reply = AuthReply::json(json!({ "status": true }));
    Ok(if own {
        reply.clearing_cookies(&req.ctx.auth)
    } else {
        reply
    })
}

/// Ends all of the caller's sessions, or all but the current one.
pub async fn revoke_sessions(req: &AuthRequest, keep_current: bool) -> Result<AuthReply, AppError> {
    let current = req.session().await?;
    let keep = keep_current.then_some(current.session.id.as_str());
    session_store::end_all_for_user(&req.ctx.db, &current.user.id, keep).await?;
    let reply = AuthReply::json(json!({ "status": true }));
    Ok(if keep_current {
        reply
    } else {
        reply.clearing_cookies(&req.ctx.auth)
    })
}
