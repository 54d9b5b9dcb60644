//! Passwords: `POST /change-password`, `POST /request-password-reset` (and the older
//! `/forget-password`), `GET /reset-password/:token`, `POST /reset-password`.
//!
//! Reset mails link to `{base_url}/reset-password?token=…` (the self-hosted page), or,
//! when the client passed `redirectTo`, through better-auth's callback to that target.

use chrono::Duration;

use super::wire::{self, DONE, StatusMessage, TokenAndUser};
use super::{AuthRequest, bodies, with_query};
use crate::auth::error::AuthError;
use crate::auth::password::{MAX_PASSWORD_LENGTH, check_length};
use crate::auth::session::{AuthReply, issue};
use crate::auth::tokens::random_alphanumeric;
use crate::domain::digest::sha256_hex;
use crate::domain::ids::UserId;
use crate::error::AppError;
use crate::http::openapi::schemas::AuthErrorBody;
use crate::mail::templates;
use crate::store::accounts::{self, PasswordReset};
use crate::store::{sessions as session_store, users, verifications};

/// How long a reset link works.
pub const RESET_TOKEN_TTL: Duration = Duration::hours(1);

fn identifier(token: &str) -> String {
    format!("reset-password:{}", sha256_hex(token))
}

/// Changes the caller's password after checking the current one; with
/// `revokeOtherSessions`, every session ends and a new one is handed back.
#[utoipa::path(
    post,
    path = "/api/auth/change-password",
    tag = "auth",
    security(("bearer" = []), ("cookie" = [])),
    request_body = bodies::ChangePassword,
    responses(
        (status = 200, description = "The password changed. `token` is `null`, or with `revokeOtherSessions` the new session's token (every other session ended; the cookie is set). 400 `INVALID_PASSWORD` for a wrong current password, `CREDENTIAL_ACCOUNT_NOT_FOUND` without a password account.",
         body = TokenAndUser),
    )
)]
pub async fn change_password(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.session().await?;
    let new_password = req.required_str("newPassword")?;
    let current_password = req.required_str("currentPassword")?;
    let revoke = req.bool_field("revokeOtherSessions")?.unwrap_or(false);
    check_length(new_password)?;
    if current_password.chars().count() > MAX_PASSWORD_LENGTH {
        return Err(AuthError::password_too_long().into());
    }
    let ctx = &req.ctx;
    let stored = accounts::find_credential(&ctx.db, &current.user.id)
        .await?
        .and_then(|account| account.password_hash)
        .ok_or_else(AuthError::credential_account_not_found)?;
    if !ctx
        .auth
        .hasher
        .verify(current_password.to_owned(), stored)
        .await?
    {
        return Err(AuthError::invalid_password().into());
    }
    let hash = ctx.auth.hasher.hash(new_password.to_owned()).await?;
    accounts::set_password(&ctx.db, &current.user.id, &hash, req.now).await?;
    tracing::info!("auth.password_changed");
    if !revoke {
        return wire::reply(&TokenAndUser {
            token: None,
            user: wire::user(&current.user),
        });
    }
    session_store::end_all_for_user(&ctx.db, &current.user.id, None).await?;
    let remember = current.session.remember;
    let issued = issue(&ctx.db, &current.user.id, remember, &req.client(), req.now).await?;
    let body = TokenAndUser {
        token: Some(issued.token.clone()),
        user: wire::user(&current.user),
    };
    Ok(wire::reply(&body)?.with_session(&ctx.auth, &issued.token, remember))
}

/// Mails a reset link to a known address; answers the same for unknown ones.
#[utoipa::path(
    post,
    path = "/api/auth/request-password-reset",
    tag = "auth",
    request_body = bodies::RequestPasswordReset,
    responses(
        (status = 200, description = "A reset link was mailed if the address belongs to a user; the answer is the same either way.", body = StatusMessage),
        (status = 403, description = "The request's origin, or its `redirectTo`, is not trusted.", body = AuthErrorBody),
    )
)]
pub async fn request_reset(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let email = req.required_email("email")?;
    let redirect_to = req.str_field("redirectTo")?.filter(|r| !r.is_empty());
    let ctx = &req.ctx;
    if let Some(user) = users::find_by_email(&ctx.db, &email).await? {
        let token = random_alphanumeric(24);
        verifications::create(
            &ctx.db,
            &identifier(&token),
            user.id.as_str(),
            req.now + RESET_TOKEN_TTL,
            req.now,
        )
        .await?;
        let link = match redirect_to {
            Some(target) => with_query(
                &format!("{}/api/auth/reset-password/{token}", ctx.base_url),
                "callbackURL",
                target,
            ),
            None => format!("{}/reset-password?token={token}", ctx.base_url),
        };
        let server = templates::server_name(&ctx.base_url);
        ctx.actors
            .send_mail(templates::password_reset(&server, &user.email, &link));
    }
    wire::reply(&StatusMessage {
        status: true,
        message: "If this email exists in our system, check your email for the reset link",
    })
}

