//! The public side of a published page: `GET /api/v1/public/events/:token` (no session;
//! exactly the page's fields, nothing that leads further) and `GET/PUT …/rsvp` (a session
//! with a verified email; the answer lands in the event's attendee list through the event's
//! calendar actor). Each is rate-limited per address.

use crate::http::endpoint::endpoint;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use crate::actors::calendar::EventCommand;
use crate::commands::events::publishing;
use crate::context::Ctx;
use crate::domain::event_pages::{Answer, PageTheme, Rsvp, RsvpSummary, given_name};
use crate::domain::events::Attendance;
use crate::domain::ids::{UserId, is_random_token};
use crate::error::AppError;
use crate::http::extract::{AuthUser, json_body, request_ctx, respond, signed_in, with_ctx};
use crate::http::openapi::schemas::ErrorBody;
use crate::http::request::RequestCtx;
use crate::rate_limit::{PUBLIC_EVENT_ANSWER, PUBLIC_EVENT_ANSWERS, PUBLIC_EVENT_READ};
use crate::store::event_shares::{self, OpenedPage};
use crate::store::{attendance, users};

const INVALID_RSVP: &str = "status must be going, maybe or declined...";

/// What an anonymous reader of a published page gets: exactly these fields, built one by
/// one (no ids, emails, calendars, attendees or other events).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct PublicEventView {
    /// Description.
    description: Option<String>,
    /// End.
    #[serde(serialize_with = "crate::views::timestamp")]
    end: DateTime<Utc>,
    /// Whether the page may be indexed.
    indexable: bool,
    /// All-day.
    is_all_day: bool,
    /// Cancelled.
    is_canceled: bool,
    /// Location.
    location: Option<String>,
    /// The organizer's display name.
    organizer: String,
    /// The recurrence rule (the page works out the next occurrence in the reader's zone).
    recurrence: Option<String>,
    /// Start (of the series, for a recurring event).
    #[serde(serialize_with = "crate::views::timestamp")]
    start: DateTime<Utc>,
    /// The page's look.
    theme: PageTheme,
    /// Title.
    title: String,
    /// The event's link.
    url: Option<String>,
}

impl From<OpenedPage> for PublicEventView {
    fn from(opened: OpenedPage) -> Self {
        let OpenedPage {
            page,
            event,
            organizer,
        } = opened;
        Self {
            description: event.description,
            end: event.end,
            indexable: page.publication.indexable,
            is_all_day: event.is_all_day,
            is_canceled: event.is_canceled,
            location: event.location,
            organizer,
            recurrence: event.recurrence,
            start: event.start,
            theme: page.publication.theme,
            title: event.title,
            url: event.url,
        }
    }
}

/// The live page `token` opens (404 for anything else, malformed tokens included).
async fn open_page(ctx: &Ctx, token: &str) -> Result<OpenedPage, AppError> {
    if !is_random_token(token) {
        return Err(publishing::page_not_found());
    }
    event_shares::open(&ctx.db, token)
        .await?
        .ok_or_else(publishing::page_not_found)
}

/// GET /api/v1/public/events/:token — the published page (no session).
#[utoipa::path(
    get,
    path = "/api/v1/public/events/{token}",
    tag = "event pages",
    params(("token" = String, Path, description = "The page's token.")),
    responses(
        (status = 200, description = "The page.", body = PublicEventView),
        (status = 404, description = "No live page (revoked, deleted event, or never issued).", body = ErrorBody),
        (status = 429, description = "More than 60 reads in 15 minutes from this address (see `Retry-After`).",
         body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until another read is allowed."))),
    )
)]
pub(super) fn public_event(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "public" / "events" / {token: String})
        .and(warp::get())
        .and(with_ctx(ctx))
        .and(request_ctx())
        .and_then(|token: String, ctx: Ctx, rctx: RequestCtx| async move {
            respond(public_event_handler(&ctx, &rctx, &token).await)
        })
}

async fn public_event_handler(
    ctx: &Ctx,
    rctx: &RequestCtx,
    token: &str,
) -> Result<Response, AppError> {
    ctx.limits
        .admit(PUBLIC_EVENT_READ, &rctx.client_ip().to_string())?;
    let page = open_page(ctx, token).await?;
    Ok(warp::reply::json(&PublicEventView::from(page)).into_response())
}

/// An answer on a published page.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RsvpBody {
    /// The answer.
    status: Rsvp,
    /// The guest's name: needed the first time an account without one answers; used only
    /// if the account has none (at most 80 characters; longer is cut).
    #[serde(default)]
    #[schema(max_length = 80)]
    name: Option<String>,
}

/// The caller may answer pages only with an address they proved.
fn require_verified(user: &AuthUser) -> Result<(), AppError> {
    if user.user().email_verified {
        Ok(())
    } else {
        Err(AppError::forbidden(
            "Verify your email before answering this event.",
        ))
    }
}

