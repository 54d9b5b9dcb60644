//! The organizer's side of a published page: `GET/PUT/DELETE
//! /api/v1/events/:eventId/share`, for whoever may edit the event. Publishing and revoking
//! are edits of the event's batch, run by its home calendar's actor.

use crate::http::endpoint::endpoint;
use chrono::Utc;
use http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use crate::actors::calendar::EventCommand;
use crate::commands::events::publishing;
use crate::context::Ctx;
use crate::domain::event_pages::{
    AttendeeVisibility, PageMode, PageTheme, Publication, given_name,
};
use crate::error::AppError;
use crate::http::events::event_id;
use crate::http::extract::{AuthUser, json_body, respond, signed_in, with_ctx};
use crate::http::openapi::schemas::ErrorBody;
use crate::store::event_shares::PublishedPage;
use crate::store::users;

/// An event's publication, as its organizer sees it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct ShareView {
    /// What readers learn of who is coming.
    attendee_visibility: AttendeeVisibility,
    /// Whether the page may be indexed.
    indexable: bool,
    /// Who may read it.
    mode: PageMode,
    /// Its look.
    theme: PageTheme,
    /// The page's token (128 random bits, hex): knowing it opens the page.
    token: String,
    /// The page's address: `<server>/e/<token>`.
    url: String,
}

impl ShareView {
    fn new(ctx: &Ctx, page: PublishedPage) -> Self {
        let publication = page.publication;
        Self {
            attendee_visibility: publication.attendee_visibility,
            indexable: publication.indexable,
            mode: publication.mode,
            theme: publication.theme,
            url: format!("{}/e/{}", ctx.base_url.trim_end_matches('/'), page.token),
            token: page.token,
        }
    }
}

/// How to publish an event.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct PublishBody {
    /// `link` (anyone with the address) or `public` (the same, and it may be indexed).
    mode: PageMode,
    /// Whether the page may say crawlers are welcome (only with `public`; default false).
    #[serde(default)]
    indexable: bool,
    /// What readers learn of who is coming (default `counts`).
    #[serde(default)]
    attendee_visibility: AttendeeVisibility,
    /// The page's look: one option of each closed set (a missing one is its default).
    #[serde(default)]
    theme: PageTheme,
    /// The organizer's display name, used only if their account has none yet (at most 80
    /// characters; longer is cut).
    #[serde(default)]
    #[schema(max_length = 80)]
    name: Option<String>,
}

const INVALID_PUBLISH: &str = "mode must be 'link' or 'public'; attendeeVisibility counts, names or hidden; theme one of the page styles...";

/// GET /api/v1/events/:eventId/share — the event's live publication, or `null`.
#[utoipa::path(
    get,
    path = "/api/v1/events/{eventId}/share",
    tag = "event pages",
    security(("bearer" = []), ("cookie" = [])),
    params(("eventId" = Uuid, Path, description = "The event's id.")),
    responses(
        (status = 200, description = "The live publication, or null if the event is not published.", body = Option<ShareView>),
        (status = 403, description = "The caller may not edit this event.", body = ErrorBody),
        (status = 404, description = "No such event.", body = ErrorBody),
    )
)]
pub(super) fn get_share(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "events" / {eventId: String} / "share")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(get_share_handler(&ctx, &user, &id).await)
        })
}

async fn get_share_handler(ctx: &Ctx, user: &AuthUser, id: &str) -> Result<Response, AppError> {
    let event = event_id(id)?;
    let page = publishing::published(&ctx.services, user.id(), event).await?;
    let view = page.map(|page| ShareView::new(ctx, page));
    Ok(warp::reply::json(&view).into_response())
}

/// PUT /api/v1/events/:eventId/share — publishes the event, or changes how (the token is
/// kept); turns the event's attendee list on.
#[utoipa::path(
    put,
    path = "/api/v1/events/{eventId}/share",
    tag = "event pages",
    security(("bearer" = []), ("cookie" = [])),
    params(("eventId" = Uuid, Path, description = "The event's id.")),
    request_body = PublishBody,
    responses(
        (status = 200, description = "The live publication (a live page keeps its token; a revoked one is never reissued).", body = ShareView),
        (status = 400, description = "An unknown mode, visibility or page style, or `indexable` without `public`.", body = ErrorBody),
        (status = 403, description = "The caller may not edit this event.", body = ErrorBody),
        (status = 404, description = "No such event.", body = ErrorBody),
    )
)]
pub(super) fn put_share(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "events" / {eventId: String} / "share")
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<PublishBody>(INVALID_PUBLISH))
        .and_then(
            |id: String, ctx: Ctx, user: AuthUser, body: PublishBody| async move {
                respond(put_share_handler(&ctx, &user, &id, body).await)
            },
        )
}

async fn put_share_handler(
    ctx: &Ctx,
    user: &AuthUser,
    id: &str,
    body: PublishBody,
) -> Result<Response, AppError> {
    let event = event_id(id)?;
    let publication = Publication::new(
        body.mode,
        body.indexable,
        body.attendee_visibility,
        body.theme,
    )
    .map_err(AppError::bad_request)?;
    let actor = user.id().clone();
    let page = ctx
        .ask_event_home(event, |reply| EventCommand::Publish {
            by: actor,
            event,
            publication,
            reply,
        })
        .await?
        .ok_or_else(|| AppError::internal("publishing answered no page"))?;
    // "Organized by" reads the profile: an account made a moment ago by an emailed code has
    // no name yet. Only an empty name is filled, never a real one replaced.
    if let Some(name) = body.name.as_deref().and_then(given_name) {
        users::name_if_nameless(&ctx.db, user.id(), &name, Utc::now()).await?;
    }
    Ok(warp::reply::json(&ShareView::new(ctx, page)).into_response())
}

/// DELETE /api/v1/events/:eventId/share — revokes the page (its token stays dead).
#[utoipa::path(
    delete,
    path = "/api/v1/events/{eventId}/share",
    tag = "event pages",
    security(("bearer" = []), ("cookie" = [])),
    params(("eventId" = Uuid, Path, description = "The event's id.")),
    responses(
        (status = 204, description = "Not published any more (also when it was not)."),
        (status = 403, description = "The caller may not edit this event.", body = ErrorBody),
        (status = 404, description = "No such event.", body = ErrorBody),
    )
)]
pub(super) fn delete_share(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "events" / {eventId: String} / "share")
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(delete_share_handler(&ctx, &user, &id).await)
        })
}

async fn delete_share_handler(ctx: &Ctx, user: &AuthUser, id: &str) -> Result<Response, AppError> {
    let event = event_id(id)?;
    let actor = user.id().clone();
    ctx.ask_event_home(event, |reply| EventCommand::Unpublish {
        by: actor,
        event,
        reply,
    })
    .await?;
    Ok(warp::reply::with_status(warp::reply(), StatusCode::NO_CONTENT).into_response())
}
