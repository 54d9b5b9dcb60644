//! Federation (under `/api/v1/federation`, and `DELETE /api/v1/users/connections/svc`):
//!
//! - origin side: `POST …/accept` (public, rate-limited per address) and `POST
//!   …/token/rotate` (a member token);
//! - home side, for signed-in users: `GET …/preview`, `POST …/connect`, `GET
//!   …/connections`, `DELETE /api/v1/users/connections/svc` (or `…/musubi`, the original's
//!   name) and the gateway `ANY …/s/:connectionId/api/v1/*`.
//!
//! Bodies and messages follow the original's wire (`musubi-wire.md` §8).

use std::collections::HashMap;
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};
use serde::Deserialize;
use serde_json::Value;
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::endpoint::endpoint;
use super::extract::{
    AuthUser, JSON_BODY_LIMIT, body_bytes, ok_text, parse_json, request_ctx, respond, route,
    signed_in, with_ctx,
};
use super::request::RequestCtx;
use crate::actors::calendar::CalendarCommand;
use crate::auth::principal::bearer_token;
use crate::auth::tokens::sha256_hex;
use crate::commands::federation::{invite_not_found, rotate};
use crate::context::Ctx;
use crate::domain::federation::{Profile, ProfileError};
use crate::domain::ids::{CalendarId, canonical_uuid};
use crate::error::AppError;
use crate::federation::gateway::{GatewayRequest, forward};
use crate::federation::home;
use crate::federation::peer::{HomeProfile, PeerAnswer};
use crate::rate_limit::{
    FEDERATION_ACCEPT, FEDERATION_CONNECT, FEDERATION_GATEWAY, FEDERATION_PREVIEW,
    FEDERATION_ROTATE, Rule,
};
use crate::store::invites;

/// The routes under `/api/v1/federation` (static paths first, the gateway last).
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    accept(ctx.clone())
        .or(rotate_token(ctx.clone()))
        .unify()
        .or(list_connections(ctx.clone()))
        .unify()
        .or(preview(ctx.clone()))
        .unify()
        .or(connect(ctx.clone()))
        .unify()
        .or(gateway(ctx))
        .unify()
        .boxed()
}

/// `DELETE /api/v1/users/connections/svc` and `…/musubi` (under `/api/v1/users`).
pub fn disconnect_routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    disconnect("svc", ctx.clone())
        .or(disconnect("musubi", ctx))
        .unify()
        .boxed()
}

/// Counts a hit of the caller's address under `rule`.
fn limit(ctx: &Ctx, rctx: &RequestCtx, rule: Rule) -> Result<(), AppError> {
    ctx.limits
        .check(rule, &rctx.client_ip().to_string(), Instant::now())
        .map_err(|retry_after_secs| AppError::TooManyRequests { retry_after_secs })
}

/// `{token, profile: {name, email, homeServer, image?}}`, read leniently so that each
/// missing part gets the reference's message.
#[derive(Debug, Deserialize)]
struct AcceptBody {
    #[serde(default)]
    token: Option<Value>,
    #[serde(default)]
    profile: Option<Value>,
}

const MISSING_TOKEN: &str = "Missing invite token. Send { token, profile }.";
const BAD_PROFILE: &str = "Profile needs a valid name, email and homeServer (and an image URL of at most 2048 characters).";

