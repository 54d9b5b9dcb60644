//! Account deletion on the application API: `DELETE /api/v1/users` mails a confirmation
//! link (nothing is deleted yet); `POST /api/v1/users/delete/confirm {token}` (public, the
//! emailed token is the credential; 10 per 15 minutes per address) deletes the user, their
//! sessions and accounts.

use crate::http::endpoint::endpoint;
use serde::Deserialize;
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection};

use super::extract::{AuthUser, json_body, ok_text, respond, signed_in, with_ctx};
use super::request::RequestCtx;
use crate::auth::deletion;
use crate::context::Ctx;
use crate::error::AppError;
use crate::rate_limit::DELETE_CONFIRM;

/// The users routes.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    delete_confirm(ctx.clone())
        .or(delete_user(ctx))
        .unify()
        .boxed()
}

/// DELETE /api/v1/users — starts email-confirmed deletion.
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
#[derive(Debug, Deserialize)]
struct DeleteConfirmRequest {
    #[serde(default)]
    token: Option<String>,
}

/// POST /api/v1/users/delete/confirm — completes deletion with the emailed token.
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
        .check(
            DELETE_CONFIRM,
            &rctx.client_ip().to_string(),
            std::time::Instant::now(),
        )
        .map_err(|retry_after_secs| AppError::TooManyRequests { retry_after_secs })?;
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

/// This resource's operations in the OpenAPI document (see [`crate::http::openapi`]).
#[derive(utoipa::OpenApi)]
pub struct Api;
