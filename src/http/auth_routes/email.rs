//! `POST /sign-up/email` and `POST /sign-in/email`.

use serde_json::json;

use super::AuthRequest;
use super::wire;
use crate::auth::error::AuthError;
use crate::auth::password::{MAX_PASSWORD_LENGTH, check_length};
use crate::auth::session::{AuthReply, issue};
use crate::domain::profile;
use crate::error::AppError;
use crate::store::accounts::{self, CREDENTIAL};
use crate::store::users::{self, CreateUserError, NewAccount, NewUser};

/// Creates a password user (with its personal calendar and settings) and signs it in.
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
    let user = users::create_with_account(
        &ctx.db,
        NewUser {
            name,
            email,
            email_verified: false,
            image,
        },
        NewAccount {
            provider_id: CREDENTIAL.to_owned(),
            account_id: None,
            password_hash: Some(password_hash),
        },
        req.now,
    )
    .await
    .map_err(|err| match err {
        CreateUserError::EmailTaken => AuthError::user_already_exists().into(),
        CreateUserError::Database(err) => AppError::from(err),
    })?;
    req.rctx.set_user(&user.id);
    tracing::info!("auth.signed_up");
    let issued = issue(ctx.db.conn(), &user.id, remember, &req.client(), req.now).await?;
    Ok(
        AuthReply::json(json!({ "token": issued.token, "user": wire::user(&user) })).with_session(
            &ctx.auth,
            &issued.token,
            remember,
        ),
    )
}

/// Signs a password user in. Unknown email, missing password account and wrong password all
/// answer alike, after the same hashing work.
pub async fn sign_in(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let email = req
        .required_email("email")
        .map_err(|_| AuthError::invalid_email())?;
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
    let issued = issue(ctx.db.conn(), &user.id, remember, &req.client(), req.now).await?;
    let mut body = json!({
        "redirect": callback.is_some(),
        "token": issued.token,
        "user": wire::user(&user),
    });
    if let Some(callback) = callback {
        body["url"] = callback.into();
    }
    let mut reply = AuthReply::json(body).with_session(&ctx.auth, &issued.token, remember);
    if let Some(callback) = callback {
        reply = reply.with_location(callback);
    }
    Ok(reply)
}
