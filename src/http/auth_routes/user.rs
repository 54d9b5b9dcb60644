//! The signed-in user's profile and accounts: `POST /update-user`, `GET /list-accounts`,
//! `POST /unlink-account`, `POST /delete-user`, `GET /delete-user/callback`, and the
//! `GET /error` page.

use http::StatusCode;
use serde_json::{Value, json};

use super::AuthRequest;
use super::wire;
use crate::actors::providers::ProvidersMsg;
use crate::auth::deletion;
use crate::auth::error::AuthError;
use crate::auth::session::AuthReply;
use crate::commands::mirrors::disconnect::disconnect_linked;
use crate::domain::ids::UserId;
use crate::domain::profile;
use crate::domain::providers::Provider;
use crate::error::AppError;
use crate::store::{accounts, users};

/// Changes `name` and/or `image`; the email cannot change here.
pub async fn update_user(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.session().await?;
    if req.body.contains_key("email") {
        return Err(AuthError::email_can_not_be_updated().into());
    }
    let name = req.str_field("name")?.map(str::to_owned);
    let image = match req.body.get("image") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::String(image)) => Some(Some(image.clone())),
        Some(_) => {
            return Err(AuthError::validation(
                "image",
                "Invalid input: expected string, received number",
            )
            .into());
        }
    };
    if let Some(name) = &name {
        profile::check_name(name).map_err(AuthError::from)?;
    }
    if let Some(Some(image)) = &image {
        profile::check_image(image).map_err(AuthError::from)?;
    }
    if name.is_none() && image.is_none() {
        return Err(AuthError::message_only(StatusCode::BAD_REQUEST, "No fields to update").into());
    }
    let ctx = &req.ctx;
    users::update_profile(&ctx.db, &current.user.id, name, image, req.now).await?;
    Ok(AuthReply::json(json!({ "status": true })).with_session(
        &ctx.auth,
        &current.token,
        current.session.remember,
    ))
}

/// The caller's sign-in accounts, without secrets.
pub async fn list_accounts(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.session().await?;
    let listed = accounts::list_for_user(&req.ctx.db, &current.user.id).await?;
    Ok(AuthReply::json(Value::Array(
        listed.iter().map(wire::account).collect(),
    )))
}

/// Removes one sign-in account (never the last). Takes the account row id (`accountId`,
/// 1.7) or the older `{providerId, accountId?}` shape.
pub async fn unlink_account(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.fresh_session().await?;
    let db = &req.ctx.db;
    let owned = accounts::list_for_user(db, &current.user.id).await?;
    let target = match req.str_field("providerId")? {
        Some(provider) => {
            let provider_account = req.str_field("accountId")?;
            owned
                .iter()
                .find(|a| {
                    a.provider_id == provider
                        && provider_account.is_none_or(|id| a.account_id == id)
                })
                .map(|a| a.id.clone())
        }
        None => {
            let id = req.required_str("accountId")?;
            owned.iter().find(|a| a.id == id).map(|a| a.id.clone())
        }
    };
    let Some(target) = target else {
        return Err(AuthError::account_not_found().into());
    };
    if owned.len() <= 1 {
        return Err(AuthError::failed_to_unlink_last_account().into());
    }
    let linked_provider = owned
        .iter()
        .find(|account| account.id == target)
        .and_then(|account| Provider::parse(&account.provider_id))
        .filter(|provider| provider.is_oauth());
    match linked_provider {
        // A calendar-linked account takes its mirrors with it (and its token is revoked).
        Some(provider) => {
            let ctx = &req.ctx;
            let user = UserId::from(current.user.id.as_str());
            if let Some(account) = disconnect_linked(&ctx.mirrors, &user, provider, &target).await?
            {
                ctx.actors.providers.tell(ProvidersMsg::Stop { account });
            }
        }
        None => {
            accounts::delete_for_user(db, &current.user.id, &target).await?;
        }
    }
    Ok(AuthReply::json(json!({ "status": true })))
}

/// Deletes the caller's account: at once with the right password or a mailed token,
/// otherwise by mailing a confirmation link.
pub async fn delete_user(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.session().await?;
    let ctx = &req.ctx;
    let deleted = AuthReply::json(json!({ "success": true, "message": "User deleted" }));
    if let Some(password) = req.str_field("password")? {
        let stored = accounts::find_credential(&ctx.db, &current.user.id)
            .await?
            .and_then(|account| account.password_hash)
            .ok_or_else(AuthError::credential_account_not_found)?;
        if !ctx.auth.hasher.verify(password.to_owned(), stored).await? {
            return Err(AuthError::invalid_password().into());
        }
        users::delete_now(&ctx.db, &current.user.id).await?;
        tracing::info!("account.deleted");
        return Ok(deleted.clearing_cookies(&ctx.auth));
    }
    if let Some(token) = req.str_field("token")? {
        return match deletion::confirm(ctx, token, Some(&current.user.id)).await? {
            Some(_) => Ok(deleted.clearing_cookies(&ctx.auth)),
            None => Err(AuthError::delete_token_invalid().into()),
        };
    }
    deletion::start(ctx, &current.user).await?;
    Ok(AuthReply::json(
        json!({ "success": true, "message": "Verification email sent" }),
    ))
}

/// The deletion link opened while signed in: deletes, then redirects to `callbackURL`.
pub async fn delete_user_callback(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req
        .session()
        .await
        .map_err(|_| AuthError::failed_to_get_user_info())?;
    let token = req.query("token").unwrap_or_default();
    let ctx = &req.ctx;
    if deletion::confirm(ctx, token, Some(&current.user.id))
        .await?
        .is_none()
    {
        return Err(AuthError::delete_token_invalid().into());
    }
    Ok(match req.query("callbackURL").filter(|c| !c.is_empty()) {
        Some(callback) => AuthReply::redirect(callback).clearing_cookies(&ctx.auth),
        None => AuthReply::json(json!({ "success": true, "message": "User deleted" }))
            .clearing_cookies(&ctx.auth),
    })
}

/// better-auth's error page: the code, readable, as HTML.
pub fn error_page(req: &AuthRequest) -> AuthReply {
    let code: String = req
        .query("error")
        .unwrap_or("UNKNOWN")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '\'' | '-'))
        .take(64)
        .collect();
    let code = if code.is_empty() {
        "UNKNOWN".to_owned()
    } else {
        code
    };
    AuthReply::html(crate::http::html::auth_error_page(&code))
}
