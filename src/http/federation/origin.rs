//! The origin side: a member of another server accepts an invite here, and exchanges its
//! member token.

use bytes::Bytes;
use http::HeaderMap;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::limit;
use crate::actors::calendar::CalendarCommand;
use crate::auth::principal::bearer_token;
use crate::commands::federation::{Accepted, Rotated, invite_not_found, rotate};
use crate::context::Ctx;
use crate::domain::digest::sha256_hex;
use crate::domain::federation::{Profile, ProfileError};
use crate::domain::ids::{InviteId, canonical_uuid};
use crate::error::AppError;
use crate::http::endpoint::endpoint;
use crate::http::extract::{
    JSON_BODY_LIMIT, body_bytes, parse_json, request_ctx, respond, with_ctx,
};
use crate::http::openapi::schemas::ErrorBody;
use crate::http::request::RequestCtx;
use crate::rate_limit::{FEDERATION_ACCEPT, FEDERATION_ROTATE};
use crate::store::invites;

/// `{token, profile: {name, email, homeServer, image?}}`, read leniently so that each
/// missing part gets the reference's message.
#[derive(Debug, Deserialize, ToSchema)]
pub(super) struct AcceptBody {
    /// The invite's token (the end of the invite link).
    #[serde(default)]
    #[schema(value_type = String, format = Uuid, required = true)]
    token: Option<Value>,
    /// Who accepts.
    #[serde(default)]
    #[schema(value_type = super::FederationProfile, required = true)]
    profile: Option<Value>,
}

const MISSING_TOKEN: &str = "Missing invite token. Send { token, profile }.";
const BAD_PROFILE: &str = "Profile needs a valid name, email and homeServer (and an image URL of at most 2048 characters).";

/// POST /api/v1/federation/accept (public).
#[utoipa::path(
    post,
    path = "/api/v1/federation/accept",
    tag = "federation",
    operation_id = "federation_accept",
    params(("Authorization" = Option<String>, Header, description = "`Bearer <member token>`: proves an existing shadow \
        of the same server, which is then reused (its token exchanged); without it a new shadow user always joins.")),
    request_body = AcceptBody,
    responses(
        (status = 200, description = "The shadow user joined as a viewer (a member already stays as is); the member token is \
            shown this once.", body = Accepted),
        (status = 400, description = "The token or the profile is missing or invalid.", body = ErrorBody),
        (status = 401, description = "The bearer presented is not a live member token of a shadow from that server, or it \
            was rotated already.", body = ErrorBody),
        (status = 404, description = "The invite is unknown, revoked, used up or expired.", body = ErrorBody),
        (status = 429, description = "More than 10 accepts from this address in 15 minutes.", body = ErrorBody,
         headers(("Retry-After" = u64, description = "Seconds until another try is allowed."))),
    )
)]
pub(super) fn accept(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "federation" / "accept")
        .and(warp::post())
        .and(with_ctx(ctx))
        .and(request_ctx())
        .and(warp::header::headers_cloned())
        .and(body_bytes(JSON_BODY_LIMIT))
        .and_then(
            |ctx: Ctx, rctx: RequestCtx, headers: HeaderMap, body: Bytes| async move {
                respond(accept_handler(&ctx, &rctx, &headers, &body).await)
            },
        )
}

async fn accept_handler(
    ctx: &Ctx,
    rctx: &RequestCtx,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, AppError> {
    limit(ctx, rctx, FEDERATION_ACCEPT)?;
    let body: AcceptBody = parse_json(body, MISSING_TOKEN)?;
    let token = body
        .token
        .as_ref()
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|token| !token.is_empty())
        .ok_or_else(|| AppError::bad_request(MISSING_TOKEN))?;
    let profile = read_profile(body.profile.as_ref())?;
    let invite_id = canonical_uuid(token)
        .map(InviteId::from_uuid)
        .ok_or_else(invite_not_found)?;
    let invite = invites::find_usable(&ctx.db, invite_id, chrono::Utc::now())
        .await?
        .ok_or_else(invite_not_found)?;
    let presented = bearer_token(headers).map(|bearer| sha256_hex(&bearer));
    let accepted = ctx
        .ask_calendar(invite.calendar_id, |reply| {
            CalendarCommand::AcceptFederated {
                invite: invite_id,
                profile: Box::new(profile),
                presented,
                reply,
            }
        })
        .await?;
    Ok(warp::reply::json(&accepted).into_response())
}

fn read_profile(profile: Option<&Value>) -> Result<Profile, AppError> {
    let profile = profile
        .and_then(Value::as_object)
        .ok_or_else(|| AppError::bad_request(BAD_PROFILE))?;
    let text = |key: &str| profile.get(key).and_then(Value::as_str);
    let image = match profile.get("image") {
        None | Some(Value::Null) => None,
        Some(Value::String(image)) => Some(image.as_str()),
        Some(_) => return Err(AppError::bad_request(BAD_PROFILE)),
    };
    let (Some(name), Some(email), Some(home_server)) =
        (text("name"), text("email"), text("homeServer"))
    else {
        return Err(AppError::bad_request(BAD_PROFILE));
    };
    Profile::checked(name, email, home_server, image).map_err(|err| match err {
        ProfileError::Invalid => AppError::bad_request(BAD_PROFILE),
        ProfileError::HomeServer => AppError::bad_request(
            "homeServer must be a bare http(s) origin, like https://calendar.example.com.",
        ),
    })
}

/// POST /api/v1/federation/token/rotate (a member token; no body).
#[utoipa::path(
    post,
    path = "/api/v1/federation/token/rotate",
    tag = "federation",
    security(("memberToken" = [])),
    responses(
        (status = 200, description = "The presented member token is exchanged for a new one (the old one stops working).",
         body = Rotated),
        (status = 401, description = "No live member token was presented, or a concurrent rotation replaced it.", body = ErrorBody),
        (status = 429, description = "Too many rotations from this address.", body = ErrorBody,
         headers(("Retry-After" = u64, description = "Seconds until another try is allowed."))),
    )
)]
pub(super) fn rotate_token(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "federation" / "token" / "rotate")
        .and(warp::post())
        .and(with_ctx(ctx))
        .and(request_ctx())
        .and(warp::header::headers_cloned())
        .and_then(
            |ctx: Ctx, rctx: RequestCtx, headers: HeaderMap| async move {
                respond(rotate_handler(&ctx, &rctx, &headers).await)
            },
        )
}

async fn rotate_handler(
    ctx: &Ctx,
    rctx: &RequestCtx,
    headers: &HeaderMap,
) -> Result<Response, AppError> {
    limit(ctx, rctx, FEDERATION_ROTATE)?;
    let required = || AppError::Unauthorized("A federated member token is required.".into());
    let presented = bearer_token(headers).ok_or_else(required)?;
    let hash = sha256_hex(&presented);
    let now = chrono::Utc::now();
    let Some((user, _)) = crate::store::member_tokens::find_user(&ctx.db, &hash, now).await? else {
        // A session's bearer, an unknown token, or one a concurrent rotation just replaced.
        return Err(required());
    };
    rctx.set_user(&user.id);
    let rotated = rotate(&ctx.db, &user.id, &hash).await?;
    Ok(warp::reply::json(&rotated).into_response())
}