/// The summary `reader` gets of `answers` (`(user id, name, status)`) under the page's
/// visibility.
fn summary<'a>(
    page: &OpenedPage,
    reader: &UserId,
    answers: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
) -> RsvpSummary {
    RsvpSummary::of(
        answers.into_iter().filter_map(|(id, name, status)| {
            Some(Answer {
                mine: id == reader.as_str(),
                name,
                status: Rsvp::from_stored(status)?,
            })
        }),
        page.page.publication.attendee_visibility,
    )
}

/// GET /api/v1/public/events/:token/rsvp — the caller's answer and what the page shows of
/// the others'.
#[utoipa::path(
    get,
    path = "/api/v1/public/events/{token}/rsvp",
    tag = "event pages",
    security(("bearer" = []), ("cookie" = [])),
    params(("token" = String, Path, description = "The page's token.")),
    responses(
        (status = 200, description = "The caller's answer, and the counts and names as the organizer lets readers see them.", body = RsvpSummary),
        (status = 403, description = "The caller's email is not verified.", body = ErrorBody),
        (status = 404, description = "No live page.", body = ErrorBody),
        (status = 429, description = "More than 60 reads in 15 minutes from this address.", body = ErrorBody),
    )
)]
pub(super) fn get_rsvp(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "public" / "events" / {token: String} / "rsvp")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(request_ctx())
        .and(signed_in(ctx))
        .and_then(
            |token: String, ctx: Ctx, rctx: RequestCtx, user: AuthUser| async move {
                respond(get_rsvp_handler(&ctx, &rctx, &user, &token).await)
            },
        )
}

async fn get_rsvp_handler(
    ctx: &Ctx,
    rctx: &RequestCtx,
    user: &AuthUser,
    token: &str,
) -> Result<Response, AppError> {
    ctx.limits
        .admit(PUBLIC_EVENT_ANSWERS, &rctx.client_ip().to_string())?;
    require_verified(user)?;
    let page = open_page(ctx, token).await?;
    let answers = attendance::list(&ctx.db, page.event.id).await?;
    let summary = summary(
        &page,
        user.id(),
        answers
            .iter()
            .map(|a| (a.id.as_str(), a.name.as_str(), a.status.as_str())),
    );
    Ok(warp::reply::json(&summary).into_response())
}

/// PUT /api/v1/public/events/:token/rsvp — answers the event (into its attendee list; its
/// members get `attendance_changed`).
#[utoipa::path(
    put,
    path = "/api/v1/public/events/{token}/rsvp",
    tag = "event pages",
    security(("bearer" = []), ("cookie" = [])),
    params(("token" = String, Path, description = "The page's token.")),
    request_body = RsvpBody,
    responses(
        (status = 200, description = "The summary after the answer.", body = RsvpSummary),
        (status = 400, description = "An unknown answer, or no name for an account without one.", body = ErrorBody),
        (status = 403, description = "The caller's email is not verified.", body = ErrorBody),
        (status = 404, description = "No live page.", body = ErrorBody),
        (status = 429, description = "More than 30 answers in 15 minutes from this address.", body = ErrorBody),
    )
)]
pub(super) fn put_rsvp(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "public" / "events" / {token: String} / "rsvp")
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(request_ctx())
        .and(signed_in(ctx))
        .and(json_body::<RsvpBody>(INVALID_RSVP))
        .and_then(
            |token: String, ctx: Ctx, rctx: RequestCtx, user: AuthUser, body: RsvpBody| async move {
                respond(put_rsvp_handler(&ctx, &rctx, &user, &token, body).await)
            },
        )
}

async fn put_rsvp_handler(
    ctx: &Ctx,
    rctx: &RequestCtx,
    user: &AuthUser,
    token: &str,
    body: RsvpBody,
) -> Result<Response, AppError> {
    ctx.limits
        .admit(PUBLIC_EVENT_ANSWER, &rctx.client_ip().to_string())?;
    require_verified(user)?;
    let name = body.name.as_deref().and_then(given_name);
    if name.is_none() && user.user().name.trim().is_empty() {
        return Err(AppError::bad_request(
            "name is required the first time you answer...",
        ));
    }
    let page = open_page(ctx, token).await?;
    if let Some(name) = &name {
        users::name_if_nameless(&ctx.db, user.id(), name, Utc::now()).await?;
    }
    let answer = match body.status {
        Rsvp::Going => Attendance::Going,
        Rsvp::Maybe => Attendance::Maybe,
        Rsvp::Declined => Attendance::Declined,
    };
    let actor = user.id().clone();
    let event = page.event.id;
    let attendees = ctx
        .ask_event_home(event, |reply| EventCommand::SetAttendance {
            by: actor,
            event,
            answer,
            page: Some(token.to_owned()),
            reply,
        })
        .await?;
    let summary = summary(
        &page,
        user.id(),
        attendees
            .iter()
            .map(|a| (a.id.as_str(), a.name.as_str(), a.status.as_str())),
    );
    Ok(warp::reply::json(&summary).into_response())
}
