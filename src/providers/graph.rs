//! A Microsoft Graph client for Outlook calendars over the outbound guard: the calendar list,
//! `calendarView/delta` rounds (pages linked by `@odata.nextLink`, ending with an
//! `@odata.deltaLink` that the next round starts from), single events, and conditional
//! writes (`If-Match` with the weak `W/"<changeKey>"` etag). Every call takes the access
//! token to send; refreshing it is the caller's business.
//!
//! Every request asks for times in UTC, immutable ids and plain-text bodies. Links Graph hands
//! back are followed only on Graph's own origin (the bearer token never goes elsewhere). A
//! refused delta link (`410` with a `Location`, or `syncStateNotFound`) is
//! [`ProviderError::SyncReset`]; `412` and `409 ErrorIrresolvableConflict` are
//! [`ProviderError::PreconditionFailed`].

use chrono::{DateTime, SecondsFormat, Utc};
use http::Method;
use http::header::{self, HeaderName};
use serde::Deserialize;
use serde_json::{Value, json};
use url::Url;

use super::error::ProviderError;
use super::outbound::{OutboundGuard, OutboundResponse, retry_after};
use super::rest::{self, endpoint};

/// Items asked for per delta page.
const PAGE_SIZE: u32 = 100;

/// A client of one Graph base URL.
#[derive(Debug, Clone)]
pub struct GraphCalendar {
    guard: OutboundGuard,
    base: Url,
}

/// A calendar of the user.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphCalendarEntry {
    /// Id.
    pub id: String,
    /// Name.
    #[serde(default)]
    pub name: Option<String>,
    /// `#rrggbb` or `""`.
    #[serde(default)]
    pub hex_color: Option<String>,
    /// Whether the user may write to it.
    #[serde(default = "yes")]
    pub can_edit: bool,
    /// The user's default calendar.
    #[serde(default)]
    pub is_default_calendar: bool,
}

fn yes() -> bool {
    true
}

/// Graph's `dateTimeTimeZone`: a wall-clock time (7 fractional digits, no offset) and its
/// zone (IANA or Windows name).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DateTimeZone {
    /// `2026-12-01T09:00:00.0000000`.
    pub date_time: String,
    /// `UTC`, `Europe/Berlin`, `W. Europe Standard Time`, ...
    #[serde(default)]
    pub time_zone: Option<String>,
}

/// Text content.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ItemBody {
    /// The text.
    #[serde(default)]
    pub content: Option<String>,
}

/// A location.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    /// Its name.
    #[serde(default)]
    pub display_name: Option<String>,
}

/// Why an item left a delta.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Removed {
    /// `deleted` (or `changed`).
    #[serde(default)]
    pub reason: Option<String>,
}

/// An event (the fields Bowline maps), or a removed item of a delta.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphEvent {
    /// Id.
    pub id: String,
    /// `W/"<changeKey>"`.
    #[serde(default, rename = "@odata.etag")]
    pub etag: Option<String>,
    /// Set on removed items (deleted, or out of the window).
    #[serde(default, rename = "@removed")]
    pub removed: Option<Removed>,
    /// Changes on every edit.
    #[serde(default)]
    pub change_key: Option<String>,
    /// The item's UID (each occurrence has its own).
    #[serde(default, rename = "iCalUId")]
    pub ical_uid: Option<String>,
    /// Title.
    #[serde(default)]
    pub subject: Option<String>,
    /// Body (plain text, as asked).
    #[serde(default)]
    pub body: Option<ItemBody>,
    /// Start.
    #[serde(default)]
    pub start: Option<DateTimeZone>,
    /// End (exclusive; midnight after the last day for all-day events).
    #[serde(default)]
    pub end: Option<DateTimeZone>,
    /// All day.
    #[serde(default)]
    pub is_all_day: bool,
    /// The organizer cancelled it.
    #[serde(default)]
    pub is_cancelled: bool,
    /// Location.
    #[serde(default)]
    pub location: Option<Location>,
    /// `singleInstance`, `occurrence`, `exception` or `seriesMaster`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// The series of an occurrence or exception.
    #[serde(default)]
    pub series_master_id: Option<String>,
}

impl GraphEvent {
    /// The tag sent back in `If-Match`: `@odata.etag`, else `W/"<changeKey>"`.
    pub fn tag(&self) -> Option<String> {
        self.etag
            .clone()
            .or_else(|| self.change_key.as_ref().map(|key| format!("W/\"{key}\"")))
    }
}