/// better-auth's older name of [`request_reset`].
#[utoipa::path(
    post,
    path = "/api/auth/forget-password",
    tag = "auth",
    request_body = bodies::RequestPasswordReset,
    responses(
        (status = 200, description = "As `POST /api/auth/request-password-reset`.", body = StatusMessage),
        (status = 403, description = "The request's origin, or its `redirectTo`, is not trusted.", body = AuthErrorBody),
    )
)]
pub async fn forget_password(req: &AuthRequest) -> Result<AuthReply, AppError> {
    request_reset(req).await
}

/// The mailed link of a client-supplied `redirectTo`: checks the token and sends the browser
/// on with `?token=` or `?error=INVALID_TOKEN` (the token is not used up here).
#[utoipa::path(
    get,
    path = "/api/auth/reset-password/{token}",
    tag = "auth",
    params(
        ("token" = String, Path, description = "The mailed reset token."),
        ("callbackURL" = String, Query, description = "Where the browser goes next (a trusted origin)."),
    ),
    responses(
        (status = 302, description = "To `callbackURL` with `?token=<token>`, or `?error=INVALID_TOKEN` when the token is unknown or expired.",
         headers(("Location" = String, description = "The `callbackURL` with `token` or `error`."))),
        (status = 403, description = "The `callbackURL` is not a trusted origin (`INVALID_CALLBACK_URL`).", body = AuthErrorBody),
    )
)]
pub async fn reset_callback(req: &AuthRequest, token: &str) -> Result<AuthReply, AppError> {
    let callback = req
        .query("callbackURL")
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            AuthError::validation_in(
                "query",
                "callbackURL",
                "Invalid input: expected string, received undefined",
            )
        })?;
    let valid = verifications::peek(&req.ctx.db, &identifier(token), req.now)
        .await?
        .is_some();
    Ok(if valid {
        AuthReply::redirect(&with_query(callback, "token", token))
    } else {
        AuthReply::redirect(&with_query(callback, "error", "INVALID_TOKEN"))
    })
}

/// Sets a new password with a reset token (single use) and ends the user's sessions.
#[utoipa::path(
    post,
    path = "/api/auth/reset-password",
    tag = "auth",
    params(("token" = Option<String>, Query, description = "The reset token, when the body has none.")),
    request_body = bodies::ResetPassword,
    responses(
        (status = 200, description = "The password is set and every session of the user ended. 400 `INVALID_TOKEN` for an unknown, used or expired token.", body = wire::Status),
        (status = 403, description = "The request's origin is not trusted.", body = AuthErrorBody),
    )
)]
pub async fn reset_password(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let new_password = req.required_str("newPassword")?;
    let token = match req.str_field("token")? {
        Some(token) => token.to_owned(),
        None => req
            .query("token")
            .map(str::to_owned)
            .ok_or_else(AuthError::invalid_token)?,
    };
    check_length(new_password)?;
    let ctx = &req.ctx;
    let identifier = identifier(&token);
    let Some(user_id) = verifications::peek(&ctx.db, &identifier, req.now).await? else {
        return Err(AuthError::invalid_token().into());
    };
    let user_id = UserId::new(user_id);
    let hash = ctx.auth.hasher.hash(new_password.to_owned()).await?;
    match accounts::reset_password(&ctx.db, &identifier, &user_id, &hash, req.now).await? {
        PasswordReset::Done => {}
        PasswordReset::TokenSpent => return Err(AuthError::invalid_token().into()),
        PasswordReset::UserGone => return Err(AuthError::user_not_found().into()),
    }
    tracing::info!("auth.password_reset");
    wire::reply(&DONE)
}
