//! The organizer's half of scheduling polls (`/api/v1/scheduling/polls…`): making, listing,
//! the calendar layer, deciding, closing and deleting polls, with their bodies and answers.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use entities::{scheduling_polls as polls, scheduling_slots as slots};
use http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::{RoleValue, slot_of, viewer};
use crate::actors::calendar::EventCommand;
use crate::commands::polls::{self as commands, PollDraft};
use crate::context::Ctx;
use crate::domain::events::EventInput;
use crate::domain::ids::{CalendarId, EventId, canonical_uuid};
use crate::domain::polls::{self as rules, Answer, DECIDED_COLOR, Slot, Vote};
use crate::error::AppError;
use crate::http::endpoint::endpoint;
use crate::http::extract::{
    AuthUser, json_body, optional_session, request_ctx, respond, signed_in, with_ctx,
};
use crate::http::openapi::schemas::ErrorBody;
use crate::http::request::RequestCtx;
use crate::mail::templates;
use crate::rate_limit::POLL_CREATE;
use crate::store::events as event_store;
use crate::store::polls as poll_store;
use ids::{PollId, PollSlotId};

const INVALID_POLL: &str = "Request is missing valid poll data...";
const INVALID_DECISION: &str = "Request is missing a valid decision...";

/// A `:pollId` path segment; a malformed one names no poll.
fn poll_id(text: &str) -> Result<PollId, AppError> {
    canonical_uuid(text)
        .map(PollId::from_uuid)
        .ok_or_else(rules::poll_not_found)
}

/// An optional text field as sent: blank is none.
fn given(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|text| !text.is_empty())
}

/// A poll in its organizer's list.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct PollSummary {
    /// The `HH:mm` hint, if any (decided events stay all-day).
    approximate_start_time: Option<String>,
    /// Where the decided event lands; null for polls made without one.
    #[serde(rename = "calendarID")]
    calendar_id: Option<Uuid>,
    /// The day picked, once decided.
    #[serde(rename = "chosenSlotID")]
    chosen_slot_id: Option<Uuid>,
    /// Shut to answers: closed, decided, or past its deadline.
    closed: bool,
    /// When it was closed or decided (a passed deadline does not set it).
    #[serde(serialize_with = "crate::views::optional_timestamp")]
    closed_at: Option<DateTime<Utc>>,
    /// Created.
    #[serde(serialize_with = "crate::views::timestamp")]
    created_at: DateTime<Utc>,
    /// When it stops taking answers by itself.
    #[serde(serialize_with = "crate::views::optional_timestamp")]
    deadline: Option<DateTime<Utc>>,
    /// Always 1,440 (a day), for older clients.
    duration_minutes: i32,
    /// The poll.
    id: Uuid,
    /// The question.
    title: String,
    /// The public page's token.
    token: String,
    /// The public page.
    url: String,
}

impl PollSummary {
    fn of(ctx: &Ctx, poll: &polls::Model, now: DateTime<Utc>) -> Self {
        Self {
            approximate_start_time: poll.approximate_start_time.clone(),
            calendar_id: poll.calendar_id.map(CalendarId::uuid),
            chosen_slot_id: poll.chosen_slot_id.map(PollSlotId::uuid),
            closed: rules::is_closed(poll.closed_at, poll.deadline, now),
            closed_at: poll.closed_at,
            created_at: poll.created_at,
            deadline: poll.deadline,
            duration_minutes: poll.duration_minutes,
            id: poll.id.uuid(),
            title: poll.title.clone(),
            token: poll.token.clone(),
            url: rules::poll_url(&ctx.base_url, &poll.token),
        }
    }
}

/// GET /api/v1/scheduling/polls — the polls the caller organizes.
#[utoipa::path(
    get,
    path = "/api/v1/scheduling/polls",
    tag = "scheduling",
    security(("bearer" = []), ("cookie" = [])),
    responses(
        (status = 200, description = "The polls the caller owns or made with their proven address, newest first.", body = Vec<PollSummary>),
    )
)]
pub(super) fn list_polls(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "scheduling" / "polls")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(|ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let viewer = viewer(&user);
                    let email = viewer.verified_email();
                    let polls =
                        poll_store::organized_by(&ctx.db, viewer.id, email.as_deref()).await?;
                    let now = Utc::now();
                    let summaries: Vec<PollSummary> = polls
                        .iter()
                        .map(|poll| PollSummary::of(&ctx, poll, now))
                        .collect();
                    Ok(warp::reply::json(&summaries))
                }
                .await,
            )
        })
}

