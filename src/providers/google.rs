//! A Google Calendar API v3 client over the outbound guard: the calendar list, event pages
//! with `pageToken` / `syncToken` (a refused token is [`ProviderError::SyncReset`]), single
//! events, and conditional writes (`If-Match` with the quoted etag Google gives). Every call
//! takes the access token to send; refreshing it is the caller's business.
//!
//! Google's errors (`{"error":{"errors":[{"reason"}],"code","message"}}`) become
//! [`ProviderError`]s: `403 rateLimitExceeded` / `userRateLimitExceeded` (and `429`) are
//! "try later" with the `Retry-After` Google sent; `410 fullSyncRequired` asks for a full
//! sync; `410 deleted` means the event is gone; `409` means an insert's id is taken.

use http::Method;
use http::header::{self, HeaderName};
use serde::Deserialize;
use serde_json::{Value, json};
use url::Url;

use super::error::ProviderError;
use super::outbound::{OutboundGuard, OutboundResponse, retry_after};
use super::rest::{self, endpoint};

/// Events asked for per page (Google's maximum is 2,500; a page may hold fewer).
const PAGE_SIZE: &str = "250";

/// A client of one Calendar API base URL.
#[derive(Debug, Clone)]
pub struct GoogleCalendar {
    guard: OutboundGuard,
    base: Url,
}

/// An entry of the user's calendar list.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CalendarEntry {
    /// The calendar id (the primary calendar's is the account's email).
    pub id: String,
    /// The calendar's title.
    #[serde(default)]
    pub summary: Option<String>,
    /// The user's own title for it.
    #[serde(default)]
    pub summary_override: Option<String>,
    /// `#rrggbb`.
    #[serde(default)]
    pub background_color: Option<String>,
    /// `freeBusyReader`, `reader`, `writer` or `owner`.
    #[serde(default)]
    pub access_role: Option<String>,
    /// The account's primary calendar.
    #[serde(default)]
    pub primary: bool,
    /// Deleted from the list (sync listings only).
    #[serde(default)]
    pub deleted: bool,
}

impl CalendarEntry {
    /// Whether the account may write its events.
    pub fn writable(&self) -> bool {
        matches!(self.access_role.as_deref(), Some("writer" | "owner"))
    }
}

/// `start` / `end` of an event: a date (all-day) or a date-time with an optional zone.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EventTime {
    /// `yyyy-mm-dd` of an all-day event.
    #[serde(default)]
    pub date: Option<String>,
    /// RFC 3339.
    #[serde(default)]
    pub date_time: Option<String>,
    /// IANA zone.
    #[serde(default)]
    pub time_zone: Option<String>,
}

/// An event as Google gives it (the fields Bowline maps).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoogleEvent {
    /// Id.
    pub id: String,
    /// `confirmed`, `tentative`, or `cancelled` (deleted, or one instance removed).
    #[serde(default)]
    pub status: Option<String>,
    /// The quoted etag.
    #[serde(default)]
    pub etag: Option<String>,
    /// RFC 5545 UID.
    #[serde(default, rename = "iCalUID")]
    pub ical_uid: Option<String>,
    /// Title.
    #[serde(default)]
    pub summary: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Location.
    #[serde(default)]
    pub location: Option<String>,
    /// Start.
    #[serde(default)]
    pub start: Option<EventTime>,
    /// End (exclusive).
    #[serde(default)]
    pub end: Option<EventTime>,
    /// RRULE / EXDATE / RDATE lines of a series.
    #[serde(default)]
    pub recurrence: Option<Vec<String>>,
    /// The series an instance belongs to.
    #[serde(default)]
    pub recurring_event_id: Option<String>,
    /// The instance's place in its series.
    #[serde(default)]
    pub original_start_time: Option<EventTime>,
}

impl GoogleEvent {
    /// Whether this is a tombstone (deleted, or a removed instance).
    pub fn is_cancelled(&self) -> bool {
        self.status.as_deref() == Some("cancelled")
    }

    /// Whether it is a series master.
    pub fn is_series(&self) -> bool {
        self.recurrence.as_ref().is_some_and(|r| !r.is_empty())
    }
}

