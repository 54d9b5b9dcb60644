//! Account deletion on the application API: `DELETE /api/v1/users` mails a confirmation
//! link (nothing is deleted yet); `POST /api/v1/users/delete/confirm {token}` (public, the
//! emailed token is the credential; 10 per 15 minutes per address) deletes the user, their
//! sessions and accounts.

use crate::http::endpoint::endpoint;
use serde::Deserialize;
use utoipa::{OpenApi, ToSchema};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection};

use super::extract::{AuthUser, json_body, ok_text, respond, signed_in, with_ctx};
use super::request::RequestCtx;
use crate::auth::deletion;
use crate::context::Ctx;
use crate::error::AppError;
use crate::http::openapi::schemas::ErrorBody;
use crate::rate_limit::DELETE_CONFIRM;

/// The account-deletion operations of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(delete_user, delete_confirm),
    components(schemas(DeleteConfirmRequest)),
    tags((name = "users", description = "The signed-in user's account: email-confirmed deletion."))
)]
pub struct Api;

/// The users routes.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    delete_confirm(ctx.clone())
        .or(delete_user(ctx))
        .unify()
        .boxed()
}

/// DELETE /api/v1/users — starts email-confirmed deletion.
#[utoipa::path(
    delete,
    path = "/api/v1/users",
    tag = "users",
    security(("bearer" = []), ("cookie" = [])),
    responses(
        (status = 200, description = "A confirmation link was mailed to the account's address; nothing is deleted yet.",
         body = String, content_type = "text/plain", example = "OK"),
    )
)]
fn delete_user(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users")
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(|ctx: Ctx, user: AuthUser| async move {
            respond(delete_user_handler(&ctx, &user).await)
        })
}

async fn delete_user_handler(ctx: &Ctx, user: &AuthUser) -> Result<Response, AppError> {
    deletion::start(ctx, user.user()).await?;
    Ok(ok_text())
}

/// `POST /api/v1/users/delete/confirm` body.
#[derive(Debug, Deserialize, ToSchema)]
struct DeleteConfirmRequest {
    /// The token of the emailed link (required; blank is refused).
    #[serde(default)]
    #[schema(required = true, nullable = false, min_length = 1)]
    token: Option<String>,
}

/// POST /api/v1/users/delete/confirm — completes deletion with the emailed token.
#[utoipa::path(
    post,
    path = "/api/v1/users/delete/confirm",
    tag = "users",
    request_body = DeleteConfirmRequest,
    responses(
        (status = 200, description = "The account, its sessions and linked accounts are deleted.",
         body = String, content_type = "text/plain", example = "OK"),
        (status = 400, description = "The token is missing, or the link is invalid or has expired.", body = ErrorBody),
        (status = 429, description = "More than 10 confirmations from this address in 15 minutes.", body = ErrorBody,
         headers(("Retry-After" = u64, description = "Seconds until another try is allowed."))),
    )
)]
fn delete_confirm(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "delete" / "confirm")
        .and(warp::post())
        .and(with_ctx(ctx))
        .and(super::extract::request_ctx())
        .and(json_body::<DeleteConfirmRequest>("Body must be { token }."))
        .and_then(
            |ctx: Ctx, rctx: RequestCtx, body: DeleteConfirmRequest| async move {
                respond(delete_confirm_handler(&ctx, &rctx, body).await)
            },
        )
}

async fn delete_confirm_handler(
    ctx: &Ctx,
    rctx: &RequestCtx,
    body: DeleteConfirmRequest,
) -> Result<Response, AppError> {
    ctx.limits
        .admit(DELETE_CONFIRM, &rctx.client_ip().to_string())?;
    let token = body
        .token
        .filter(|token| !token.trim().is_empty())
        .ok_or_else(|| AppError::bad_request("token is required..."))?;
    match deletion::confirm(ctx, token.trim(), None).await? {
        Some(user_id) => {
            rctx.set_user(&user_id);
            Ok(ok_text())
        }
        None => Err(AppError::bad_request(
            "This deletion link is invalid or has expired.",
        )),
    }
}
