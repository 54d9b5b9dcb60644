//! Server identity and health: `GET /api/v1/server` and `GET /api/v1/server/ok` (public).

use crate::http::endpoint::endpoint;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Reply};

use super::conditional::{self, EntityTag, if_none_match};
use super::extract::with_ctx;
use crate::context::Ctx;
use crate::domain::version::{IMPLEMENTATION, MIN_CLIENT_VERSION, WIRE_VERSION};

/// The server operations of the OpenAPI document (the `server` tag is the document frame's).
#[derive(OpenApi)]
#[openapi(
    paths(server_info, server_health),
    components(schemas(ServerInfoResponse, HealthResponse))
)]
pub struct Api;

/// `GET /api/v1/server` body.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfoResponse {
    /// API wire version clients and peers compare.
    pub version: &'static str,
    /// Oldest supported client version.
    pub min_client_version: &'static str,
    /// This implementation (`bowline/x.y.z`).
    pub implementation: &'static str,
    /// Native sign-in providers this server has credentials for.
    pub socials: Vec<&'static str>,
    /// Sign-in providers a browser can complete (Bowline offers native id-token sign-in only).
    pub socials_web: Vec<&'static str>,
    /// Calendar providers that can be connected.
    pub sync_providers: Vec<&'static str>,
    /// Whether mail can be delivered.
    pub email: bool,
    /// Whether sign-in requires a verified email.
    pub email_verification_required: bool,
    /// The VAPID public key browsers subscribe to web push with; null when this server
    /// does not push.
    pub push_public_key: Option<String>,
}

/// `GET /api/v1/server/ok` body.
#[derive(Debug, Serialize, ToSchema)]
pub struct HealthResponse {
    /// Always `true` when the server answers.
    pub ok: bool,
    /// API wire version.
    pub version: &'static str,
}

/// The server routes.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    server_health().or(server_info(ctx)).unify().boxed()
}

/// GET /api/v1/server/ok — liveness with the version.
#[utoipa::path(
    get,
    path = "/api/v1/server/ok",
    tag = "server",
    responses(
        (status = 200, description = "The server answers.", body = HealthResponse),
    )
)]
fn server_health() -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone {
    endpoint!("api" / "v1" / "server" / "ok")
        .and(warp::get())
        .map(|| {
            warp::reply::json(&HealthResponse {
                ok: true,
                version: WIRE_VERSION,
            })
            .into_response()
        })
}

/// GET /api/v1/server — what this server offers, for clients deciding what to show.
#[utoipa::path(
    get,
    path = "/api/v1/server",
    tag = "server",
    params(("If-None-Match" = Option<String>, Header, description = "The `ETag` of the answer the client holds.")),
    responses(
        (status = 200, description = "The server's versions and what it offers.", body = ServerInfoResponse,
         headers(("ETag" = String, description = "The answer's version (it changes with the configuration)."))),
        (status = 304, description = "The client's answer is current."),
    )
)]
fn server_info(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone {
    endpoint!("api" / "v1" / "server")
        .and(warp::get())
        .and(with_ctx(ctx))
        .and(if_none_match())
        .map(|ctx: Ctx, if_none_match: Option<String>| {
            let info = server_info_handler(&ctx);
            // What the answer is built from only changes with the server's configuration.
            let versions = format!(
                "{}|{}|{}|{:?}|{:?}|{}|{:?}",
                info.version,
                info.min_client_version,
                info.implementation,
                info.socials,
                info.sync_providers,
                info.email,
                info.push_public_key
            );
            let tag = EntityTag::public("server", &versions);
            conditional::answer(&tag, if_none_match.as_deref(), || {
                warp::reply::json(&info).into_response()
            })
        })
}

fn server_info_handler(ctx: &Ctx) -> ServerInfoResponse {
    let caps = &ctx.capabilities;
    ServerInfoResponse {
        version: WIRE_VERSION,
        min_client_version: MIN_CLIENT_VERSION,
        implementation: IMPLEMENTATION,
        socials: caps.socials.clone(),
        socials_web: Vec::new(),
        sync_providers: caps.sync_providers.clone(),
        email: caps.email,
        email_verification_required: false,
        push_public_key: caps.push_public_key.clone(),
    }
}
