//! Events: `POST`, `PUT`, `DELETE /api/v1/events`, `POST /api/v1/events/:eventId/link` and
//! `/fork`, `GET /api/v1/events/:eventId/attendees`, `PUT /api/v1/events/:eventId/attendance`,
//! and the reads of [`super::event_reads`].
//!
//! Input is validated here, before any authorization or database access; every change is
//! a command to the event's home calendar actor (a fork, to the target's).

use crate::http::endpoint::endpoint;
use http::StatusCode;
use serde::Deserialize;
use utoipa::{OpenApi, ToSchema};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::event_bodies::{AttendanceBody, EventBody};
use super::extract::{AuthUser, json_body, respond, session_or_member_token, with_ctx};
use crate::actors::calendar::EventCommand;
use crate::commands::events::links as event_links;
use crate::context::Ctx;
use crate::domain::events::{Attendance, EventInput, EventUpdate};
use crate::domain::ids::{CalendarId, EventId, canonical_uuid, require_uuid};
use crate::error::AppError;
use crate::http::input::Lenient;
use crate::http::openapi::schemas::{ErrorBody, StaleRevision};
use crate::views::events::{AttendeeView, DeletedEventView, EventView};

/// The event operations of the OpenAPI document (the reads are in
/// [`super::event_reads::Api`]).
#[derive(OpenApi)]
#[openapi(
    paths(
        create_event,
        update_event,
        delete_event,
        link_event,
        fork_event,
        list_attendees,
        set_attendance
    ),
    components(schemas(
        EventBody,
        EventView,
        DeletedEventView,
        DeleteBody,
        TargetBody,
        AttendanceBody,
        AttendeeView
    )),
    tags((name = "events", description = "Events: reads, changes, links, forks and attendance."))
)]
pub struct Api;

/// The event routes.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    super::event_reads::list_events(ctx.clone())
        .or(create_event(ctx.clone()))
        .unify()
        .or(update_event(ctx.clone()))
        .unify()
        .or(delete_event(ctx.clone()))
        .unify()
        .or(link_event(ctx.clone()))
        .unify()
        .or(fork_event(ctx.clone()))
        .unify()
        .or(list_attendees(ctx.clone()))
        .unify()
        .or(set_attendance(ctx))
        .unify()
        .boxed()
}

const INVALID_CREATE: &str = "Request is missing valid event data...";
const INVALID_UPDATE: &str = "Request missing valid event data...";

/// A `:eventId` path segment: a canonical UUID, never an occurrence id.
pub(crate) fn event_id(text: &str) -> Result<EventId, AppError> {
    canonical_uuid(text)
        .map(EventId::from_uuid)
        .ok_or_else(|| AppError::bad_request("eventId must be an event id, not an occurrence."))
}

/// POST /api/v1/events — creates the event (client-chosen id), 201.
#[utoipa::path(
    post,
    path = "/api/v1/events",
    tag = "events",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    request_body = EventBody,
    responses(
        (status = 201, description = "The new event, as the caller sees it.", body = EventView),
        (status = 403, description = "The caller may not edit events in one of `calendars` (or is not a member).", body = ErrorBody),
        (status = 409, description = "`EVENT_EXISTS`: an event with this id exists; or `EVENT_CONFLICT`: a write raced this one (try again). `current` is null.",
         body = ErrorBody),
    )
)]
fn create_event(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "events")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and(json_body::<EventBody>(INVALID_CREATE))
        .and_then(|ctx: Ctx, user: AuthUser, body: EventBody| async move {
            respond(create_event_handler(&ctx, &user, body).await)
        })
}

async fn create_event_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: EventBody,
) -> Result<Response, AppError> {
    let input = EventInput::try_from(body)?;
    let home = input.home_for_create()?;
    let (actor, event) = (user.id().clone(), input.id);
    let view = ctx
        .ask_calendar(home, |reply| EventCommand::Create {
            by: actor,
            input,
            reply,
        })
        .await?;
    // Its edits go to the same actor without reading its home first.
    ctx.event_homes.remember(event, home);
    Ok(warp::reply::with_status(warp::reply::json(&view), StatusCode::CREATED).into_response())
}

/// PUT /api/v1/events — replaces the event (its home calendar governs editing); with a
/// `revision` older than the current one, a 409 with `current` instead.
#[utoipa::path(
    put,
    path = "/api/v1/events",
    tag = "events",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    request_body(content = EventBody, description = "The complete event (`creatorID` and `originCalendarID` cannot change)."),
    responses(
        (status = 200, description = "The updated event.", body = EventView),
        (status = 403, description = "The caller may not edit the event (its home calendar governs) or a calendar added or removed.", body = ErrorBody),
        (status = 409, description = "`EVENT_CONFLICT`: the event changed since `revision`, and `current` is the event now; or a write raced this one (`current` null, try again).",
         body = StaleRevision<EventView>),
    )
)]
fn update_event(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "events")
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and(json_body::<EventBody>(INVALID_UPDATE))
        .and_then(|ctx: Ctx, user: AuthUser, body: EventBody| async move {
            respond(update_event_handler(&ctx, &user, body).await)
        })
}