/// One page of a delta round.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DeltaPage {
    /// Changed and removed items.
    #[serde(default)]
    pub value: Vec<GraphEvent>,
    /// More pages in this round.
    #[serde(default, rename = "@odata.nextLink")]
    pub next_link: Option<String>,
    /// The round is over: where the next one starts.
    #[serde(default, rename = "@odata.deltaLink")]
    pub delta_link: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CalendarPage {
    #[serde(default)]
    value: Vec<GraphCalendarEntry>,
    #[serde(default, rename = "@odata.nextLink")]
    next_link: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Debug, Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

impl GraphCalendar {
    /// A client of Graph at `base` (e.g. `https://graph.microsoft.com/v1.0`).
    pub fn new(guard: OutboundGuard, base: &str) -> Result<Self, ProviderError> {
        let base = Url::parse(base)
            .map_err(|err| ProviderError::Malformed(format!("Graph URL: {err}")))?;
        Ok(Self { guard, base })
    }

    async fn call(
        &self,
        token: &str,
        method: Method,
        url: Url,
        body: Option<&Value>,
        if_match: Option<&str>,
        page_size: Option<u32>,
    ) -> Result<OutboundResponse, ProviderError> {
        let prefer = HeaderName::from_static("prefer");
        let mut extra: Vec<(HeaderName, String)> = vec![
            (prefer.clone(), "outlook.timezone=\"UTC\"".to_owned()),
            (prefer.clone(), "IdType=\"ImmutableId\"".to_owned()),
            (
                prefer.clone(),
                "outlook.body-content-type=\"text\"".to_owned(),
            ),
        ];
        if let Some(size) = page_size {
            extra.push((prefer, format!("odata.maxpagesize={size}")));
        }
        if let Some(etag) = if_match {
            extra.push((header::IF_MATCH, etag.to_owned()));
        }
        rest::send(&self.guard, method, url, token, body, &extra, error_of).await
    }

    /// A link Graph handed back, if it stays on Graph's origin.
    fn link(&self, link: &str) -> Result<Url, ProviderError> {
        let url = Url::parse(link)
            .map_err(|err| ProviderError::Malformed(format!("a link Graph sent: {err}")))?;
        if url.origin() != self.base.origin() {
            return Err(ProviderError::Malformed(
                "a link Graph sent leads to another origin".into(),
            ));
        }
        Ok(url)
    }

    /// Every calendar of the user (all pages).
    pub async fn calendars(&self, token: &str) -> Result<Vec<GraphCalendarEntry>, ProviderError> {
        let mut url = endpoint(&self.base, &["me", "calendars"])?;
        let mut entries = Vec::new();
        for _ in 0..1_000 {
            let response = self.call(token, Method::GET, url, None, None, None).await?;
            let page: CalendarPage = rest::json(&response)?;
            entries.extend(page.value);
            match page.next_link {
                Some(next) => url = self.link(&next)?,
                None => return Ok(entries),
            }
        }
        Err(ProviderError::Malformed(
            "the calendar list never ends".into(),
        ))
    }

    /// The first page of a new delta round over `calendar_id` in `[from, to)`.
    pub async fn delta_start(
        &self,
        token: &str,
        calendar_id: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<DeltaPage, ProviderError> {
        let mut url = endpoint(
            &self.base,
            &["me", "calendars", calendar_id, "calendarView", "delta"],
        )?;
        url.query_pairs_mut()
            .append_pair(
                "startDateTime",
                &from.to_rfc3339_opts(SecondsFormat::Secs, true),
            )
            .append_pair(
                "endDateTime",
                &to.to_rfc3339_opts(SecondsFormat::Secs, true),
            );
        let response = self
            .call(token, Method::GET, url, None, None, Some(PAGE_SIZE))
            .await?;
        rest::json(&response)
    }

    /// The page at a `nextLink` or `deltaLink` Graph gave.
    pub async fn delta_page(&self, token: &str, link: &str) -> Result<DeltaPage, ProviderError> {
        let url = self.link(link)?;
        let response = self
            .call(token, Method::GET, url, None, None, Some(PAGE_SIZE))
            .await?;
        rest::json(&response)
    }

    /// One event; `None` if Graph does not know it (any more).
    pub async fn event(
        &self,
        token: &str,
        event_id: &str,
    ) -> Result<Option<GraphEvent>, ProviderError> {
        let url = endpoint(&self.base, &["me", "events", event_id])?;
        match self.call(token, Method::GET, url, None, None, None).await {
            Ok(response) => rest::json(&response).map(Some),
            Err(ProviderError::NotFound) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Creates an event in `calendar_id`.
    pub async fn create_event(
        &self,
        token: &str,
        calendar_id: &str,
        body: &Value,
    ) -> Result<GraphEvent, ProviderError> {
        let url = endpoint(&self.base, &["me", "calendars", calendar_id, "events"])?;
        let response = self
            .call(token, Method::POST, url, Some(body), None, None)
            .await?;
        rest::json(&response)
    }

    /// Changes an event, if its etag is still `etag`.
    pub async fn update_event(
        &self,
        token: &str,
        event_id: &str,
        body: &Value,
        etag: Option<&str>,
    ) -> Result<GraphEvent, ProviderError> {
        let url = endpoint(&self.base, &["me", "events", event_id])?;
        let response = self
            .call(token, Method::PATCH, url, Some(body), etag, None)
            .await?;
        rest::json(&response)
    }

    /// Deletes an event, if its etag is still `etag`; one already gone is not an error.
    pub async fn delete_event(
        &self,
        token: &str,
        event_id: &str,
        etag: Option<&str>,
    ) -> Result<(), ProviderError> {
        let url = endpoint(&self.base, &["me", "events", event_id])?;
        match self
            .call(token, Method::DELETE, url, None, etag, None)
            .await
        {
            Ok(_) | Err(ProviderError::NotFound) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// Creates a calendar; its id.
    pub async fn create_calendar(&self, token: &str, name: &str) -> Result<String, ProviderError> {
        let url = endpoint(&self.base, &["me", "calendars"])?;
        let body = json!({ "name": name });
        let response = self
            .call(token, Method::POST, url, Some(&body), None, None)
            .await?;
        Ok(rest::json::<GraphCalendarEntry>(&response)?.id)
    }

    /// Renames a calendar.
    pub async fn rename_calendar(
        &self,
        token: &str,
        calendar_id: &str,
        name: &str,
    ) -> Result<(), ProviderError> {
        let url = endpoint(&self.base, &["me", "calendars", calendar_id])?;
        let body = json!({ "name": name });
        self.call(token, Method::PATCH, url, Some(&body), None, None)
            .await?;
        Ok(())
    }

    /// Deletes a calendar (Graph refuses the default one).
    pub async fn delete_calendar(
        &self,
        token: &str,
        calendar_id: &str,
    ) -> Result<(), ProviderError> {
        let url = endpoint(&self.base, &["me", "calendars", calendar_id])?;
        self.call(token, Method::DELETE, url, None, None, None)
            .await?;
        Ok(())
    }
}

/// The error of a non-success answer.
fn error_of(response: &OutboundResponse) -> ProviderError {
    let status = response.status.as_u16();
    let body = serde_json::from_slice::<ErrorBody>(&response.body).ok();
    let code = body
        .as_ref()
        .map(|body| body.error.code.as_str())
        .unwrap_or_default();
    let detail = body
        .as_ref()
        .map(|body| format!("{}: {}", body.error.code, body.error.message));
    let message = rest::message(response, detail.as_deref());
    match status {
        401 => ProviderError::Unauthorized,
        403 => ProviderError::Forbidden(message),
        404 => ProviderError::NotFound,
        409 | 412 if code.eq_ignore_ascii_case("ErrorIrresolvableConflict") || status == 412 => {
            ProviderError::PreconditionFailed
        }
        410 => ProviderError::SyncReset,
        _ if code.eq_ignore_ascii_case("syncStateNotFound")
            || code.eq_ignore_ascii_case("resyncRequired") =>
        {
            ProviderError::SyncReset
        }
        408 | 429 | 500..=599 => ProviderError::Unavailable {
            status: Some(status),
            retry_after: retry_after(&response.headers),
        },
        _ => ProviderError::Rejected { status, message },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http::{HeaderMap, StatusCode};

    fn answer(status: u16, code: &str) -> OutboundResponse {
        OutboundResponse {
            status: StatusCode::from_u16(status).unwrap(),
            headers: HeaderMap::new(),
            body: Bytes::from(json!({"error": {"code": code, "message": "m"}}).to_string()),
            url: Url::parse("https://graph.example/").unwrap(),
        }
    }

    #[test]
    fn graphs_errors_mean_what_the_engine_acts_on() {
        assert!(matches!(
            error_of(&answer(412, "ErrorIrresolvableConflict")),
            ProviderError::PreconditionFailed
        ));
        assert!(matches!(
            error_of(&answer(409, "ErrorIrresolvableConflict")),
            ProviderError::PreconditionFailed
        ));
        assert!(matches!(
            error_of(&answer(409, "ErrorFolderExists")),
            ProviderError::Rejected { status: 409, .. }
        ));
        assert!(matches!(
            error_of(&answer(410, "SyncStateNotFound")),
            ProviderError::SyncReset
        ));
        assert!(matches!(
            error_of(&answer(400, "syncStateNotFound")),
            ProviderError::SyncReset
        ));
        assert!(error_of(&answer(429, "TooManyRequests")).is_transient());
        assert!(matches!(
            error_of(&answer(404, "ErrorItemNotFound")),
            ProviderError::NotFound
        ));
    }

    #[test]
    fn links_stay_on_graphs_origin() {
        let guard = crate::providers::outbound::OutboundGuard::new(
            crate::providers::outbound::GuardSettings {
                allow_private_hosts: false,
                connect_timeout: std::time::Duration::from_secs(1),
                total_timeout: std::time::Duration::from_secs(1),
                max_redirects: 0,
                max_body_bytes: 1,
                extra_roots: Vec::new(),
            },
        )
        .unwrap();
        let graph = GraphCalendar::new(guard, "https://graph.example/v1.0").unwrap();
        assert!(
            graph
                .link("https://graph.example/v1.0/me/x?$deltatoken=1")
                .is_ok()
        );
        assert!(graph.link("https://evil.example/v1.0/me/x").is_err());
        let removed: GraphEvent = serde_json::from_value(json!({
            "@odata.type": "#microsoft.graph.event", "id": "A", "@removed": {"reason": "deleted"}
        }))
        .unwrap();
        assert!(removed.removed.is_some());
        let event: GraphEvent =
            serde_json::from_value(json!({"id": "B", "changeKey": "k1"})).unwrap();
        assert_eq!(event.tag().as_deref(), Some("W/\"k1\""));
    }
}
