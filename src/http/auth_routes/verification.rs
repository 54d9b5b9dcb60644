//! Email verification: `POST /send-verification-email`, `GET /verify-email`, and
//! `POST /change-email` (the new address is verified before it replaces the old one).
//! Links land on `{base_url}/email-verified` unless the client names another target.

use super::wire::{self, DONE, Verified};
use super::{AuthRequest, bodies, with_query};
use crate::auth::error::AuthError;
use crate::auth::jwt::{self, EMAIL_VERIFICATION_TTL_SECS, TokenProblem, VerificationClaims};
use crate::auth::principal::{Identity, Resolution};
use crate::auth::session::AuthReply;
use crate::context::Ctx;
use crate::domain::ids::UserId;
use crate::error::AppError;
use crate::http::openapi::schemas::AuthErrorBody;
use crate::mail::templates;
use crate::store::users;

/// Signs a verification token and mails the link to `to`.
fn send_link(
    ctx: &Ctx,
    to: &str,
    claims: &VerificationClaims,
    callback: Option<&str>,
) -> Result<(), AppError> {
    let token = jwt::issue(ctx.auth.secret(), claims).map_err(AppError::internal)?;
    let landing = callback
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{}/email-verified", ctx.base_url));
    let link = with_query(
        &with_query(
            &format!("{}/api/auth/verify-email", ctx.base_url),
            "token",
            &token,
        ),
        "callbackURL",
        &landing,
    );
    let server = templates::server_name(&ctx.base_url);
    ctx.actors
        .send_mail(templates::email_verification(&server, to, &link));
    Ok(())
}

fn claims_for(email: &str, user_id: &UserId, update_to: Option<&str>) -> VerificationClaims {
    let now = chrono::Utc::now().timestamp();
    VerificationClaims {
        email: email.to_owned(),
        user_id: Some(user_id.clone()),
        update_to: update_to.map(str::to_owned),
        request_type: update_to.map(|_| "change-email-verification".to_owned()),
        iat: now,
        exp: now + EMAIL_VERIFICATION_TTL_SECS,
    }
}

/// Sends a verification mail: to the signed-in user's own unverified address, or (anonymous)
/// to an address that belongs to an unverified user, answering alike either way.
#[utoipa::path(
    post,
    path = "/api/auth/send-verification-email",
    tag = "auth",
    security(("bearer" = []), ("cookie" = []), ()),
    request_body = bodies::SendVerificationEmail,
    responses(
        (status = 200, description = "A verification link was mailed if the address needs one (anonymous callers get the same answer either way). Signed in: 400 `EMAIL_MISMATCH` for another address, `EMAIL_ALREADY_VERIFIED`.",
         body = wire::Status),
    )
)]
pub async fn send_verification_email(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let email = req.required_email("email")?;
    let callback = req.str_field("callbackURL")?.filter(|c| !c.is_empty());
    let ctx = &req.ctx;
    match req.resolve().await? {
        Resolution::Authenticated(Identity::Session(current)) => {
            req.rctx.set_user(&current.user.id);
            if current.user.email != email {
                return Err(AuthError::email_mismatch().into());
            }
            if current.user.email_verified {
                return Err(AuthError::email_already_verified().into());
            }
            send_link(
                ctx,
                &email,
                &claims_for(&email, &current.user.id, None),
                callback,
            )?;
        }
        _ => {
            if let Some(user) = users::find_by_email(&ctx.db, &email).await?
                && !user.email_verified
            {
                send_link(ctx, &email, &claims_for(&email, &user.id, None), callback)?;
            }
        }
    }
    wire::reply(&DONE)
}

