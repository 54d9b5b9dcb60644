//! The signed-in user's profile and accounts: `POST /update-user`, `GET /list-accounts`,
//! `POST /unlink-account`, `POST /delete-user`, `GET /delete-user/callback`, and the
//! `GET /error` page.

use http::StatusCode;
use serde_json::Value;

use super::wire::{self, DONE, SuccessMessage};
use super::{AuthRequest, bodies};
use crate::actors::providers::ProvidersMsg;
use crate::auth::deletion;
use crate::auth::error::AuthError;
use crate::auth::session::AuthReply;
use crate::commands::mirrors::disconnect::disconnect_linked;
use crate::domain::profile;
use crate::domain::providers::Provider;
use crate::error::AppError;
use crate::http::openapi::schemas::AuthErrorBody;
use crate::store::{accounts, users};

/// Changes `name` and/or `image`; the email cannot change here.
#[utoipa::path(
    post,
    path = "/api/auth/update-user",
    tag = "auth",
    security(("bearer" = []), ("cookie" = [])),
    request_body = bodies::UpdateUser,
    responses(
        (status = 200, description = "The profile changed (the session cookie is set again).", body = wire::Status),
    )
)]
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
    Ok(wire::reply(&DONE)?.with_session(&ctx.auth, &current.token, current.session.remember))
}

/// The caller's sign-in accounts, without secrets.
#[utoipa::path(
    get,
    path = "/api/auth/list-accounts",
    tag = "auth",
    security(("bearer" = []), ("cookie" = [])),
    responses(
        (status = 200, description = "The caller's sign-in accounts (password, providers), without secrets.", body = Vec<wire::Account>),
    )
)]
pub async fn list_accounts(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.session().await?;
    let listed = accounts::list_for_user(&req.ctx.db, &current.user.id).await?;
    let listed: Vec<wire::Account> = listed.iter().map(wire::account).collect();
    wire::reply(&listed)
}

/// Removes one sign-in account (never the last). Takes the account row id (`accountId`,
/// 1.7) or the older `{providerId, accountId?}` shape.
#[utoipa::path(
    post,
    path = "/api/auth/unlink-account",
    tag = "auth",
    security(("bearer" = []), ("cookie" = [])),
    request_body = bodies::UnlinkAccount,
    responses(
        (status = 200, description = "The account is gone (a calendar-linked one with its mirrors). 400 `ACCOUNT_NOT_FOUND`, or `FAILED_TO_UNLINK_LAST_ACCOUNT` for the last one; 403 `SESSION_NOT_FRESH` when the session is a day old or more.",
         body = wire::Status),
    )
)]
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
            if let Some(account) =
                disconnect_linked(&ctx.mirrors, &current.user.id, provider, &target).await?
            {
                ctx.actors.providers.tell(ProvidersMsg::Stop { account });
            }
        }
        None => {
            accounts::delete_for_user(db, &current.user.id, &target).await?;
        }
    }
    wire::reply(&DONE)
}

/// Deletes the caller's account: at once with the right password or a mailed token,
/// otherwise by mailing a confirmation link.
#[utoipa::path(
    post,
    path = "/api/auth/delete-user",
    operation_id = "auth_delete_user",
    tag = "auth",
    security(("bearer" = []), ("cookie" = [])),
    request_body = Option<bodies::DeleteUser>,
    responses(
        (status = 200, description = "`User deleted` (the cookies are cleared), or `Verification email sent` when neither a password nor a token was given. 400 `INVALID_PASSWORD`; 404 `INVALID_TOKEN` for a bad deletion token.",
         body = SuccessMessage),
    )
)]
pub async fn delete_user(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.session().await?;
    let ctx = &req.ctx;
    let deleted = wire::reply(&USER_DELETED)?;
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
    wire::reply(&SuccessMessage {
        success: true,
        message: "Verification email sent",
    })
}

/// `{success: true, message: "User deleted"}`.
const USER_DELETED: SuccessMessage = SuccessMessage {
    success: true,
    message: "User deleted",
};

/// The deletion link opened while signed in: deletes, then redirects to `callbackURL`.
#[utoipa::path(
    get,
    path = "/api/auth/delete-user/callback",
    tag = "auth",
    security(("bearer" = []), ("cookie" = [])),
    params(
        ("token" = String, Query, description = "The mailed deletion token."),
        ("callbackURL" = Option<String>, Query, description = "Where the browser goes after the deletion (a trusted origin)."),
    ),
    responses(
        (status = 200, description = "Without `callbackURL`: the account is deleted; the cookies are cleared.", body = SuccessMessage),
        (status = 302, description = "With `callbackURL`: the account is deleted and the browser sent there; the cookies are cleared.",
         headers(("Location" = String, description = "The `callbackURL`."))),
        (status = 404, description = "No session (`FAILED_TO_GET_USER_INFO`), or a bad token (`INVALID_TOKEN`).", body = AuthErrorBody),
    )
)]
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
        None => wire::reply(&USER_DELETED)?.clearing_cookies(&ctx.auth),
    })
}

/// better-auth's error page: the code, readable, as HTML.
#[utoipa::path(
    get,
    path = "/api/auth/error",
    tag = "auth",
    params(("error" = Option<String>, Query, description = "The error code to show (letters, digits, `_`, `'`, `-`; at most 64 shown).")),
    responses(
        (status = 200, description = "An HTML page naming the error.", body = String, content_type = "text/html"),
    )
)]
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
