//! The gateway: a signed-in user's request to a connected server, relayed.

use bytes::Bytes;
use http::{HeaderMap, Method};
use warp::reply::Response;
use warp::{Filter, Rejection};

use super::{limit, relay};
use crate::context::Ctx;
use crate::error::AppError;
use crate::federation::gateway::{GatewayRequest, connection_id, forward};
use crate::http::extract::{
    AuthUser, JSON_BODY_LIMIT, body_bytes, request_ctx, respond, route, signed_in, with_ctx,
};
use crate::http::openapi::schemas::ErrorBody;
use crate::http::request::RequestCtx;
use crate::rate_limit::FEDERATION_GATEWAY;

/// The gateway's path prefix, before `:connectionId`.
const GATEWAY_PREFIX: &str = "/api/v1/federation/s/";

/// ANY /api/v1/federation/s/:connectionId/api/v1/* — the gateway.
#[utoipa::path(
    method(get, post, put, patch, delete),
    path = "/api/v1/federation/s/{connectionId}/api/v1/{path}",
    tag = "federation",
    description = "Relays the request to `/api/v1/{path}` of the connected server, with the connection's member token \
        as its bearer (the caller's own credentials are dropped): any method, the query string, `Accept`, and a JSON body \
        (at most 512 KB). `{path}` is the rest of the path and may span several segments (`calendars/{id}/members`).",
    security(("bearer" = []), ("cookie" = [])),
    params(
        ("connectionId" = String, Path, description = "The connection's id (`GET /api/v1/federation/connections`)."),
        ("path" = String, Path, description = "The path on the connected server after its `/api/v1/`; may contain `/`."),
    ),
    request_body(content = Option<Object>, description = "Any JSON body, relayed (not for GET)."),
    responses(
        (status = 400, description = "The path leaves `/api/v1/`, the query string is unusable, or the body is not JSON.",
         body = ErrorBody),
        (status = 401, description = "No session, or the connection's credential can no longer be read (connect again).",
         body = ErrorBody),
        (status = 404, description = "The caller has no such connection.", body = ErrorBody),
        (status = 429, description = "Too many gateway requests from this address.", body = ErrorBody,
         headers(("Retry-After" = u64, description = "Seconds until another try is allowed."))),
        (status = 502, description = "The connected server could not be reached (`FederatedServerUnreachable`), or answered with a content type the API itself never answers with (`FederatedAnswerRefused`): only JSON, `text/plain`, `text/calendar` and JPEG, PNG or WebP images are relayed, each with `Content-Security-Policy: sandbox`.",
         body = super::UnreachableServer),
        (status = "default", description = "The connected server's answer, relayed with its status and content type.",
         body = Object),
    )
)]
pub(super) fn gateway(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    warp::path!("api" / "v1" / "federation" / "s" / ..)
        .and(route("/api/v1/federation/s/:connectionId/api/v1/*"))
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
                            user_id: user.id().clone(),
                            connection: connection_id(connection)?,
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
