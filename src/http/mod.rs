//! The warp edge: one module per resource. Filters parse, authenticate and hand off; they
//! never build error responses (the renderer does, last). Where a request goes is decided by
//! what it does:
//!
//! - a change to an existing calendar, its members, invites or events: to that calendar's
//!   actor ([`crate::actors::Shared::ask_calendar`]), its single writer, which runs the
//!   command;
//! - a change of the caller's own data that others must hear of (settings, pages, reminder
//!   rules): to its command in [`crate::commands`], which commits and sends the frames;
//! - a read, or a change that is only its own rows (a new calendar, an avatar): to the
//!   store, whose operations are each one transaction;
//! - `/api/auth/*` keeps better-auth's wire in [`auth_routes`].
//!
//! [`routes`] assembles the inner part of the pipeline (routes, then the renderer); the
//! outer stages (metrics, request id and access log, CORS) live in [`pipeline`], and
//! [`server`] runs the listener. Static paths are registered before parameterised paths
//! that could collide with them.

pub mod auth_routes;
pub mod avatars;
pub mod body;
pub mod calendars;
pub mod conditional;
pub mod connections;
pub mod cors;
pub mod endpoint;
pub mod event_bodies;
pub mod event_pages;
pub mod event_reads;
pub mod events;
pub mod extract;
pub mod federation;
pub mod html;
pub mod ics;
pub mod input;
pub mod invite_preview;
pub mod invites;
pub mod json_text;
pub mod members;
pub mod metrics_endpoint;
pub mod openapi;
pub mod pages;
pub mod pipeline;
pub mod polls;
pub mod preface;
pub mod provider_accounts;
pub mod push;
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
/// subsystem first, then the application API by resource, the stream and the pages.
///
/// Each resource's routes sit behind a check of the path's first segments, so a request
/// is matched against its own resource's routes only, not against every route registered
/// before them; the resources' prefixes are disjoint, so their order changes no match.
/// Events, the busiest, come first.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    let auth = auth_routes::routes(ctx.clone());
    let events = events::routes(ctx.clone())
        .or(event_pages::share_routes(ctx.clone()))
        .unify();
    let application = under(&["api", "v1", "events"], events)
        .or(under(
            &["api", "v1", "calendars"],
            invites::routes(ctx.clone())
                .or(members::routes(ctx.clone()))
                .unify()
                .or(ics::routes(ctx.clone()))
                .unify()
                .or(calendars::routes(ctx.clone()))
                .unify(),
        ))
        .unify()
        .or(under(
            &["api", "v1", "users"],
            users::routes(ctx.clone())
                .or(settings::routes(ctx.clone()))
                .unify()
                .or(avatars::routes(ctx.clone()))
                .unify()
                .or(provider_accounts::routes(ctx.clone()))
                .unify()
                .or(federation::disconnect_routes(ctx.clone()))
                .unify(),
        ))
        .unify()
        .or(under(
            &["api", "v1", "federation"],
            federation::routes(ctx.clone()),
        ))
        .unify()
        .or(under(&["api", "v1", "pages"], pages::routes(ctx.clone())))
        .unify()
        .or(under(
            &["api", "v1", "scheduling"],
            polls::routes(ctx.clone()),
        ))
        .unify()
        .or(under(
            &["api", "v1", "public", "polls"],
            polls::public_routes(ctx.clone()),
        ))
        .unify()
        .or(under(
            &["api", "v1", "public", "events"],
            event_pages::public_routes(ctx.clone()),
        ))
        .unify()
        .or(under(&["api", "v1", "push"], push::routes(ctx.clone())))
        .unify()
        .or(under(
            &["api", "v1", "reminders"],
            reminders::routes(ctx.clone()),
        ))
        .unify()
        .or(under(
            &["api", "v1", "server"],
            server_info::routes(ctx.clone()),
        ))
        .unify()
        .or(under(&["api", "v1", "openapi.json"], openapi::routes()))
        .unify()
        .or(under(&["api", "stream"], stream::routes(ctx.clone())))
        .unify()
        .or(html::routes(ctx))
        .unify()
        .boxed();
    render_errors(auth.or(application).unify().boxed())
}

/// `routes`, tried only for paths that begin with the segments `prefix` (any other path is
/// not found here, without running them).
fn under<F>(prefix: &'static [&'static str], routes: F) -> BoxedFilter<(Response,)>
where
    F: Filter<Extract = (Response,), Error = Rejection> + Clone + Send + Sync + 'static,
{
    warp::path::peek()
        .and_then(move |path: warp::path::Peek| async move {
            if starts_with_segments(path.as_str(), prefix) {
                Ok(())
            } else {
                Err(warp::reject::not_found())
            }
        })
        .untuple_one()
        .and(routes)
        .boxed()
}

/// Whether `path` (without its leading slash) begins with the segments `prefix`.
fn starts_with_segments(path: &str, prefix: &[&str]) -> bool {
    let mut segments = path.split('/');
    prefix.iter().all(|wanted| segments.next() == Some(*wanted))
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

#[cfg(test)]
mod tests {
    use super::starts_with_segments;

    #[test]
    fn a_prefix_matches_whole_segments_only() {
        let events = ["api", "v1", "events"];
        assert!(starts_with_segments("api/v1/events", &events));
        assert!(starts_with_segments("api/v1/events/", &events));
        assert!(starts_with_segments("api/v1/events/abc/link", &events));
        assert!(!starts_with_segments("api/v1/eventsx", &events));
        assert!(!starts_with_segments("api/v1", &events));
        assert!(!starts_with_segments("", &events));
        assert!(!starts_with_segments("api/v2/events", &events));
    }
}
