//! The public invite preview `GET /api/v1/calendars/tokens/:token` (30 per 15 minutes per
//! address): calendar identity, member names and avatars, and event summaries for the next
//! 30 days with recurring events expanded; never emails or full event records.

use chrono::{DateTime, Utc};
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::extract::{request_ctx, respond, route, with_ctx};
use super::invites::invite_not_found;
use super::rate_limit::INVITE_PREVIEW;
use super::request::RequestCtx;
use crate::context::Ctx;
use crate::domain::ids::canonical_uuid;
use crate::domain::recurrence;
use crate::error::AppError;
use crate::store::{calendars as calendar_store, event_reads, invites, members};
use crate::views::calendars::PreviewMember;

/// The public invite preview.
#[derive(Debug, serde::Serialize)]
struct PreviewResponse {
    id: uuid::Uuid,
    name: String,
    color: String,
    members: Vec<PreviewMember>,
    events: Vec<PreviewEvent>,
}

/// An event summary in a preview: an occurrence, never the full record. Occurrences of
/// recurring events have ids `<eventId>_<startMillis>`.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PreviewEvent {
    id: String,
    title: String,
    color: String,
    #[serde(serialize_with = "crate::views::timestamp")]
    start: DateTime<Utc>,
    #[serde(serialize_with = "crate::views::timestamp")]
    end: DateTime<Utc>,
    is_all_day: bool,
    recurrence: Option<String>,
}

/// How far ahead a preview shows events.
const PREVIEW_DAYS: i64 = 30;
/// At most this many occurrences per recurring event in a preview.
const PREVIEW_OCCURRENCES: u16 = 100;

/// The calendar's events in the next 30 days, recurring ones expanded.
async fn preview_events(ctx: &Ctx, calendar_id: uuid::Uuid) -> Result<Vec<PreviewEvent>, AppError> {
    let from = Utc::now();
    let to = from + chrono::Duration::days(PREVIEW_DAYS);
    let events = event_reads::in_calendar(ctx.db.conn(), calendar_id, from, to).await?;
    let mut summaries = Vec::new();
    for event in events {
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
                let found = recurrence::occurrences(
                    event.start,
                    event.end,
                    rule,
                    from,
                    to,
                    PREVIEW_OCCURRENCES,
                )
                .unwrap_or_default();
                for (start, end) in found {
                    let id = format!("{}_{}", event.id, start.timestamp_millis());
                    summaries.push(summary(id, start, end));
                }
            }
        }
    }
    summaries.sort_by_key(|e| e.start);
    Ok(summaries)
}

/// GET /api/v1/calendars/tokens/:token — public: calendar identity, member names and
/// avatars, event summaries for the next 30 days; never emails or full events.
pub fn preview(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    warp::path!("api" / "v1" / "calendars" / "tokens" / String)
        .and(route("/api/v1/calendars/tokens/:token"))
        .and(warp::get())
        .and(with_ctx(ctx))
        .and(request_ctx())
        .and_then(|token: String, ctx: Ctx, rctx: RequestCtx| async move {
            respond(preview_handler(&ctx, &rctx, &token).await)
        })
}

async fn preview_handler(ctx: &Ctx, rctx: &RequestCtx, token: &str) -> Result<Response, AppError> {
    ctx.limits
        .check(
            INVITE_PREVIEW,
            &rctx.client_ip().to_string(),
            std::time::Instant::now(),
        )
        .map_err(|retry_after_secs| AppError::TooManyRequests { retry_after_secs })?;
    let invite_id = canonical_uuid(token).ok_or_else(invite_not_found)?;
    let invite = invites::find_usable(ctx.db.conn(), invite_id, Utc::now())
        .await?
        .ok_or_else(invite_not_found)?;
    let calendar = calendar_store::find(ctx.db.conn(), invite.calendar_id)
        .await?
        .ok_or_else(invite_not_found)?;
    let members = members::list(ctx.db.conn(), calendar.id).await?;
    let response = PreviewResponse {
        id: calendar.id,
        name: calendar.name,
        color: calendar.color,
        members: members
            .iter()
            .map(|m| PreviewMember {
                id: m.user.id.clone(),
                name: m.user.name.clone(),
                image: m.user.image.clone(),
            })
            .collect(),
        events: preview_events(ctx, calendar.id).await?,
    };
    Ok(warp::reply::json(&response).into_response())
}