/// `POST /api/v1/scheduling/polls` body (unknown fields are ignored, as the original does).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct CreatePollBody {
    /// The question (one line; longer than 120 characters is cut).
    #[serde(default)]
    title: Option<String>,
    /// 1 to 60 candidate days.
    #[serde(default)]
    #[schema(min_items = 1, max_items = 60)]
    slots: Option<Vec<SlotBody>>,
    /// A wall-clock hint, `HH:mm` (`00:00` to `23:59`; blank is none).
    #[serde(default)]
    approximate_start_time: Option<String>,
    /// The organizer's address (default: the signed-in user's).
    #[serde(default)]
    email: Option<String>,
    /// The organizer's name (default: the signed-in user's).
    #[serde(default)]
    name: Option<String>,
    /// Where the decided event lands (signed in only; the caller must be able to add
    /// events there).
    #[serde(default)]
    #[schema(value_type = Option<Uuid>)]
    calendar_id: Option<String>,
    /// When it stops taking answers.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    deadline: Option<String>,
    /// More about it.
    #[serde(default)]
    description: Option<String>,
}

/// A candidate day: `date` (`YYYY-MM-DD`, that day at 12:00 UTC) or, without one, `start`.
#[derive(Debug, Deserialize, ToSchema)]
pub(super) struct SlotBody {
    /// The day.
    #[serde(default)]
    #[schema(format = Date)]
    date: Option<String>,
    /// The start, when no `date` is given.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    start: Option<String>,
}

/// POST /api/v1/scheduling/polls — 201 with the new poll.
#[utoipa::path(
    post,
    path = "/api/v1/scheduling/polls",
    tag = "scheduling",
    security((), ("bearer" = []), ("cookie" = [])),
    request_body = CreatePollBody,
    responses(
        (status = 201, description = "The new poll.", body = PollSummary),
        (status = 401, description = "`calendarId` was sent without a session.", body = ErrorBody),
        (status = 403, description = "The caller may not add events to `calendarId`.", body = ErrorBody),
        (status = 429, description = "More than 30 polls in 15 minutes from this address (see `Retry-After`).",
         body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until another poll is allowed."))),
    )
)]
pub(super) fn create_poll(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "scheduling" / "polls")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(request_ctx())
        .and(optional_session(ctx))
        .and(json_body::<CreatePollBody>(INVALID_POLL))
        .and_then(
            |ctx: Ctx, rctx: RequestCtx, user: Option<AuthUser>, body: CreatePollBody| async move {
                respond(create_handler(&ctx, &rctx, user.as_ref(), body).await)
            },
        )
}