/// The mailed link: marks the address verified (or applies an email change), then sends the
/// browser to the callback, with `?error=<CODE>` when the token is bad.
#[utoipa::path(
    get,
    path = "/api/auth/verify-email",
    tag = "auth",
    params(
        ("token" = String, Query, description = "The mailed verification token."),
        ("callbackURL" = Option<String>, Query, description = "Where the browser goes next (a trusted origin)."),
    ),
    responses(
        (status = 200, description = "Without `callbackURL`: the address is verified (or the email change applied: `user` is the changed user).", body = Verified),
        (status = 302, description = "With `callbackURL`: to it, with `?error=<CODE>` when the token is bad.",
         headers(("Location" = String, description = "The `callbackURL`, perhaps with `error`."))),
        (status = 401, description = "Without `callbackURL`: the token is invalid (`INVALID_TOKEN`) or expired (`TOKEN_EXPIRED`), or its user is gone (`USER_NOT_FOUND`).", body = AuthErrorBody),
        (status = 403, description = "The `callbackURL` is not a trusted origin.", body = AuthErrorBody),
        (status = 422, description = "Without `callbackURL`: the new address of an email change is taken (`USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL`).", body = AuthErrorBody),
    )
)]
pub async fn verify_email(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let callback = req.query("callbackURL").filter(|c| !c.is_empty());
    let fail = |error: AuthError| -> Result<AuthReply, AppError> {
        match callback {
            Some(callback) => Ok(AuthReply::redirect(&with_query(
                callback,
                "error",
                error.code.unwrap_or("INVALID_TOKEN"),
            ))),
            None => Err(error.into()),
        }
    };
    let token = req.query("token").unwrap_or_default();
    let claims = match jwt::verify(req.ctx.auth.secret(), token) {
        Ok(claims) => claims,
        Err(TokenProblem::Expired) => return fail(AuthError::token_expired()),
        Err(TokenProblem::Invalid) => return fail(AuthError::invalid_id_token()),
    };
    let ctx = &req.ctx;
    let Some(user) = users::find_by_email(&ctx.db, &claims.email).await? else {
        let mut error = AuthError::user_not_found();
        error.status = http::StatusCode::UNAUTHORIZED;
        return fail(error);
    };
    let mut changed_user = None;
    match claims.update_to.as_deref() {
        Some(new_email) => {
            if !users::set_email(&ctx.db, &user.id, new_email, req.now).await? {
                return fail(AuthError::user_already_exists());
            }
            users::set_email_verified(&ctx.db, &user.id, req.now).await?;
            if let Some(updated) = users::find(&ctx.db, &user.id).await? {
                changed_user = Some(wire::user(&updated));
            }
            tracing::info!("auth.email_changed");
        }
        None if !user.email_verified => {
            users::set_email_verified(&ctx.db, &user.id, req.now).await?;
            tracing::info!("auth.email_verified");
        }
        None => {}
    }
    Ok(match callback {
        Some(callback) => AuthReply::redirect(callback),
        None => wire::reply(&Verified {
            status: true,
            user: changed_user,
        })?,
    })
}

/// Starts an email change: a verification link goes to the new address; the change applies
/// when it is opened. A taken address answers the same as a free one.
#[utoipa::path(
    post,
    path = "/api/auth/change-email",
    tag = "auth",
    security(("bearer" = []), ("cookie" = [])),
    request_body = bodies::ChangeEmail,
    responses(
        (status = 200, description = "A verification link went to the new address (a taken address answers the same). 400 when it is the current address.", body = wire::Status),
    )
)]
pub async fn change_email(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.session().await?;
    let new_email = req.required_email("newEmail")?;
    let callback = req.str_field("callbackURL")?.filter(|c| !c.is_empty());
    if new_email == current.user.email {
        return Err(
            AuthError::message_only(http::StatusCode::BAD_REQUEST, "Email is the same").into(),
        );
    }
    let ctx = &req.ctx;
    if users::find_by_email(&ctx.db, &new_email).await?.is_none() {
        let claims = claims_for(&current.user.email, &current.user.id, Some(&new_email));
        send_link(ctx, &new_email, &claims, callback)?;
    }
    wire::reply(&DONE)
}