async fn update_event_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: EventBody,
) -> Result<Response, AppError> {
    let EventUpdate {
        input,
        base_revision,
    } = EventUpdate::try_from(body)?;
    let actor = user.id().clone();
    let view = ctx
        .ask_event_home(input.id, |reply| EventCommand::Update {
            by: actor,
            input,
            base_revision,
            reply,
        })
        .await?;
    Ok(warp::reply::json(&view).into_response())
}

/// DELETE /api/v1/events — deletes, or with `unlinkCalendarID` removes from one calendar.
#[utoipa::path(
    delete,
    path = "/api/v1/events",
    tag = "events",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    request_body = DeleteBody,
    responses(
        (status = 200, description = "The event is deleted, or taken out of `unlinkCalendarID`.", body = DeletedEventView),
        (status = 403, description = "The caller may not delete the event or unlink it from that calendar.", body = ErrorBody),
        (status = 409, description = "`EVENT_CONFLICT`: a write raced this one (try again; `current` is null).", body = ErrorBody),
    )
)]
fn delete_event(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "events")
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and(json_body::<Lenient<DeleteBody>>(INVALID_UPDATE))
        .and_then(
            |ctx: Ctx, user: AuthUser, body: Lenient<DeleteBody>| async move {
                respond(delete_event_handler(&ctx, &user, body.or_default()).await)
            },
        )
}

/// `DELETE /api/v1/events` body: `{id, unlinkCalendarID?}` (the Event document may be sent
/// whole; its other fields are ignored).
#[derive(Debug, Default, Deserialize, ToSchema)]
struct DeleteBody {
    /// The event.
    #[serde(default)]
    #[schema(value_type = Uuid, required = true)]
    id: Option<Lenient<String>>,
    /// Only take the event out of this calendar (it is deleted when no calendar keeps it).
    #[serde(rename = "unlinkCalendarID", default)]
    #[schema(value_type = Option<Uuid>)]
    unlink: Option<Lenient<String>>,
}

/// A deletion: the event, and the one calendar to take it out of, if only that.
struct Deletion {
    event: EventId,
    unlink: Option<CalendarId>,
}

impl TryFrom<DeleteBody> for Deletion {
    type Error = AppError;

    fn try_from(body: DeleteBody) -> Result<Self, AppError> {
        let event = body
            .id
            .and_then(Lenient::valid)
            .and_then(|id| canonical_uuid(&id))
            .map(EventId::from_uuid)
            .ok_or_else(|| AppError::bad_request("event.id must be a valid UUID."))?;
        let unlink = match body.unlink {
            None => None,
            Some(Lenient::Valid(id)) => Some(CalendarId::from_uuid(require_uuid(
                "unlinkCalendarID",
                &id,
            )?)),
            Some(Lenient::Invalid(_)) => {
                return Err(AppError::bad_request(
                    "unlinkCalendarID must be a valid UUID.",
                ));
            }
        };
        Ok(Self { event, unlink })
    }
}

async fn delete_event_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: DeleteBody,
) -> Result<Response, AppError> {
    let Deletion { event, unlink } = Deletion::try_from(body)?;
    let actor = user.id().clone();
    let deleted = ctx
        .ask_event_home(event, |reply| EventCommand::Delete {
            by: actor,
            event,
            unlink,
            reply,
        })
        .await?;
    if deleted.removed {
        ctx.event_homes.forget(event);
    }
    Ok(warp::reply::json(&deleted).into_response())
}

/// `{calendarID}`: the body of link and fork.
#[derive(Debug, Default, Deserialize, ToSchema)]
struct TargetBody {
    /// The target calendar.
    #[serde(rename = "calendarID", default)]
    #[schema(value_type = Uuid, required = true)]
    calendar: Option<Lenient<String>>,
}

impl TryFrom<TargetBody> for CalendarId {
    type Error = AppError;

    fn try_from(body: TargetBody) -> Result<Self, AppError> {
        body.calendar
            .and_then(Lenient::valid)
            .and_then(|id| canonical_uuid(&id))
            .map(CalendarId::from_uuid)
            .ok_or_else(|| AppError::bad_request("calendarID must be a valid UUID."))
    }
}

/// POST /api/v1/events/:eventId/link — the same event, also in the target calendar.
#[utoipa::path(
    post,
    path = "/api/v1/events/{eventId}/link",
    tag = "events",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(("eventId" = Uuid, Path, description = "The event's id (an occurrence id `<eventId>_<millis>` is a 400).")),
    request_body = TargetBody,
    responses(
        (status = 200, description = "The same event, now also in the target calendar.", body = EventView),
        (status = 403, description = "The caller cannot see the event or may not edit events in the target.", body = ErrorBody),
        (status = 409, description = "`EVENT_CONFLICT`: a write raced this one (try again; `current` is null).", body = ErrorBody),
    )
)]
fn link_event(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "events" / {eventId: String} / "link")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and(json_body::<Lenient<TargetBody>>(
            "Body must be { calendarID }.",
        ))
        .and_then(
            |id: String, ctx: Ctx, user: AuthUser, body: Lenient<TargetBody>| async move {
                respond(link_event_handler(&ctx, &user, &id, body.or_default()).await)
            },
        )
}