async fn create_handler(
    ctx: &Ctx,
    rctx: &RequestCtx,
    user: Option<&AuthUser>,
    body: CreatePollBody,
) -> Result<Response, AppError> {
    ctx.limits
        .admit(POLL_CREATE, &rctx.client_ip().to_string())?;
    let account = user.map(AuthUser::user);
    let title = rules::title(body.title.as_deref())?;
    let sent = body.slots.unwrap_or_default();
    if sent.len() > rules::MAX_SLOTS {
        return Err(rules::too_many_slots());
    }
    let days = sent
        .iter()
        .map(|slot| rules::slot_times(slot.date.as_deref(), slot.start.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    let days = rules::poll_slots(days)?;
    let approximate_start_time =
        rules::approximate_start_time(body.approximate_start_time.as_deref())?;
    let owner_email = rules::email_identity(
        body.email
            .as_deref()
            .or(account.map(|account| account.email.as_str())),
    )?;
    let owner_name = rules::person_name(
        body.name
            .as_deref()
            .or(account.map(|account| account.name.as_str())),
    )?;
    let deadline = match given(body.deadline.as_deref()) {
        None => None,
        Some(text) => Some(
            crate::domain::time::parse_timestamp(text)
                .ok_or_else(|| AppError::bad_request("deadline must be a valid timestamp."))?,
        ),
    };
    let calendar_id = match given(body.calendar_id.as_deref()) {
        None => None,
        Some(text) => {
            let calendar = canonical_uuid(text)
                .map(CalendarId::from_uuid)
                .ok_or_else(|| AppError::bad_request("calendarId must be a valid UUID."))?;
            let user = user.ok_or_else(|| {
                AppError::Unauthorized("Sign in to choose the poll's calendar.".into())
            })?;
            commands::require_editor(&ctx.db, calendar, user.id()).await?;
            Some(calendar)
        }
    };
    let draft = PollDraft {
        owner_id: user.map(|user| user.id().clone()),
        owner_email,
        owner_name,
        title,
        description: rules::description(body.description.as_deref()),
        approximate_start_time,
        deadline,
        calendar_id,
        days,
    };
    let poll = commands::create(&ctx.db, draft).await?;
    Ok(warp::reply::with_status(
        warp::reply::json(&PollSummary::of(ctx, &poll, Utc::now())),
        StatusCode::CREATED,
    )
    .into_response())
}

/// A poll on the calendar layer.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct PollLayerEntry {
    /// The poll.
    #[serde(flatten)]
    summary: PollSummary,
    /// Its days (once decided, the chosen one only) with their counts.
    days: Vec<PollDay>,
    /// How many people answered.
    respondents: usize,
    /// The reader's role.
    role: RoleValue,
}

/// A day on the calendar layer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct PollDay {
    /// The day (`YYYY-MM-DD`, UTC).
    #[schema(format = Date)]
    date: String,
    /// End.
    #[serde(serialize_with = "crate::views::timestamp")]
    end: DateTime<Utc>,
    /// The slot.
    id: Uuid,
    /// How many said if needed.
    if_needed: usize,
    /// How many said no.
    no: usize,
    /// Start.
    #[serde(serialize_with = "crate::views::timestamp")]
    start: DateTime<Utc>,
    /// How many said yes.
    yes: usize,
}

/// GET /api/v1/scheduling/polls/calendar — the caller's poll layer.
#[utoipa::path(
    get,
    path = "/api/v1/scheduling/polls/calendar",
    tag = "scheduling",
    security(("bearer" = []), ("cookie" = [])),
    responses(
        (status = 200, description = "The open or decided polls the caller organizes or answered (by account or proven address), newest first, with per-day counts; the organizer's decided polls are left out (their event is in the calendar).",
         body = Vec<PollLayerEntry>),
    )
)]
pub(super) fn poll_layer(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "scheduling" / "polls" / "calendar")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(
            |ctx: Ctx, user: AuthUser| async move { respond(layer_handler(&ctx, &user).await) },
        )
}

async fn layer_handler(ctx: &Ctx, user: &AuthUser) -> Result<Response, AppError> {
    let viewer = viewer(user);
    let email = viewer.verified_email();
    let now = Utc::now();
    let polls = poll_store::in_layer_of(&ctx.db, viewer.id, email.as_deref(), now).await?;
    let ids: Vec<PollId> = polls.iter().map(|poll| poll.id).collect();
    let (slots, answers) = days_and_answers(ctx, &ids).await?;
    let mut entries = Vec::with_capacity(polls.len());
    for poll in &polls {
        let organizer = poll.owner_id.as_ref() == Some(viewer.id)
            || email.as_deref() == Some(poll.owner_email.as_str());
        // The organizer has the decided event in their calendar already.
        if organizer && poll.chosen_slot_id.is_some() {
            continue;
        }
        let no_answers = Vec::new();
        let answers = answers.get(&poll.id).unwrap_or(&no_answers);
        let poll_slots = slots.get(&poll.id).map_or(&[][..], Vec::as_slice);
        let days = rules::day_counts(poll_slots, answers, poll.chosen_slot_id)
            .into_iter()
            .map(|day| PollDay {
                date: day.slot.start.format("%Y-%m-%d").to_string(),
                end: day.slot.end,
                id: day.slot.id.uuid(),
                if_needed: day.if_needed,
                no: day.no,
                start: day.slot.start,
                yes: day.yes,
            })
            .collect();
        entries.push(PollLayerEntry {
            summary: PollSummary::of(ctx, poll, now),
            days,
            respondents: rules::respondents(answers),
            role: if organizer {
                RoleValue::Organizer
            } else {
                RoleValue::Participant
            },
        });
    }
    Ok(warp::reply::json(&entries).into_response())
}