/// One page of an events listing.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventsPage {
    /// The events (tombstones included in incremental listings).
    #[serde(default)]
    pub items: Vec<GoogleEvent>,
    /// More pages follow.
    #[serde(default)]
    pub next_page_token: Option<String>,
    /// The last page: the token of the next incremental listing.
    #[serde(default)]
    pub next_sync_token: Option<String>,
}

/// What an events listing asks for.
#[derive(Debug, Clone, Default)]
pub struct EventsQuery<'a> {
    /// Only what changed since this token.
    pub sync_token: Option<&'a str>,
    /// The next page of the same listing.
    pub page_token: Option<&'a str>,
    /// Only the series (master and exceptions) with this UID, cancelled ones included.
    pub ical_uid: Option<&'a str>,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Debug, Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    message: String,
    #[serde(default)]
    errors: Vec<ErrorItem>,
}

#[derive(Debug, Deserialize)]
struct ErrorItem {
    #[serde(default)]
    reason: String,
}

#[derive(Debug, Deserialize)]
struct CalendarList {
    #[serde(default)]
    items: Vec<CalendarEntry>,
    #[serde(default, rename = "nextPageToken")]
    next_page_token: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CreatedCalendar {
    id: String,
}

impl GoogleCalendar {
    /// A client of the API at `base` (e.g. `https://www.googleapis.com/calendar/v3`).
    pub fn new(guard: OutboundGuard, base: &str) -> Result<Self, ProviderError> {
        let base = Url::parse(base)
            .map_err(|err| ProviderError::Malformed(format!("Calendar API URL: {err}")))?;
        Ok(Self { guard, base })
    }

    async fn call(
        &self,
        token: &str,
        method: Method,
        url: Url,
        body: Option<&Value>,
        if_match: Option<&str>,
    ) -> Result<OutboundResponse, ProviderError> {
        let mut extra: Vec<(HeaderName, String)> = Vec::new();
        if let Some(etag) = if_match {
            extra.push((header::IF_MATCH, etag.to_owned()));
        }
        rest::send(&self.guard, method, url, token, body, &extra, error_of).await
    }

    /// Every calendar in the user's list (all pages).
    pub async fn calendar_list(&self, token: &str) -> Result<Vec<CalendarEntry>, ProviderError> {
        let mut entries = Vec::new();
        let mut page_token: Option<String> = None;
        loop {
            let mut url = endpoint(&self.base, &["users", "me", "calendarList"])?;
            url.query_pairs_mut().append_pair("maxResults", "250");
            if let Some(page) = &page_token {
                url.query_pairs_mut().append_pair("pageToken", page);
            }
            let response = self.call(token, Method::GET, url, None, None).await?;
            let page: CalendarList = rest::json(&response)?;
            entries.extend(page.items.into_iter().filter(|entry| !entry.deleted));
            match page.next_page_token {
                Some(next) if !next.is_empty() && Some(&next) != page_token.as_ref() => {
                    page_token = Some(next);
                }
                _ => return Ok(entries),
            }
        }
    }

    /// One page of `calendar_id`'s events.
    pub async fn events_page(
        &self,
        token: &str,
        calendar_id: &str,
        query: &EventsQuery<'_>,
    ) -> Result<EventsPage, ProviderError> {
        let mut url = endpoint(&self.base, &["calendars", calendar_id, "events"])?;
        {
            let mut pairs = url.query_pairs_mut();
            pairs
                .append_pair("maxResults", PAGE_SIZE)
                .append_pair("singleEvents", "false");
            if let Some(sync) = query.sync_token {
                pairs.append_pair("syncToken", sync);
            }
            if let Some(page) = query.page_token {
                pairs.append_pair("pageToken", page);
            }
            if let Some(uid) = query.ical_uid {
                pairs
                    .append_pair("iCalUID", uid)
                    .append_pair("showDeleted", "true");
            }
        }
        let response = self.call(token, Method::GET, url, None, None).await?;
        rest::json(&response)
    }

