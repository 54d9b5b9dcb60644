//! Federation (under `/api/v1/federation`, and `DELETE /api/v1/users/connections/svc`):
//!
//! - origin side ([`origin`]): `POST …/accept` (public, rate-limited per address) and `POST
//!   …/token/rotate` (a member token);
//! - home side, for signed-in users ([`home`]): `GET …/preview`, `POST …/connect`, `GET
//!   …/connections`, `DELETE /api/v1/users/connections/svc` (or `…/musubi`, the original's
//!   name);
//! - the gateway `ANY …/s/:connectionId/api/v1/*` ([`gateway`]).
//!
//! Bodies and messages follow the original's wire (`musubi-wire.md` §8).

mod gateway;
mod home;
mod origin;

use gateway::gateway;
use home::{connect, disconnect, list_connections, preview};
use origin::{accept, rotate_token};

use std::time::Instant;

use http::HeaderValue;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use super::request::RequestCtx;
use crate::context::Ctx;
use crate::error::AppError;
use crate::federation::peer::PeerAnswer;
use crate::rate_limit::Rule;

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

/// This resource's operations in the OpenAPI document (see [`crate::http::openapi`]).
#[derive(utoipa::OpenApi)]
pub struct Api;
