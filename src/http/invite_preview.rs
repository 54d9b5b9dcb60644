//! The public invite preview `GET /api/v1/calendars/tokens/:token` (30 per 15 minutes per
//! address): calendar identity, member names and avatars, and event summaries for the next
//! 30 days with recurring events expanded; never emails or full event records.

use crate::http::endpoint::endpoint;
use chrono::{DateTime, Utc};
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::extract::{request_ctx, respond, with_ctx};
use super::request::RequestCtx;
use crate::context::Ctx;
use crate::domain::ids::{CalendarId, InviteId, canonical_uuid};
use crate::domain::invites::invite_not_found;
use crate::domain::recurrence::expansion;
use crate::error::AppError;
use crate::http::openapi::schemas::ErrorBody;
use crate::rate_limit::INVITE_PREVIEW;
use crate::store::events::reads as event_reads;
use crate::store::{calendars as calendar_store, invites, members};
use crate::views::calendars::PreviewMember;

/// The invite preview of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(preview),
    components(schemas(PreviewResponse, PreviewEvent, PreviewMember)),
    tags((name = "calendars", description = "Calendars, their members and invites, import and export."))
)]
pub struct Api;

/// The public invite preview.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
struct PreviewResponse {
    /// The calendar.
    id: uuid::Uuid,
    /// Its name.
    name: String,
    /// Its colour.
    color: String,
    /// Its members' names and avatars (never emails).
    members: Vec<PreviewMember>,
    /// Event summaries of the next 30 days (recurring events expanded; at most 500).
    events: Vec<PreviewEvent>,
}

/// An event summary in a preview: an occurrence, never the full record. Occurrences of
/// recurring events have ids `<eventId>_<startMillis>`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct PreviewEvent {
    /// The event's id, or `<eventId>_<startMillis>` for an occurrence.
    id: String,
    /// Title.
    title: String,
    /// Colour.
    color: String,
    /// Start.
    #[serde(serialize_with = "crate::views::timestamp")]
    start: DateTime<Utc>,
    /// End.
    #[serde(serialize_with = "crate::views::timestamp")]
    end: DateTime<Utc>,
    /// All-day.
    is_all_day: bool,
    /// Always null (occurrences are listed instead).
    recurrence: Option<String>,
}

/// How far ahead a preview shows events.
const PREVIEW_DAYS: i64 = 30;
/// At most this many occurrences per recurring event in a preview.
const PREVIEW_OCCURRENCES: usize = 100;
/// At most this many summaries in a preview.
const PREVIEW_SUMMARIES: usize = 500;
/// The work one preview may spend expanding recurring events: instances looked at, and time.
const PREVIEW_STEPS: u64 = 1_000_000;
const PREVIEW_TIME: std::time::Duration = std::time::Duration::from_millis(500);

/// The calendar's events in the next 30 days, recurring ones expanded (off the async
/// runtime, within a budget: what it does not reach is left out of the preview).
async fn preview_events(ctx: &Ctx, calendar_id: CalendarId) -> Result<Vec<PreviewEvent>, AppError> {
    let from = Utc::now();
    let to = from + chrono::Duration::days(PREVIEW_DAYS);
    let rows = event_reads::for_preview(&ctx.db, calendar_id, from, to).await?;
    let (summaries, complete) = ctx
        .cpu
        .run("invite preview", move || summarize(rows, (from, to)))
        .await?;
    if !complete {
        tracing::warn!(calendarId = %calendar_id, "invite_preview.expansion_cut_short");
    }
    Ok(summaries)
}

/// The summaries of `rows` in `window`, in order, and whether every recurring event was
/// expanded in full.
fn summarize(
    rows: Vec<event_reads::PreviewRow>,
    window: (DateTime<Utc>, DateTime<Utc>),
) -> (Vec<PreviewEvent>, bool) {
    let (from, to) = window;
    let mut budget = expansion::Budget::new(PREVIEW_STEPS, PREVIEW_TIME);
    let mut summaries = Vec::new();
    let mut complete = true;
    for event in rows {
        let summary = |id: String, start, end| PreviewEvent {
            id,
            title: event.title.clone(),
            color: event.color.clone(),
            start,
            end,
            is_all_day: event.is_all_day,
            recurrence: None,
        };
        match event.recurrence.as_deref() {
            None => {
                if event.start < to && event.end > from {
                    summaries.push(summary(event.id.to_string(), event.start, event.end));
                }
            }
            Some(rule) => {
                let Some(found) = expansion::occurrences(
                    event.start,
                    event.end,
                    rule,
                    window,
                    PREVIEW_OCCURRENCES,
                    &mut budget,
                ) else {
                    continue;
                };
                complete &= found.complete;
                for (start, end) in found.occurrences {
                    let id = format!("{}_{}", event.id, start.timestamp_millis());
                    summaries.push(summary(id, start, end));
                }
            }
        }
        if budget.is_spent() {
            break;
        }
    }
    summaries.sort_by(|a, b| (a.start, &a.id).cmp(&(b.start, &b.id)));
    summaries.truncate(PREVIEW_SUMMARIES);
    (summaries, complete)
}

/// GET /api/v1/calendars/tokens/:token — public: calendar identity, member names and
/// avatars, event summaries for the next 30 days; never emails or full events.
#[utoipa::path(
    get,
    path = "/api/v1/calendars/tokens/{token}",
    tag = "calendars",
    params(("token" = uuid::Uuid, Path, description = "The invite's token.")),
    responses(
        (status = 200, description = "The calendar's identity, members and the next 30 days' event summaries.",
         body = PreviewResponse),
        (status = 404, description = "The token is unknown, revoked, expired, used up or not UUID-shaped.", body = ErrorBody),
        (status = 429, description = "More than 30 previews in 15 minutes from this address (see `Retry-After`).",
         body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until another preview is allowed."))),
    )
)]
pub fn preview(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / "tokens" / {token: String})
        .and(warp::get())
        .and(with_ctx(ctx))
        .and(request_ctx())
        .and_then(|token: String, ctx: Ctx, rctx: RequestCtx| async move {
            respond(preview_handler(&ctx, &rctx, &token).await)
        })
}

async fn preview_handler(ctx: &Ctx, rctx: &RequestCtx, token: &str) -> Result<Response, AppError> {
    ctx.limits
        .admit(INVITE_PREVIEW, &rctx.client_ip().to_string())?;
    let invite_id = canonical_uuid(token)
        .map(InviteId::from_uuid)
        .ok_or_else(invite_not_found)?;
    let invite = invites::find_usable(&ctx.db, invite_id, Utc::now())
        .await?
        .ok_or_else(invite_not_found)?;
    let calendar = calendar_store::find(&ctx.db, invite.calendar_id)
        .await?
        .ok_or_else(invite_not_found)?;
    let members = members::list(&ctx.db, calendar.id).await?;
    let response = PreviewResponse {
        id: calendar.id.uuid(),
        name: calendar.name,
        color: calendar.color,
        members: members
            .iter()
            .map(|m| PreviewMember {
                id: m.user.id.to_string(),
                name: m.user.name.clone(),
                image: m.user.image.clone(),
            })
            .collect(),
        events: preview_events(ctx, calendar.id).await?,
    };
    Ok(warp::reply::json(&response).into_response())
}
