//! `POST /sign-up/email` and `POST /sign-in/email`.

use super::AuthRequest;
use super::bodies;
use super::wire::{self, SignedIn, TokenAndUser};
use crate::auth::error::AuthError;
use crate::auth::password::{MAX_PASSWORD_LENGTH, check_length};
use crate::auth::session::{AuthReply, issue};
use crate::domain::profile;
use crate::error::AppError;
use crate::http::openapi::schemas::AuthErrorBody;
use crate::store::accounts::{self, CREDENTIAL};
use crate::store::users::{self, CreateUserError, NewAccount, NewUser};

/// Creates a password user (with its personal calendar and settings) and signs it in.
#[utoipa::path(
    post,
    path = "/api/auth/sign-up/email",
    tag = "auth",
    request_body(content(
        (bodies::SignUpEmail = "application/json"),
        (bodies::SignUpEmail = "application/x-www-form-urlencoded"),
    )),
    responses(
        (status = 200, description = "Signed up and signed in: the session token and the new user; the session cookie is set.",
         body = TokenAndUser, headers(("set-auth-token" = String, description = "The signed session token, for bearer clients."))),
        (status = 403, description = "The request's origin is not trusted (`INVALID_ORIGIN`, `MISSING_OR_NULL_ORIGIN`, `CROSS_SITE_NAVIGATION_LOGIN_BLOCKED`) or a URL in it is not (`INVALID_CALLBACK_URL`...).", body = AuthErrorBody),
        (status = 422, description = "A user with this address exists (`USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL`).", body = AuthErrorBody),
    )
)]
pub async fn sign_up(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let name = req.required_str("name")?.to_owned();
    let email = req.required_email("email")?;
    let password = req.required_str("password")?;
    check_length(password)?;
    let image = req.str_field("image")?.map(str::to_owned);
    profile::check_name(&name).map_err(AuthError::from)?;
    if let Some(image) = &image {
        profile::check_image(image).map_err(AuthError::from)?;
    }
    let remember = req.bool_field("rememberMe")?.unwrap_or(true);
    let ctx = &req.ctx;
    if users::find_by_email(&ctx.db, &email).await?.is_some() {
        return Err(AuthError::user_already_exists().into());
    }
    let password_hash = ctx.auth.hasher.hash(password.to_owned()).await?;
    let user = users::create(
        &ctx.db,
        NewUser {
            name,
            email,
            email_verified: false,
            image,
        },
        Some(NewAccount {
            provider_id: CREDENTIAL.to_owned(),
            account_id: None,
            password_hash: Some(password_hash),
        }),
        req.now,
    )
    .await
    .map_err(|err| match err {
        CreateUserError::EmailTaken => AuthError::user_already_exists().into(),
        CreateUserError::Database(err) => AppError::from(err),
    })?;
    req.rctx.set_user(&user.id);
    tracing::info!("auth.signed_up");
    let issued = issue(&ctx.db, &user.id, remember, &req.client(), req.now).await?;
    let body = TokenAndUser {
        token: Some(issued.token.clone()),
        user: wire::user(&user),
    };
    Ok(wire::reply(&body)?.with_session(&ctx.auth, &issued.token, remember))
}

/// Signs a password user in. Unknown email, missing password account and wrong password all
/// answer alike, after the same hashing work.
#[utoipa::path(
    post,
    path = "/api/auth/sign-in/email",
    operation_id = "sign_in_email",
    tag = "auth",
    request_body(content(
        (bodies::SignInEmail = "application/json"),
        (bodies::SignInEmail = "application/x-www-form-urlencoded"),
    )),
    responses(
        (status = 200, description = "Signed in: the session token and the user; the session cookie is set, and with a `callbackURL` also `Location`.",
         body = SignedIn, headers(
            ("set-auth-token" = String, description = "The signed session token, for bearer clients."),
            ("Location" = Option<String>, description = "The `callbackURL`, when one was given."),
         )),
        (status = 401, description = "Unknown address or wrong password (`INVALID_EMAIL_OR_PASSWORD`).", body = AuthErrorBody),
        (status = 403, description = "The request's origin is not trusted, or its `callbackURL` is not.", body = AuthErrorBody),
    )
)]
pub async fn sign_in(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let email = req.sign_in_email()?;
    let password = req.required_str("password")?;
    if password.chars().count() > MAX_PASSWORD_LENGTH {
        return Err(AuthError::password_too_long().into());
    }
    let remember = req.bool_field("rememberMe")?.unwrap_or(true);
    let callback = req.str_field("callbackURL")?.filter(|c| !c.is_empty());
    let ctx = &req.ctx;
    let hasher = &ctx.auth.hasher;
    let Some(user) = users::find_by_email(&ctx.db, &email).await? else {
        hasher.verify_nothing(password.to_owned()).await?;
        return Err(AuthError::invalid_email_or_password().into());
    };
    let stored_hash = accounts::find_credential(&ctx.db, &user.id)
        .await?
        .and_then(|account| account.password_hash);
    let Some(stored_hash) = stored_hash else {
        hasher.verify_nothing(password.to_owned()).await?;
        return Err(AuthError::invalid_email_or_password().into());
    };
    if !hasher.verify(password.to_owned(), stored_hash).await? {
        tracing::info!("auth.sign_in_refused");
        return Err(AuthError::invalid_email_or_password().into());
    }
    req.rctx.set_user(&user.id);
    let issued = issue(&ctx.db, &user.id, remember, &req.client(), req.now).await?;
    let body = SignedIn {
        redirect: callback.is_some(),
        token: issued.token.clone(),
        user: wire::user(&user),
        url: callback.map(str::to_owned),
    };
    let mut reply = wire::reply(&body)?.with_session(&ctx.auth, &issued.token, remember);
    if let Some(callback) = callback {
        reply = reply.with_location(callback);
    }
    Ok(reply)
}
