//! The home side, for signed-in users: preview and connect to another server's invite,
//! list and drop connections.

use std::collections::HashMap;

use bytes::Bytes;
use serde::Deserialize;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::{limit, relay};
use crate::context::Ctx;
use crate::error::AppError;
use crate::federation::home;
use crate::federation::peer::HomeProfile;
use crate::http::endpoint::endpoint;
use crate::http::extract::{
    AuthUser, JSON_BODY_LIMIT, body_bytes, ok_text, parse_json, request_ctx, respond, route,
    signed_in, with_ctx,
};
use crate::http::request::RequestCtx;
use crate::rate_limit::{FEDERATION_CONNECT, FEDERATION_PREVIEW};

/// GET /api/v1/federation/connections → `[{id, label, remoteUserID, server}]`.
pub(super) fn list_connections(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
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
pub(super) fn preview(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
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
pub(super) fn connect(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
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
pub(super) fn disconnect(
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