/// The days and the answers of `polls`, by poll.
async fn days_and_answers(
    ctx: &Ctx,
    ids: &[PollId],
) -> Result<(HashMap<PollId, Vec<Slot>>, HashMap<PollId, Vec<Answer>>), AppError> {
    let mut days: HashMap<PollId, Vec<Slot>> = HashMap::new();
    for slot in poll_store::slots_of(&ctx.db, ids).await? {
        days.entry(slot.poll_id).or_default().push(slot_of(&slot));
    }
    let poll_of: HashMap<_, _> = poll_store::participants_of(&ctx.db, ids)
        .await?
        .into_iter()
        .map(|participant| (participant.id, participant.poll_id))
        .collect();
    let mut answers: HashMap<PollId, Vec<Answer>> = HashMap::new();
    for vote in poll_store::votes_of(&ctx.db, ids).await? {
        let (Some(poll), Some(value)) =
            (poll_of.get(&vote.participant_id), Vote::parse(&vote.value))
        else {
            continue;
        };
        answers.entry(*poll).or_default().push(Answer {
            participant: vote.participant_id,
            slot: vote.slot_id,
            vote: value,
        });
    }
    Ok((days, answers))
}

/// `POST …/:pollId/decide` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct DecideBody {
    /// The day picked (one of the poll's slots).
    #[serde(default)]
    #[schema(value_type = Option<Uuid>)]
    slot_id: Option<String>,
    /// Where the event lands (default: the poll's calendar, else the caller's own).
    #[serde(default)]
    #[schema(value_type = Option<Uuid>)]
    calendar_id: Option<String>,
}

/// A decision.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct Decision {
    /// The all-day event created.
    event_id: Uuid,
    /// The day picked.
    slot_id: Uuid,
}

/// POST /api/v1/scheduling/polls/:pollId/decide — picks a day: creates its all-day event
/// and closes the poll.
#[utoipa::path(
    post,
    path = "/api/v1/scheduling/polls/{pollId}/decide",
    tag = "scheduling",
    security(("bearer" = []), ("cookie" = [])),
    params(("pollId" = Uuid, Path, description = "The poll.")),
    request_body = DecideBody,
    responses(
        (status = 200, description = "Decided: the event is in the calendar (its members got `event_created`), the poll is closed with `chosenSlotID`, and every participant who wants it is mailed.", body = Decision),
        (status = 400, description = "The poll is decided or closed already, the day is not one of its slots, or the caller has no calendar to decide into.", body = ErrorBody),
        (status = 403, description = "The caller is not the organizer, or may not add events to the calendar.", body = ErrorBody),
        (status = 404, description = "No such poll.", body = ErrorBody),
        (status = 409, description = "The event's creation lost a race in the calendar (try again; the poll stays open).", body = ErrorBody),
    )
)]
pub(super) fn decide_poll(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "scheduling" / "polls" / {pollId: String} / "decide")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<DecideBody>(INVALID_DECISION))
        .and_then(
            |id: String, ctx: Ctx, user: AuthUser, body: DecideBody| async move {
                respond(decide_handler(&ctx, &user, &id, body).await)
            },
        )
}

async fn decide_handler(
    ctx: &Ctx,
    user: &AuthUser,
    id: &str,
    body: DecideBody,
) -> Result<Response, AppError> {
    let id = poll_id(id)?;
    let viewer = viewer(user);
    let poll = commands::as_organizer(&ctx.db, id, &viewer).await?;
    if poll.closed_at.is_some() {
        return Err(rules::already_decided());
    }
    let slot = given(body.slot_id.as_deref())
        .and_then(canonical_uuid)
        .map(PollSlotId::from_uuid);
    let slot = match slot {
        Some(slot) => poll_store::slots_of(&ctx.db, &[id])
            .await?
            .into_iter()
            .find(|candidate| candidate.id == slot),
        None => None,
    }
    .ok_or_else(rules::slot_not_on_poll)?;
    let requested = match given(body.calendar_id.as_deref()) {
        None => None,
        Some(text) => Some(
            canonical_uuid(text)
                .map(CalendarId::from_uuid)
                .ok_or_else(|| AppError::bad_request("calendarId must be a valid UUID."))?,
        ),
    };
    let calendar = commands::decision_calendar(&ctx.db, requested, &poll, user.id()).await?;
    let day = rules::decided_day(slot.start_at);
    let input = EventInput {
        id: EventId::generate(),
        calendars: vec![calendar],
        origin_calendar_id: Some(calendar),
        title: poll.title.clone(),
        color: DECIDED_COLOR.to_owned(),
        start: day,
        end: day,
        is_all_day: true,
        description: poll.description.clone(),
        location: None,
        is_canceled: false,
        has_attendees: false,
        organizer: user.id().to_string(),
        recurrence: None,
        url: None,
    };
    input.content().check()?;
    let event = input.id;
    // Claimed first, so that of two decisions only one creates an event.
    commands::claim_decision(&ctx.db, id, slot.id, event).await?;
    let by = user.id().clone();
    let created = ctx
        .ask_calendar(calendar, |reply| EventCommand::Create { by, input, reply })
        .await;
    if let Err(err) = created {
        // An actor that did not answer in time may still have created it.
        let made_anyway = matches!(err, AppError::Unavailable(_))
            && event_store::find(&ctx.db, event).await?.is_some();
        if !made_anyway {
            commands::release_decision(&ctx.db, id, event).await?;
            return Err(err);
        }
    }
    announce_decision(ctx, &poll, &slot).await;
    Ok(warp::reply::json(&Decision {
        event_id: event.uuid(),
        slot_id: slot.id.uuid(),
    })
    .into_response())
}

