//! `GET /api/v1/events`: everything the caller can see (served from the
//! store's cache while the caller's calendars are unchanged), a delta since a
//! time (`since`, with deletions and view changes: exactly the changes stamped after the
//! earlier read's `serverTime` and at or before this one's, the write horizon
//! [`crate::store::horizon`]), or a `start`–`end` range. The query is
//! validated before any database access; the answer is rendered by
//! [`crate::views::event_list`].
//!
//! A full read of more events than `EVENTS_STREAM_ABOVE` is streamed
//! ([`crate::store::events::streamed`]): its headers (the tag of the snapshot's versions)
//! and first chunk are ready before the answer starts, so a failure until then is still an
//! ordinary error answer; each later chunk is rendered as the client takes the one before
//! (a chunk is a few hundred events, a fraction of a millisecond of rendering). A stream
//! that breaks off cuts the answer off, so a client never sees a well-formed but
//! incomplete list.

use crate::http::endpoint::endpoint;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use chrono::{DateTime, Duration, Utc};
use futures::{Stream, StreamExt};
use http::header::CONTENT_TYPE;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::conditional::{self, EntityTag, if_none_match};
use super::extract::{AuthUser, respond, session_or_member_token, with_ctx};
use crate::context::Ctx;
use crate::domain::events::MAX_RANGE_DAYS;
use crate::domain::time::parse_timestamp;
use crate::error::AppError;
use crate::store::events::reads::{self as event_reads, Window};
use crate::store::events::streamed::{self, StreamBroken, StreamRefused, StreamedRead};
use crate::views::event_list::{self, EventsResponse, StreamedResponse};

/// The events read of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list_events),
    components(schemas(EventsResponse)),
    tags((name = "events", description = "Events: reads, changes, links, forks and attendance."))
)]
pub struct Api;

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
#[utoipa::path(
    get,
    path = "/api/v1/events",
    tag = "events",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(
        ("since" = Option<DateTime<Utc>>, Query,
         description = "A delta: the changes after this time (the `serverTime` of an earlier read). \
                        Not with `start`/`end`. Also taken: a date, or a date-time without offset (UTC)."),
        ("start" = Option<DateTime<Utc>>, Query,
         description = "A range read's start (with `end`; before it, at most 1,098 days apart)."),
        ("end" = Option<DateTime<Utc>>, Query, description = "A range read's end (with `start`)."),
        ("If-None-Match" = Option<String>, Header,
         description = "The `ETag` of a full read the client holds (full reads only)."),
    ),
    responses(
        (status = 200, description = "A full read (every live event the caller can see; large ones are \
                                      streamed, same document), a delta (with `deletedIds`) or a range read.",
         body = EventsResponse,
         headers(("ETag" = String, description = "Full reads only: the version of the caller's events."))),
        (status = 304, description = "Full reads only: the client's copy is current."),
    )
)]
pub(super) fn list_events(
    ctx: Ctx,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    let query = warp::query::raw().or(warp::any().map(String::new)).unify();
    endpoint!("api" / "v1" / "events")
        .and(warp::get())
        .and(query)
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
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
    // Before the snapshot: every change stamped at or before it has committed by then.
    let server_time = match query {
        ReadQuery::All => ctx.db.recent_horizon().await?,
        _ => ctx.db.horizon().await?,
    };
    let (packed, deleted_ids) = match query {
        ReadQuery::All => return full_read(ctx, user, server_time, if_none_match).await,
        // One statement: its own consistent snapshot.
        ReadQuery::Range(start, end) => (
            event_reads::visible(&ctx.db, user.id(), Window::Range(start, end)).await?,
            Vec::new(),
        ),
        // Changes and deletions stamped in `(since, serverTime]`, from one snapshot, so
        // none falls between the two reads.
        ReadQuery::Since(since) => {
            // A `since` after this horizon (one read elsewhere, or later) is a horizon too:
            // nothing stamped up to it is returned again.
            let until = server_time.max(since);
            event_reads::changed_since(&ctx.db, user.id(), since, until).await?
        }
    };
    let server_time = match query {
        ReadQuery::Since(since) => server_time.max(since),
        _ => server_time,
    };
    let events = event_list::events_array(&packed.rows()?)?;
    Ok(json_text(event_list::events_response(
        &events,
        &deleted_ids,
        server_time,
    )))
}

/// Everything the reader can see ([`event_reads::all_visible`], cached while the reader's
/// calendars are unchanged, or [`streamed::all_visible`] when they are too many), tagged
/// with those calendars' versions: a client that holds the answer for the current versions
/// gets 304 after one query, without the events.
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
    let Some(read) = read else {
        return streamed_read(ctx, user, server_time).await;
    };
    ctx.metrics.event_read(read.cached);
    Ok(conditional::tagged(
        json_text(event_list::events_response(&read.events, &[], server_time)),
        &tag(&read.versions),
    ))
}

/// A full read too big to render whole, streamed from one snapshot and tagged with its
/// versions. No 304 here: the versions the caller's tag was compared with were read a
/// moment ago, and a tag that matched would have been answered then.
async fn streamed_read(
    ctx: &Ctx,
    user: &AuthUser,
    server_time: DateTime<Utc>,
) -> Result<Response, AppError> {
    let mut read =
        streamed::all_visible(&ctx.db, user.id())
            .await
            .map_err(|refused| match refused {
                StreamRefused::Busy => AppError::Unavailable(refused.to_string().into()),
                StreamRefused::Db(err) => AppError::from(err),
            })?;
    let mut answer = StreamedResponse::new(server_time);
    let (first, answer) = match read.first().await? {
        Some(events) => (answer.chunk(&events.rows()?), Some(answer)),
        // The events went between the size and the snapshot.
        None => (answer.end(), None),
    };
    ctx.metrics.event_read_streamed();
    let tag = EntityTag::weak("events", user.id(), read.versions());
    let body = StreamedBody {
        first: Some(first),
        read,
        answer,
    };
    let response =
        warp::reply::with_header(warp::reply::stream(body), CONTENT_TYPE, "application/json")
            .into_response();
    Ok(conditional::tagged(response, &tag))
}

/// The body of a streamed read: the first piece, then each chunk as it arrives, then the
/// end of the answer; or, if the read breaks off, an error that cuts the answer off.
struct StreamedBody {
    first: Option<String>,
    read: StreamedRead,
    /// `None` once the answer has ended or broken off.
    answer: Option<StreamedResponse>,
}

impl Stream for StreamedBody {
    type Item = Result<Bytes, StreamBroken>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(Bytes::from(first))));
        }
        let Some(answer) = this.answer.as_mut() else {
            return Poll::Ready(None);
        };
        let piece = match ready!(this.read.poll_next_unpin(cx)) {
            Some(Ok(events)) => match events.rows() {
                Ok(rows) => answer.chunk(&rows),
                Err(err) => {
                    tracing::error!(error = %err, "events.stream_unreadable");
                    this.answer = None;
                    return Poll::Ready(Some(Err(StreamBroken)));
                }
            },
            Some(Err(broken)) => {
                this.answer = None;
                return Poll::Ready(Some(Err(broken)));
            }
            None => match this.answer.take() {
                Some(answer) => answer.end(),
                None => return Poll::Ready(None),
            },
        };
        Poll::Ready(Some(Ok(Bytes::from(piece))))
    }
}

/// A 200 with a JSON body already rendered.
fn json_text(body: String) -> Response {
    warp::reply::with_header(body, CONTENT_TYPE, "application/json").into_response()
}
