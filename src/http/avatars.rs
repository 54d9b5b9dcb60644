//! Avatars: `POST /api/v1/users/avatar {data}` (base64, at most 256 KiB decoded, JPEG, PNG or
//! WebP sniffed from the bytes) stores the image and points the user's `image` at
//! `/api/v1/users/:userId/avatar?v=<uploadMs>`; `GET` of that URL is public and cached
//! immutably. Without `v` or under a stale one the answer is the current image with
//! `no-cache` (those URLs change their answer when the avatar changes).

use crate::http::endpoint::endpoint;
use std::collections::HashMap;

use chrono::Utc;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use serde::{Deserialize, Serialize};
use utoipa::{OpenApi, ToSchema};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::extract::{AuthUser, json_body, respond, signed_in, with_ctx};
use crate::context::Ctx;
use crate::domain::avatars;
use crate::domain::ids::UserId;
use crate::error::AppError;
use crate::http::openapi::schemas::ErrorBody;
use crate::store::avatars as avatar_store;

/// The avatar operations of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(upload, download),
    components(schemas(UploadRequest, UploadedAvatar)),
    tags((name = "avatars", description = "Profile images: uploaded as base64, served publicly."))
)]
pub struct Api;

/// The avatar routes.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    upload(ctx.clone()).or(download(ctx)).unify().boxed()
}

/// `POST /api/v1/users/avatar` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct UploadRequest {
    /// The image as base64 (standard alphabet, padded; whitespace is ignored), or a `data:`
    /// URL carrying it: a JPEG, PNG or WebP image of at most 256 KiB (262144 bytes) once
    /// decoded, its type sniffed from the bytes.
    #[schema(min_length = 1, content_encoding = "base64")]
    data: String,
}

/// `POST /api/v1/users/avatar` answer.
#[derive(Debug, Serialize, ToSchema)]
struct UploadedAvatar {
    /// The image's public, versioned URL (`…/api/v1/users/{userId}/avatar?v=<uploadMs>`),
    /// now also the user's `image`.
    #[schema(format = "uri")]
    url: String,
}

/// POST /api/v1/users/avatar — 200 `{url}`.
#[utoipa::path(
    post,
    path = "/api/v1/users/avatar",
    tag = "avatars",
    operation_id = "upload_avatar",
    security(("bearer" = []), ("cookie" = [])),
    request_body = UploadRequest,
    responses(
        (status = 200, description = "The image is stored and the user's `image` points at it.", body = UploadedAvatar),
        (status = 400, description = "`data` is not base64, is empty, is over 256 KiB decoded, or is not a JPEG, PNG or WebP image.",
         body = ErrorBody),
    )
)]
fn upload(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "avatar")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<UploadRequest>(
            "Body must be { data } with a base64 image.",
        ))
        .and_then(|ctx: Ctx, user: AuthUser, body: UploadRequest| async move {
            respond(upload_handler(&ctx, &user, &body.data).await)
        })
}

async fn upload_handler(ctx: &Ctx, user: &AuthUser, data: &str) -> Result<Response, AppError> {
    let image = avatars::decode(data).map_err(|err| AppError::bad_request(err.to_string()))?;
    let base = format!("{}/api/v1/users/{}/avatar", ctx.base_url, user.id());
    let url_of = |version: i64| format!("{base}?v={version}");
    let url = avatar_store::save(&ctx.db, user.id(), image, url_of, Utc::now())
        .await?
        .ok_or_else(|| AppError::Unauthorized("Your account no longer exists.".into()))?;
    Ok(warp::reply::json(&UploadedAvatar { url }).into_response())
}

/// GET /api/v1/users/:userId/avatar — public image bytes.
#[utoipa::path(
    get,
    path = "/api/v1/users/{userId}/avatar",
    tag = "avatars",
    operation_id = "download_avatar",
    params(
        ("userId" = String, Path, description = "The user's id."),
        ("v" = Option<String>, Query, description = "The upload's version (milliseconds) from the user's `image` URL. \
            The current version is cached immutably; without it or under a stale one the answer is `no-cache`."),
    ),
    responses(
        (status = 200, description = "The image, its type sniffed at upload.",
         content(("image/jpeg"), ("image/png"), ("image/webp")),
         headers(("Cache-Control" = String, description = "`public, max-age=31536000, immutable` under the current `v`, else `no-cache`."))),
        (status = 404, description = "The user has no avatar (or does not exist).", body = ErrorBody),
    )
)]
fn download(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / {userId: String} / "avatar")
        .and(warp::get())
        .and(with_ctx(ctx))
        .and(warp::query::<HashMap<String, String>>())
        .and_then(
            |user_id: String, ctx: Ctx, query: HashMap<String, String>| async move {
                let user_id = UserId::new(user_id);
                respond(download_handler(&ctx, &user_id, query.get("v")).await)
            },
        )
}

async fn download_handler(
    ctx: &Ctx,
    user_id: &UserId,
    version: Option<&String>,
) -> Result<Response, AppError> {
    let avatar = avatar_store::find(&ctx.db, user_id)
        .await?
        .ok_or_else(|| AppError::not_found("Avatar not found..."))?;
    // The current versioned URL never changes its answer; a stale version's URL and the
    // unversioned one get today's image but must not be cached as if it stayed.
    let cache = if version.is_some_and(|v| *v == avatar.version.to_string()) {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let mut response = Response::new(avatar.bytes.into());
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        http::HeaderValue::from_str(&avatar.mime).map_err(AppError::internal)?,
    );
    headers.insert(CACHE_CONTROL, http::HeaderValue::from_static(cache));
    Ok(response)
}