/// POST /api/v1/federation/accept (public).
fn accept(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
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
    let invite_id = canonical_uuid(token).ok_or_else(invite_not_found)?;
    let invite = invites::find_usable(ctx.db.conn(), invite_id, chrono::Utc::now())
        .await?
        .ok_or_else(invite_not_found)?;
    let presented = bearer_token(headers).map(|bearer| sha256_hex(&bearer));
    let accepted = ctx
        .ask_calendar(CalendarId(invite.calendar_id), |reply| {
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
fn rotate_token(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
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

/// GET /api/v1/federation/connections → `[{id, label, remoteUserID, server}]`.
fn list_connections(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "federation" / "connections")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(|ctx: Ctx, user: AuthUser| async move {
            respond(
                home::list(&ctx.db, user.id())
                    .await
                    .map(|connections| warp::reply::json(&connections)),
            )
        })
}

/// GET /api/v1/federation/preview?server=&token= — the other server's invite preview.
fn preview(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "federation" / "preview")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(request_ctx())
        .and(signed_in(ctx))
        .and(warp::query::<HashMap<String, String>>())
        .and_then(
            |ctx: Ctx, rctx: RequestCtx, _user: AuthUser, query: HashMap<String, String>| async move {
                respond(
                    async {
                        limit(&ctx, &rctx, FEDERATION_PREVIEW)?;
                        let answer = home::preview(
                            &ctx.federation,
                            query.get("server").map(String::as_str),
                            query.get("token").map(String::as_str),
                        )
                        .await?;
                        Ok::<_, AppError>(relay(answer, Some("application/json")))
                    }
                    .await,
                )
            },
        )
}

/// `{server, token}`.
#[derive(Debug, Deserialize)]
struct ConnectBody {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    token: Option<String>,
}

/// POST /api/v1/federation/connect {server, token} → `{server, calendar}`.
fn connect(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "federation" / "connect")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(request_ctx())
        .and(signed_in(ctx))
        .and(body_bytes(JSON_BODY_LIMIT))
        .and_then(
            |ctx: Ctx, rctx: RequestCtx, user: AuthUser, body: Bytes| async move {
                respond(connect_handler(&ctx, &rctx, &user, &body).await)
            },
        )
}

async fn connect_handler(
    ctx: &Ctx,
    rctx: &RequestCtx,
    user: &AuthUser,
    body: &[u8],
) -> Result<Response, AppError> {
    limit(ctx, rctx, FEDERATION_CONNECT)?;
    let body: ConnectBody = parse_json(body, "Body must be { server, token }.")?;
    let person = user.user();
    let profile = HomeProfile {
        name: person.name.clone(),
        email: person.email.clone(),
        image: person.image.clone(),
    };
    let connected = home::connect(
        &ctx.federation,
        &ctx.db,
        user.id(),
        &profile,
        body.server.as_deref(),
        body.token.as_deref(),
    )
    .await?;
    ctx.actors.sessions.refresh_upstreams_of(user.id());
    Ok(warp::reply::json(&connected).into_response())
}

/// `{server}`.
#[derive(Debug, Deserialize)]
struct DisconnectBody {
    #[serde(default)]
    server: Option<String>,
}

/// DELETE /api/v1/users/connections/:kind {server} (`svc`, or the original's `musubi`).
fn disconnect(
    kind: &'static str,
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    warp::path!("api" / "v1" / "users" / "connections" / String)
        .and_then(move |segment: String| async move {
            if segment == kind {
                Ok(())
            } else {
                Err(warp::reject::not_found())
            }
        })
        .untuple_one()
        .and(route(if kind == "svc" {
            "/api/v1/users/connections/svc"
        } else {
            "/api/v1/users/connections/musubi"
        }))
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(body_bytes(JSON_BODY_LIMIT))
        .and_then(|ctx: Ctx, user: AuthUser, body: Bytes| async move {
            respond(
                async {
                    let body: DisconnectBody = parse_json(&body, "Body must be { server }.")?;
                    if home::disconnect(&ctx.db, user.id(), body.server.as_deref()).await? {
                        ctx.actors.sessions.refresh_upstreams_of(user.id());
                    }
                    Ok::<_, AppError>(ok_text())
                }
                .await,
            )
        })
}

/// The gateway's path prefix, before `:connectionId`.
const GATEWAY_PREFIX: &str = "/api/v1/federation/s/";

/// ANY /api/v1/federation/s/:connectionId/api/v1/* — the gateway.
fn gateway(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    warp::path!("api" / "v1" / "federation" / "s" / ..)
        .and(route("/api/v1/federation/s/:connectionId/*"))
        .and(warp::path::full())
        .and(
            warp::query::raw()
                .map(Some)
                .or(warp::any().map(|| None))
                .unify(),
        )
        .and(warp::method())
        .and(warp::header::headers_cloned())
        .and(with_ctx(ctx.clone()))
        .and(request_ctx())
        .and(signed_in(ctx))
        .and(body_bytes(JSON_BODY_LIMIT))
        .and_then(
            |path: warp::path::FullPath,
             query: Option<String>,
             method: Method,
             headers: HeaderMap,
             ctx: Ctx,
             rctx: RequestCtx,
             user: AuthUser,
             body: Bytes| async move {
                respond(
                    async {
                        limit(&ctx, &rctx, FEDERATION_GATEWAY)?;
                        let escape = || {
                            AppError::bad_request(
                                "Only /api/v1/ paths of the connected server can be reached.",
                            )
                        };
                        let after = path
                            .as_str()
                            .strip_prefix(GATEWAY_PREFIX)
                            .ok_or_else(escape)?;
                        let (connection, rest) = after.split_once('/').ok_or_else(escape)?;
                        let request = GatewayRequest {
                            user_id: user.id().to_owned(),
                            connection: connection.to_owned(),
                            rest: rest.to_owned(),
                            query,
                            method,
                            accept: headers.get(http::header::ACCEPT).cloned(),
                            body,
                        };
                        let answer = forward(&ctx.federation, &ctx.db, request).await?;
                        Ok::<_, AppError>(relay(answer, None))
                    }
                    .await,
                )
            },
        )
}

/// A peer's answer as this server's response: its status and body, and its
/// `Content-Type` (or `content_type` instead).
fn relay(answer: PeerAnswer, content_type: Option<&'static str>) -> Response {
    let mut response = Response::new(answer.body.into());
    *response.status_mut() = answer.status;
    let content_type = content_type
        .map(HeaderValue::from_static)
        .or(answer.content_type);
    if let Some(content_type) = content_type {
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, content_type);
    }
    response
}
