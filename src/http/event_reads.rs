//! `GET /api/v1/events`: everything the caller can see (served from the
//! store's cache while the caller's calendars are unchanged), a delta since a
//! time (`since`, with deletions and view changes), or a `start`–`end` range. The query is
//! validated before any database access; the answer is rendered by
//! [`crate::views::event_list`].

use crate::http::endpoint::endpoint;
use chrono::{DateTime, Duration, Utc};
use http::header::CONTENT_TYPE;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::conditional::{self, EntityTag, if_none_match};
use super::extract::{AuthUser, authenticated, respond, with_ctx};
use crate::context::Ctx;
use crate::domain::events::{DELTA_OVERLAP, MAX_RANGE_DAYS};
use crate::domain::time::parse_timestamp;
use crate::error::AppError;
use crate::store::events::history as event_history;
use crate::store::events::reads::{self as event_reads, Window};
use crate::views::event_list;

/// What a read asked for.
enum ReadQuery {
    All,
    Since(DateTime<Utc>),
    Range(DateTime<Utc>, DateTime<Utc>),
}

fn parse_read_query(raw: &str) -> Result<ReadQuery, AppError> {
    let mut since = Vec::new();
    let mut start = Vec::new();
    let mut end = Vec::new();
    for (key, value) in url::form_urlencoded::parse(raw.as_bytes()) {
        match key.as_ref() {
            "since" => since.push(value.into_owned()),
            "start" => start.push(value.into_owned()),
            "end" => end.push(value.into_owned()),
            _ => {}
        }
    }
    let one = |values: Vec<String>, name: &str| -> Result<Option<DateTime<Utc>>, AppError> {
        match values.as_slice() {
            [] => Ok(None),
            [value] => parse_timestamp(value)
                .map(Some)
                .ok_or_else(|| AppError::bad_request(format!("{name} must be a valid timestamp."))),
            _ => Err(AppError::bad_request(format!(
                "{name} must be a valid timestamp."
            ))),
        }
    };
    let since = one(since, "since")?;
    let start = one(start, "start")?;
    let end = one(end, "end")?;
    match (since, start, end) {
        (None, None, None) => Ok(ReadQuery::All),
        (Some(since), None, None) => Ok(ReadQuery::Since(since)),
        (Some(_), _, _) => Err(AppError::bad_request(
            "since cannot be combined with start and end.",
        )),
        (None, Some(start), Some(end)) => {
            if start >= end {
                return Err(AppError::bad_request("start must be before end."));
            }
            if end - start > Duration::days(MAX_RANGE_DAYS) {
                return Err(AppError::bad_request("Requested event range is too large."));
            }
            Ok(ReadQuery::Range(start, end))
        }
        (None, _, _) => Err(AppError::bad_request(
            "start and end must be provided together.",
        )),
    }
}

/// GET /api/v1/events — everything visible, a delta since `since`, or a `start`–`end` range.
pub(super) fn list_events(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    let query = warp::query::raw().or(warp::any().map(String::new)).unify();
    endpoint!("api" / "v1" / "events")
        .and(warp::get())
        .and(query)
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and(if_none_match())
        .and_then(
            |query: String, ctx: Ctx, user: AuthUser, if_none_match: Option<String>| async move {
                respond(list_events_handler(&ctx, &user, &query, if_none_match.as_deref()).await)
            },
        )
}

async fn list_events_handler(
    ctx: &Ctx,
    user: &AuthUser,
    query: &str,
    if_none_match: Option<&str>,
) -> Result<Response, AppError> {
    let query = parse_read_query(query)?;
    let server_time = Utc::now();
    let overlap = Duration::from_std(DELTA_OVERLAP).unwrap_or(Duration::seconds(10));
    let (packed, deleted_ids) = match query {
        ReadQuery::All => return full_read(ctx, user, server_time, if_none_match).await,
        // One statement: its own consistent snapshot.
        ReadQuery::Range(start, end) => (
            event_reads::visible(ctx.db.conn(), user.id(), Window::Range(start, end)).await?,
            Vec::new(),
        ),
        // Changes and deletions from one snapshot, so none falls between the two reads.
        ReadQuery::Since(since) => {
            let since = since - overlap;
            let txn = ctx.db.begin_read().await?;
            let deleted = event_history::deleted_since(&txn, user.id(), since).await?;
            let changed = event_reads::visible(&txn, user.id(), Window::Since(since)).await?;
            txn.commit().await?;
            (changed, deleted)
        }
    };
    let events = event_list::events_array(&packed.rows()?)?;
    Ok(json_text(event_list::events_response(
        &events,
        &deleted_ids,
        server_time,
    )))
}

/// Everything the reader can see ([`event_reads::all_visible`], cached while the reader's
/// calendars are unchanged), tagged with those calendars' versions: a client that holds the
/// answer for the current versions gets 304 after one query, without the events.
async fn full_read(
    ctx: &Ctx,
    user: &AuthUser,
    server_time: DateTime<Utc>,
    if_none_match: Option<&str>,
) -> Result<Response, AppError> {
    let tag = |versions: &str| EntityTag::weak("events", user.id(), versions);
    let mut known = None;
    if if_none_match.is_some() {
        let versions = event_reads::current_versions(&ctx.db, user.id()).await?;
        let tag = tag(&versions);
        if tag.matched_by(if_none_match) {
            ctx.metrics.event_read_not_modified();
            return Ok(conditional::not_modified(&tag));
        }
        known = Some(versions);
    }
    let read =
        event_reads::all_visible(&ctx.db, user.id(), known, event_list::events_array).await?;
    ctx.metrics.event_read(read.cached);
    Ok(conditional::tagged(
        json_text(event_list::events_response(&read.events, &[], server_time)),
        &tag(&read.versions),
    ))
}

/// A 200 with a JSON body already rendered.
fn json_text(body: String) -> Response {
    warp::reply::with_header(body, CONTENT_TYPE, "application/json").into_response()
}
