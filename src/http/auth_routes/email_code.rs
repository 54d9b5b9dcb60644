//! `POST /email-otp/send-verification-otp` and `POST /sign-in/email-otp`: sign-in by emailed
//! code ([`crate::auth::email_code`]), as better-auth's `emailOTP` plugin answers them. The
//! code goes to any well-formed address alike (signing in creates the user), so the answer
//! says nothing about who has an account here.

use http::StatusCode;

use super::AuthRequest;
use super::bodies;
use super::wire::{self, Success, TokenAndUser};
use crate::auth::email_code::{self, Check};
use crate::auth::error::AuthError;
use crate::auth::session::{AuthReply, issue};
use crate::domain::profile;
use crate::error::AppError;
use crate::http::openapi::schemas::AuthErrorBody;
use crate::mail::templates;
use crate::rate_limit;
use crate::store::users::{self, CreateUserError, NewUser};

/// The kinds of code better-auth's plugin knows; Bowline sends sign-in codes.
const CODE_TYPES: &str = "Invalid option: expected one of \"email-verification\"|\"sign-in\"|\"forget-password\"|\"change-email\"";

/// Mails a sign-in code to the address.
#[utoipa::path(
    post,
    path = "/api/auth/email-otp/send-verification-otp",
    tag = "auth",
    request_body = bodies::SendVerificationOtp,
    responses(
        (status = 200, description = "A code was mailed to the address (whether or not it has an account here).", body = Success),
        (status = 400, description = "A malformed address (`INVALID_EMAIL`), an unknown `type` (`VALIDATION_ERROR`), or a type other than `sign-in` (`Invalid OTP type`).", body = AuthErrorBody),
        (status = 403, description = "The request's origin is not trusted.", body = AuthErrorBody),
        (status = 429, description = "Too many codes for this client or this address.", body = AuthErrorBody),
    )
)]
pub async fn send_code(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let email = req.sign_in_email()?;
    match req.required_str("type")? {
        "sign-in" => {}
        "email-verification" | "forget-password" | "change-email" => {
            return Err(
                AuthError::message_only(StatusCode::BAD_REQUEST, "Invalid OTP type").into(),
            );
        }
        _ => return Err(AuthError::validation("type", CODE_TYPES).into()),
    }
    let ctx = &req.ctx;
    if ctx.settings.auth.rate_limit {
        ctx.limits
            .check(
                rate_limit::SIGN_IN_CODES_PER_EMAIL,
                &email,
                std::time::Instant::now(),
            )
            .map_err(|retry_after_secs| AppError::AuthRateLimited { retry_after_secs })?;
    }
    let code = email_code::issue(&ctx.db, ctx.auth.secret(), &email, req.now).await?;
    let server = templates::server_name(&ctx.base_url);
    ctx.actors
        .send_mail(templates::sign_in_code(&server, &email, &code));
    tracing::info!("auth.sign_in_code_sent");
    wire::reply(&Success { success: true })
}

/// Signs in with a mailed code: the address's user, created (verified) when it is new; an
/// existing account whose address was never verified loses whatever it gathered before this
/// proof (password, linked providers, sessions).
#[utoipa::path(
    post,
    path = "/api/auth/sign-in/email-otp",
    tag = "auth",
    request_body = bodies::SignInEmailOtp,
    responses(
        (status = 200, description = "Signed in: the session token and the user; the session cookie is set.",
         body = TokenAndUser, headers(("set-auth-token" = String, description = "The signed session token, for bearer clients."))),
        (status = 400, description = "No such code or a wrong one (`INVALID_OTP`), an expired one (`OTP_EXPIRED`), a malformed address (`INVALID_EMAIL`).", body = AuthErrorBody),
        (status = 403, description = "The code's tries are spent (`TOO_MANY_ATTEMPTS`), or the request's origin is not trusted.", body = AuthErrorBody),
    )
)]
pub async fn sign_in(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let email = req.sign_in_email()?;
    let code = req.required_str("otp")?;
    let name = req.str_field("name")?.unwrap_or_default().to_owned();
    let image = req.str_field("image")?.filter(|i| !i.is_empty());
    profile::check_name(&name).map_err(AuthError::from)?;
    if let Some(image) = image {
        profile::check_image(image).map_err(AuthError::from)?;
    }
    let ctx = &req.ctx;
    match email_code::check(&ctx.db, ctx.auth.secret(), &email, code, req.now).await? {
        Check::Accepted => {}
        Check::Invalid => return Err(AuthError::invalid_otp().into()),
        Check::Expired => return Err(AuthError::otp_expired().into()),
        Check::TooManyAttempts => return Err(AuthError::too_many_attempts().into()),
    }
    let user = match users::find_by_email(&ctx.db, &email).await? {
        // A member of another server has no sign-in here.
        Some(user) if user.is_external => return Err(AuthError::invalid_otp().into()),
        Some(user) => users::prove_email(&ctx.db, &user.id, req.now)
            .await?
            .ok_or_else(AuthError::invalid_otp)?,
        None => {
            let new = NewUser {
                name,
                email,
                email_verified: true,
                image: image.map(str::to_owned),
            };
            match users::create(&ctx.db, new, None, req.now).await {
                Ok(user) => {
                    tracing::info!("auth.signed_up");
                    user
                }
                // Created by a racing request meanwhile: its code was another.
                Err(CreateUserError::EmailTaken) => return Err(AuthError::invalid_otp().into()),
                Err(CreateUserError::Database(err)) => return Err(err.into()),
            }
        }
    };
    req.rctx.set_user(&user.id);
    let issued = issue(&ctx.db, &user.id, true, &req.client(), req.now).await?;
    let body = TokenAndUser {
        token: Some(issued.token.clone()),
        user: wire::user(&user),
    };
    Ok(wire::reply(&body)?.with_session(&ctx.auth, &issued.token, true))
}
