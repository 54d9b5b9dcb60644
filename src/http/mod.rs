//! The warp edge: one module per resource. Filters parse, authenticate and hand off to
//! actors or the store; they never build error responses (the renderer does, last).
//!
//! [`routes`] assembles the inner part of the pipeline (routes, then the renderer); the
//! outer stages (metrics, request id and access log, CORS) live in [`pipeline`], and
//! [`server`] runs the listener. Static paths are registered before parameterised paths
//! that could collide with them.

pub mod avatars;
pub mod calendars;
pub mod cors;
pub mod event_read_cache;
pub mod event_reads;
pub mod events;
pub mod extract;
pub mod html;
pub mod ics;
pub mod invite_preview;
pub mod invites;
pub mod json_text;
pub mod members;
pub mod metrics_endpoint;
pub mod pages;
pub mod pipeline;
pub mod rate_limit;
pub mod rejection;
pub mod reminders;
pub mod request;
pub mod server;
pub mod server_info;
pub mod settings;
pub mod stream;
pub mod users;

use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection};

use crate::context::Ctx;
use request::RequestCtx;

/// All routes of the public listener, finished by the error renderer: the authentication
/// subsystem first, then the application API, the stream and the pages.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    let auth = crate::auth::routes::routes(ctx.clone());
    let application = server_info::routes(ctx.clone())
        .or(users::routes(ctx.clone()))
        .unify()
        .or(settings::routes(ctx.clone()))
        .unify()
        .or(avatars::routes(ctx.clone()))
        .unify()
        .or(reminders::routes(ctx.clone()))
        .unify()
        .or(pages::routes(ctx.clone()))
        .unify()
        .or(invites::routes(ctx.clone()))
        .unify()
        .or(members::routes(ctx.clone()))
        .unify()
        .or(ics::routes(ctx.clone()))
        .unify()
        .or(calendars::routes(ctx.clone()))
        .unify()
        .or(events::routes(ctx.clone()))
        .unify()
        .or(stream::routes(ctx.clone()))
        .unify()
        .or(html::routes(ctx))
        .unify()
        .boxed();
    render_errors(auth.or(application).unify().boxed())
}

/// The renderer: turns whatever rejection reaches the end into the JSON error response,
/// with the request's id.
fn render_errors(routes: BoxedFilter<(Response,)>) -> BoxedFilter<(Response,)> {
    let outcome = routes
        .map(Ok::<Response, Rejection>)
        .or_else(|rejection| async move { Ok::<_, Rejection>((Err(rejection),)) });
    extract::request_ctx()
        .and(outcome)
        .map(
            |rctx: RequestCtx, outcome: Result<Response, Rejection>| match outcome {
                Ok(response) => response,
                Err(rejection) => rejection::render_rejection(&rctx, &rejection),
            },
        )
        .boxed()
}
