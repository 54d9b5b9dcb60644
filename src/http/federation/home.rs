//! The home side, for signed-in users: preview and connect to another server's invite,
//! list and drop connections.

use std::collections::HashMap;

use bytes::Bytes;
use serde::Deserialize;
use utoipa::ToSchema;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::{limit, relay};
use crate::context::Ctx;
use crate::error::AppError;
use crate::federation::home::{self, Connected, ConnectionView};
use crate::federation::peer::HomeProfile;
use crate::http::endpoint::endpoint;
use crate::http::extract::{
    AuthUser, JSON_BODY_LIMIT, body_bytes, ok_text, parse_json, request_ctx, respond, route,
    signed_in, with_ctx,
};
use crate::http::openapi::schemas::ErrorBody;
use crate::http::request::RequestCtx;
use crate::rate_limit::{FEDERATION_CONNECT, FEDERATION_PREVIEW};

/// GET /api/v1/federation/connections → `[{id, label, remoteUserID, server}]`.
#[utoipa::path(
    get,
    path = "/api/v1/federation/connections",
    tag = "federation",
    security(("bearer" = []), ("cookie" = [])),
    responses(
        (status = 200, description = "The caller's connections to other servers (never a credential).",
         body = Vec<ConnectionView>),
    )
)]
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
#[utoipa::path(
    get,
    path = "/api/v1/federation/preview",
    tag = "federation",
    operation_id = "federation_preview",
    security(("bearer" = []), ("cookie" = [])),
    params(
        ("server" = String, Query, description = "The other server: an http(s) origin like `https://calendar.example.com`."),
        ("token" = String, Query, description = "The invite token (the end of the invite link)."),
    ),
    responses(
        (status = 200, description = "The other server's public invite preview, relayed as it sent it.", body = Object),
        (status = 400, description = "`server` or `token` is missing or unusable, the server is this one or may not be \
            reached, or it could not be reached.", body = ErrorBody),
        (status = 429, description = "Too many previews from this address.", body = ErrorBody,
         headers(("Retry-After" = u64, description = "Seconds until another try is allowed."))),
        (status = "default", description = "The other server's answer, relayed with its status (as `application/json`); \
            this includes its 4xx and 5xx answers.", body = Object),
    )
)]
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
#[derive(Debug, Deserialize, ToSchema)]
pub(super) struct ConnectBody {
    /// The other server: an http(s) origin like `https://calendar.example.com`.
    #[serde(default)]
    #[schema(required = true, nullable = false, format = "uri")]
    server: Option<String>,
    /// The invite token (the end of the invite link).
    #[serde(default)]
    #[schema(required = true, nullable = false)]
    token: Option<String>,
}

/// POST /api/v1/federation/connect {server, token} → `{server, calendar}`.
#[utoipa::path(
    post,
    path = "/api/v1/federation/connect",
    tag = "federation",
    operation_id = "federation_connect",
    security(("bearer" = []), ("cookie" = [])),
    request_body = ConnectBody,
    responses(
        (status = 200, description = "The accept handshake ran on the other server and the connection is stored; never a token.",
         body = Connected),
        (status = 400, description = "`server` or `token` is missing or unusable, federation is not enabled here, the other \
            server could not be reached, runs too old a version, or refused or garbled the accept.", body = ErrorBody),
        (status = 429, description = "Too many connects from this address.", body = ErrorBody,
         headers(("Retry-After" = u64, description = "Seconds until another try is allowed."))),
    )
)]
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
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = FederationDisconnectBody)]
pub(super) struct DisconnectBody {
    /// The connected server's origin (http or https, no path).
    #[serde(default)]
    #[schema(required = true, nullable = false, format = "uri")]
    server: Option<String>,
}

/// DELETE /api/v1/users/connections/svc {server}.
#[utoipa::path(
    delete,
    path = "/api/v1/users/connections/svc",
    tag = "federation",
    operation_id = "federation_disconnect",
    security(("bearer" = []), ("cookie" = [])),
    request_body = DisconnectBody,
    responses(
        (status = 200, description = "The connection to that server is dropped (none there changes nothing).",
         body = String, content_type = "text/plain", example = "OK"),
        (status = 400, description = "`server` is missing or not a server address.", body = ErrorBody),
    )
)]
pub(super) fn disconnect_svc(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    disconnect("svc", ctx)
}

/// DELETE /api/v1/users/connections/musubi {server}: the original's name of `…/svc`.
#[utoipa::path(
    delete,
    path = "/api/v1/users/connections/musubi",
    tag = "federation",
    operation_id = "federation_disconnect_musubi",
    security(("bearer" = []), ("cookie" = [])),
    request_body = DisconnectBody,
    responses(
        (status = 200, description = "The same as `DELETE /api/v1/users/connections/svc`.",
         body = String, content_type = "text/plain", example = "OK"),
        (status = 400, description = "`server` is missing or not a server address.", body = ErrorBody),
    )
)]
pub(super) fn disconnect_musubi(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    disconnect("musubi", ctx)
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