/// Mails every participant who wants it that the poll was decided (queued with the mailer,
/// which retries; the decision stands whatever the mail server says).
async fn announce_decision(ctx: &Ctx, poll: &polls::Model, slot: &slots::Model) {
    let recipients = match poll_store::recipients(&ctx.db, poll.id).await {
        Ok(recipients) => recipients,
        Err(err) => {
            tracing::error!(error = %err, pollId = %poll.id, "polls.decided_mail_failed");
            return;
        }
    };
    let server = templates::server_name(&ctx.base_url);
    let when = rules::decided_when(slot.start_at);
    let link = rules::poll_url(&ctx.base_url, &poll.token);
    for recipient in recipients.iter().filter(|recipient| recipient.wants_mail) {
        ctx.actors.send_mail(templates::poll_decided(
            &server,
            &recipient.email,
            &recipient.name,
            &poll.title,
            &when,
            &link,
        ));
    }
}

/// `POST …/:pollId/close` answer.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct Closed {
    /// Always true.
    closed: bool,
}

/// POST /api/v1/scheduling/polls/:pollId/close — stops the answers without a decision (any
/// body is ignored).
#[utoipa::path(
    post,
    path = "/api/v1/scheduling/polls/{pollId}/close",
    tag = "scheduling",
    security(("bearer" = []), ("cookie" = [])),
    params(("pollId" = Uuid, Path, description = "The poll.")),
    responses(
        (status = 200, description = "Closed; the poll stays readable.", body = Closed),
        (status = 400, description = "The poll is closed or decided already.", body = ErrorBody),
        (status = 403, description = "The caller is not the organizer.", body = ErrorBody),
        (status = 404, description = "No such poll.", body = ErrorBody),
    )
)]
pub(super) fn close_poll(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "scheduling" / "polls" / {pollId: String} / "close")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let id = poll_id(&id)?;
                    let poll = commands::as_organizer(&ctx.db, id, &viewer(&user)).await?;
                    if poll.closed_at.is_some() {
                        return Err(rules::already_closed());
                    }
                    commands::close(&ctx.db, id).await?;
                    Ok(warp::reply::json(&Closed { closed: true }))
                }
                .await,
            )
        })
}

/// DELETE /api/v1/scheduling/polls/:pollId — removes the poll and every answer (the event a
/// decision made stays).
#[utoipa::path(
    delete,
    path = "/api/v1/scheduling/polls/{pollId}",
    tag = "scheduling",
    security(("bearer" = []), ("cookie" = [])),
    params(("pollId" = Uuid, Path, description = "The poll.")),
    responses(
        (status = 204, description = "Deleted; its link no longer resolves."),
        (status = 403, description = "The caller is not the organizer.", body = ErrorBody),
        (status = 404, description = "No such poll.", body = ErrorBody),
    )
)]
pub(super) fn delete_poll(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "scheduling" / "polls" / {pollId: String})
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let id = poll_id(&id)?;
                    commands::as_organizer(&ctx.db, id, &viewer(&user)).await?;
                    commands::delete(&ctx.db, id).await?;
                    Ok(StatusCode::NO_CONTENT)
                }
                .await,
            )
        })
}