    /// One event (tombstones included); `None` if Google does not know it.
    pub async fn event(
        &self,
        token: &str,
        calendar_id: &str,
        event_id: &str,
    ) -> Result<Option<GoogleEvent>, ProviderError> {
        let url = endpoint(&self.base, &["calendars", calendar_id, "events", event_id])?;
        match self.call(token, Method::GET, url, None, None).await {
            Ok(response) => rest::json(&response).map(Some),
            Err(ProviderError::NotFound) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Inserts an event (`body` may name its id); the event as stored.
    pub async fn insert_event(
        &self,
        token: &str,
        calendar_id: &str,
        body: &Value,
    ) -> Result<GoogleEvent, ProviderError> {
        let url = endpoint(&self.base, &["calendars", calendar_id, "events"])?;
        let response = self
            .call(token, Method::POST, url, Some(body), None)
            .await?;
        rest::json(&response)
    }

    /// Replaces an event, if its etag is still `etag`.
    pub async fn update_event(
        &self,
        token: &str,
        calendar_id: &str,
        event_id: &str,
        body: &Value,
        etag: Option<&str>,
    ) -> Result<GoogleEvent, ProviderError> {
        let url = endpoint(&self.base, &["calendars", calendar_id, "events", event_id])?;
        let response = self.call(token, Method::PUT, url, Some(body), etag).await?;
        rest::json(&response)
    }

    /// Deletes an event, if its etag is still `etag`; one already gone is not an error.
    pub async fn delete_event(
        &self,
        token: &str,
        calendar_id: &str,
        event_id: &str,
        etag: Option<&str>,
    ) -> Result<(), ProviderError> {
        let url = endpoint(&self.base, &["calendars", calendar_id, "events", event_id])?;
        match self.call(token, Method::DELETE, url, None, etag).await {
            Ok(_) | Err(ProviderError::NotFound) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// Creates a secondary calendar; its id.
    pub async fn insert_calendar(
        &self,
        token: &str,
        summary: &str,
    ) -> Result<String, ProviderError> {
        let url = endpoint(&self.base, &["calendars"])?;
        let body = json!({ "summary": summary });
        let response = self
            .call(token, Method::POST, url, Some(&body), None)
            .await?;
        Ok(rest::json::<CreatedCalendar>(&response)?.id)
    }

    /// Renames a calendar and sets its colour in the user's list.
    pub async fn update_calendar(
        &self,
        token: &str,
        calendar_id: &str,
        summary: &str,
        color: &str,
    ) -> Result<(), ProviderError> {
        let url = endpoint(&self.base, &["calendars", calendar_id])?;
        let body = json!({ "summary": summary });
        self.call(token, Method::PATCH, url, Some(&body), None)
            .await?;
        if let Some(color) = hex_color(color) {
            let mut url = endpoint(&self.base, &["users", "me", "calendarList", calendar_id])?;
            url.query_pairs_mut().append_pair("colorRgbFormat", "true");
            let body = json!({ "backgroundColor": color, "foregroundColor": "#000000" });
            self.call(token, Method::PATCH, url, Some(&body), None)
                .await?;
        }
        Ok(())
    }

    /// Deletes a secondary calendar (Google refuses the primary one).
    pub async fn delete_calendar(
        &self,
        token: &str,
        calendar_id: &str,
    ) -> Result<(), ProviderError> {
        let url = endpoint(&self.base, &["calendars", calendar_id])?;
        self.call(token, Method::DELETE, url, None, None).await?;
        Ok(())
    }
}

/// `#rrggbb` of a colour, if it is one.
fn hex_color(color: &str) -> Option<String> {
    let color = color.trim();
    (color.len() >= 7
        && color.starts_with('#')
        && color[1..7].chars().all(|c| c.is_ascii_hexdigit()))
    .then(|| color[..7].to_lowercase())
}

/// The error of a non-success answer.
fn error_of(response: &OutboundResponse) -> ProviderError {
    let status = response.status.as_u16();
    let body = serde_json::from_slice::<ErrorBody>(&response.body).ok();
    let reason = body
        .as_ref()
        .and_then(|body| body.error.errors.first())
        .map(|item| item.reason.as_str())
        .unwrap_or_default();
    let message = rest::message(
        response,
        body.as_ref().map(|body| body.error.message.as_str()),
    );
    let later = || ProviderError::Unavailable {
        status: Some(status),
        retry_after: retry_after(&response.headers),
    };
    match (status, reason) {
        (401, _) => ProviderError::Unauthorized,
        (403, "rateLimitExceeded" | "userRateLimitExceeded" | "quotaExceeded") => later(),
        (403, _) => ProviderError::Forbidden(message),
        (404, _) | (410, "deleted") => ProviderError::NotFound,
        (409, _) => ProviderError::AlreadyExists,
        (410, _) => ProviderError::SyncReset,
        (412, _) => ProviderError::PreconditionFailed,
        (408 | 429 | 500..=599, _) => later(),
        _ => ProviderError::Rejected { status, message },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http::{HeaderMap, HeaderValue, StatusCode};

    fn answer(status: u16, body: &str, retry: Option<&'static str>) -> OutboundResponse {
        let mut headers = HeaderMap::new();
        if let Some(value) = retry {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static(value));
        }
        OutboundResponse {
            status: StatusCode::from_u16(status).unwrap(),
            headers,
            body: Bytes::from(body.to_owned()),
            url: Url::parse("https://api.example/").unwrap(),
        }
    }

    fn envelope(code: u16, reason: &str) -> String {
        json!({"error": {"code": code, "message": "m", "errors": [{"domain": "calendar", "reason": reason, "message": "m"}]}}).to_string()
    }

    #[test]
    fn googles_errors_mean_what_the_engine_acts_on() {
        assert!(matches!(
            error_of(&answer(410, &envelope(410, "fullSyncRequired"), None)),
            ProviderError::SyncReset
        ));
        assert!(matches!(
            error_of(&answer(410, &envelope(410, "deleted"), None)),
            ProviderError::NotFound
        ));
        let limited = error_of(&answer(
            403,
            &envelope(403, "userRateLimitExceeded"),
            Some("7"),
        ));
        assert!(limited.is_transient());
        assert_eq!(
            limited.retry_after(),
            Some(std::time::Duration::from_secs(7))
        );
        assert!(matches!(
            error_of(&answer(
                403,
                &envelope(403, "forbiddenForNonOrganizer"),
                None
            )),
            ProviderError::Forbidden(_)
        ));
        assert!(matches!(
            error_of(&answer(409, &envelope(409, "duplicate"), None)),
            ProviderError::AlreadyExists
        ));
        assert!(matches!(
            error_of(&answer(412, "", None)),
            ProviderError::PreconditionFailed
        ));
        assert!(error_of(&answer(429, "", Some("2"))).is_transient());
        assert!(matches!(
            error_of(&answer(400, &envelope(400, "timeRangeEmpty"), None)),
            ProviderError::Rejected { status: 400, .. }
        ));
    }

    #[test]
    fn events_read_with_their_quoted_etags() {
        let page: EventsPage = serde_json::from_value(json!({
            "items": [
                {"id": "a1", "etag": "\"31\"", "status": "confirmed", "summary": "S",
                 "start": {"dateTime": "2026-12-01T09:00:00+01:00", "timeZone": "Europe/Berlin"},
                 "end": {"dateTime": "2026-12-01T10:00:00+01:00"},
                 "recurrence": ["RRULE:FREQ=WEEKLY"], "iCalUID": "a1@google.com"},
                {"id": "a1_20261208T080000Z", "status": "cancelled", "recurringEventId": "a1",
                 "originalStartTime": {"dateTime": "2026-12-08T09:00:00+01:00"}}
            ],
            "nextSyncToken": "t2"
        }))
        .unwrap();
        assert_eq!(page.items[0].etag.as_deref(), Some("\"31\""));
        assert!(page.items[0].is_series());
        assert!(page.items[1].is_cancelled());
        assert_eq!(page.items[1].recurring_event_id.as_deref(), Some("a1"));
        assert_eq!(page.next_sync_token.as_deref(), Some("t2"));
        assert_eq!(hex_color("#C8553D"), Some("#c8553d".into()));
        assert_eq!(hex_color("red"), None);
    }
}