async fn link_event_handler(
    ctx: &Ctx,
    user: &AuthUser,
    id: &str,
    body: TargetBody,
) -> Result<Response, AppError> {
    let event = event_id(id)?;
    let target = CalendarId::try_from(body)?;
    let actor = user.id().clone();
    let view = ctx
        .ask_event_home(event, |reply| EventCommand::Link {
            by: actor,
            event,
            target,
            reply,
        })
        .await?;
    Ok(warp::reply::json(&view).into_response())
}

/// POST /api/v1/events/:eventId/fork — an independent copy in the target calendar, 201.
#[utoipa::path(
    post,
    path = "/api/v1/events/{eventId}/fork",
    tag = "events",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(("eventId" = Uuid, Path, description = "The event's id (an occurrence id `<eventId>_<millis>` is a 400).")),
    request_body = TargetBody,
    responses(
        (status = 201, description = "The independent copy (new id, the caller as creator, the target as home).", body = EventView),
        (status = 403, description = "The caller cannot see the event or may not edit events in the target.", body = ErrorBody),
        (status = 409, description = "`EVENT_CONFLICT`: a write raced this one (try again; `current` is null).", body = ErrorBody),
    )
)]
fn fork_event(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "events" / {eventId: String} / "fork")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and(json_body::<Lenient<TargetBody>>(
            "Body must be { calendarID }.",
        ))
        .and_then(
            |id: String, ctx: Ctx, user: AuthUser, body: Lenient<TargetBody>| async move {
                respond(fork_event_handler(&ctx, &user, &id, body.or_default()).await)
            },
        )
}

async fn fork_event_handler(
    ctx: &Ctx,
    user: &AuthUser,
    id: &str,
    body: TargetBody,
) -> Result<Response, AppError> {
    let event = event_id(id)?;
    let target = CalendarId::try_from(body)?;
    let actor = user.id().clone();
    let view = ctx
        .ask_calendar(target, |reply| EventCommand::Fork {
            by: actor,
            event,
            reply,
        })
        .await?;
    Ok(warp::reply::with_status(warp::reply::json(&view), StatusCode::CREATED).into_response())
}

/// GET /api/v1/events/:eventId/attendees — `[{id, name, image, status}]`, no emails.
#[utoipa::path(
    get,
    path = "/api/v1/events/{eventId}/attendees",
    tag = "events",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(("eventId" = Uuid, Path, description = "The event's id (an occurrence id `<eventId>_<millis>` is a 400).")),
    responses(
        (status = 200, description = "The attendees who answered (never their emails).", body = Vec<AttendeeView>),
    )
)]
fn list_attendees(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "events" / {eventId: String} / "attendees")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(list_attendees_handler(&ctx, &user, &id).await)
        })
}

async fn list_attendees_handler(
    ctx: &Ctx,
    user: &AuthUser,
    id: &str,
) -> Result<Response, AppError> {
    let event = event_id(id)?;
    let attendees = event_links::attendees(&ctx.services, user.id(), event).await?;
    Ok(warp::reply::json(&attendees).into_response())
}

/// PUT /api/v1/events/:eventId/attendance — `{status}` (viewers may answer); idempotent.
#[utoipa::path(
    put,
    path = "/api/v1/events/{eventId}/attendance",
    tag = "events",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(("eventId" = Uuid, Path, description = "The event's id (an occurrence id `<eventId>_<millis>` is a 400).")),
    request_body = AttendanceBody,
    responses(
        (status = 200, description = "The attendees after the answer (idempotent; viewers may answer).", body = Vec<AttendeeView>),
        (status = 409, description = "`EVENT_CONFLICT`: a write raced this one (try again; `current` is null).", body = ErrorBody),
    )
)]
fn set_attendance(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "events" / {eventId: String} / "attendance")
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and(json_body::<Lenient<AttendanceBody>>(
            "status (going | maybe | declined | none) is required...",
        ))
        .and_then(
            |id: String, ctx: Ctx, user: AuthUser, body: Lenient<AttendanceBody>| async move {
                respond(set_attendance_handler(&ctx, &user, &id, body.or_default()).await)
            },
        )
}

async fn set_attendance_handler(
    ctx: &Ctx,
    user: &AuthUser,
    id: &str,
    body: AttendanceBody,
) -> Result<Response, AppError> {
    let event = event_id(id)?;
    let answer = Attendance::try_from(body)?;
    let actor = user.id().clone();
    let attendees = ctx
        .ask_event_home(event, |reply| EventCommand::SetAttendance {
            by: actor,
            event,
            answer,
            page: None,
            reply,
        })
        .await?;
    Ok(warp::reply::json(&attendees).into_response())
}
