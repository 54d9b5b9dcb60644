//! The gateway: a signed-in user's request to a connected server, relayed.

use bytes::Bytes;
use http::{HeaderMap, Method};
use warp::reply::Response;
use warp::{Filter, Rejection};

use super::{limit, relay};
use crate::context::Ctx;
use crate::error::AppError;
use crate::federation::gateway::{GatewayRequest, forward};
use crate::http::extract::{
    AuthUser, JSON_BODY_LIMIT, body_bytes, request_ctx, respond, route, signed_in, with_ctx,
};
use crate::http::request::RequestCtx;
use crate::rate_limit::FEDERATION_GATEWAY;

/// The gateway's path prefix, before `:connectionId`.
const GATEWAY_PREFIX: &str = "/api/v1/federation/s/";

/// ANY /api/v1/federation/s/:connectionId/api/v1/* — the gateway.
pub(super) fn gateway(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
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
