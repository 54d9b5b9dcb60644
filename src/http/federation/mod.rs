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
use home::{connect, disconnect_musubi, disconnect_svc, list_connections, preview};
use origin::{accept, rotate_token};

use http::HeaderValue;
use serde::Serialize;
use utoipa::{Modify, OpenApi, ToSchema};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use super::request::RequestCtx;
use crate::commands::federation::{Accepted, Rotated};
use crate::context::Ctx;
use crate::error::AppError;
use crate::federation::home::{Connected, ConnectionView};
use crate::federation::peer::PeerAnswer;
use crate::rate_limit::Rule;
use crate::views::calendars::CalendarRowView;

/// The federation operations of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(
        origin::accept,
        origin::rotate_token,
        home::list_connections,
        home::preview,
        home::connect,
        home::disconnect_svc,
        home::disconnect_musubi,
        gateway::gateway
    ),
    components(schemas(
        origin::AcceptBody,
        FederationProfile,
        Accepted,
        CalendarRowView,
        Rotated,
        ConnectionView,
        home::ConnectBody,
        Connected,
        home::DisconnectBody,
        UnreachableServer
    )),
    modifiers(&GatewayOperationIds),
    tags((name = "federation", description = "Federation: members of other servers joining calendars here (origin side), \
        this server's users connecting to other servers' calendars (home side), and the gateway to them."))
)]
pub struct Api;

/// Gives each method of the gateway its own operation id (`gateway_get`, ...): one route
/// function describes them all.
struct GatewayOperationIds;

impl Modify for GatewayOperationIds {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for (method, operation) in [
                ("get", item.get.as_mut()),
                ("post", item.post.as_mut()),
                ("put", item.put.as_mut()),
                ("patch", item.patch.as_mut()),
                ("delete", item.delete.as_mut()),
            ] {
                if let Some(operation) = operation
                    && operation.operation_id.as_deref() == Some("gateway")
                {
                    operation.operation_id = Some(format!("gateway_{method}"));
                }
            }
        }
    }
}

/// A member of another server as it announces itself in an accept (display claims only).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FederationProfile {
    /// The display name (1 to 200 characters once trimmed).
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// The email address (stored lowercase).
    #[schema(format = Email)]
    pub email: String,
    /// The member's server: a bare http(s) origin like `https://calendar.example.com`.
    #[schema(format = "uri")]
    pub home_server: String,
    /// The avatar's URL (at most 2048 bytes), or `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 2048)]
    pub image: Option<String>,
}

/// The 502 of an unreachable federated server: `{error: "FederatedServerUnreachable",
/// message, requestId, server}`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnreachableServer {
    /// `FederatedServerUnreachable`, or the gateway's `FederatedAnswerRefused`.
    pub error: String,
    /// What went wrong, for people.
    pub message: String,
    /// The request's id.
    pub request_id: String,
    /// The connected server's origin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

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
    disconnect_svc(ctx.clone())
        .or(disconnect_musubi(ctx))
        .unify()
        .boxed()
}

/// Counts a hit of the caller's address under `rule`.
fn limit(ctx: &Ctx, rctx: &RequestCtx, rule: Rule) -> Result<(), AppError> {
    ctx.limits.admit(rule, &rctx.client_ip().to_string())
}

/// A peer's answer as this server's response: its status and body, and its
/// `Content-Type` (or `content_type` instead). Whatever it holds, a browser renders it in a
/// sandbox (no scripts, an opaque origin): `Content-Security-Policy: sandbox`.
fn relay(answer: PeerAnswer, content_type: Option<&'static str>) -> Response {
    let mut response = Response::new(answer.body.into());
    *response.status_mut() = answer.status;
    let content_type = content_type
        .map(HeaderValue::from_static)
        .or(answer.content_type);
    let headers = response.headers_mut();
    if let Some(content_type) = content_type {
        headers.insert(http::header::CONTENT_TYPE, content_type);
    }
    headers.insert(
        http::header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox; frame-ancestors 'none'"),
    );
    response
}
