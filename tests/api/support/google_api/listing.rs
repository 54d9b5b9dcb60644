//! Events lists: the items a listing holds (a series expanded into instances with
//! `singleEvents=true`, cancelled items as tombstones where Google shows them), in a
//! stable order that page tokens continue, and incremental lists cut from sync tokens.

use serde_json::{Map, Value, json};

use super::events::is_cancelled;
use super::recurrence::{default_instance, occurrences};
use super::reply::{
    Answer, Reply, full_sync_required, invalid_parameter, sync_token_restriction,
    unimplemented_parameter,
};
use super::server::Request;
use super::state::{DEFAULT_PAGE_SIZE, State, Stored, SyncScope};
use super::times::{When, parse_event_time};

impl State {
    /// The items of an events list, each with its stable position `(event, instance)`.
    fn event_items(&self, ci: usize, filter: &EventFilter) -> Vec<((usize, usize), Value)> {
        let events = &self.calendars[ci].events;
        let changed = |stored: &Stored| filter.since.is_none_or(|from| stored.changed_at > from);
        let uid_matches = |body: &Map<String, Value>| {
            filter
                .ical_uid
                .as_deref()
                .is_none_or(|uid| body.get("iCalUID").and_then(Value::as_str) == Some(uid))
        };
        let parent_live = |body: &Map<String, Value>| {
            body.get("recurringEventId")
                .and_then(Value::as_str)
                .and_then(|master| self.calendars[ci].index.get(master))
                .is_some_and(|&pos| !is_cancelled(&events[pos].body))
        };
        let mut items = Vec::new();
        for (pos, stored) in events.iter().enumerate() {
            let body = &stored.body;
            if !uid_matches(body) {
                continue;
            }
            let cancelled = is_cancelled(body);
            let is_exception = body.contains_key("recurringEventId");
            let is_master = body.contains_key("recurrence");
            if !filter.single_events || !(is_master || is_exception) {
                if !changed(stored) {
                    continue;
                }
                let listed = !cancelled
                    || filter.since.is_some()
                    || filter.show_deleted
                    || (is_exception && parent_live(body) && !filter.single_events);
                if listed {
                    items.push(((pos, 0), listed_event(body)));
                }
                continue;
            }
            if is_exception {
                continue; // listed with its series
            }
            // A series, expanded.
            if cancelled {
                if filter.since.is_some() && changed(stored) {
                    items.push(((pos, 0), listed_event(body)));
                }
                continue;
            }
            let master_id = body.get("id").cloned().unwrap_or(Value::Null);
            let exceptions: Vec<(When, &Stored)> = events
                .iter()
                .filter(|s| s.body.get("recurringEventId") == Some(&master_id))
                .filter_map(|s| {
                    let original = s.body.get("originalStartTime")?;
                    let (when, _) = parse_event_time(original, "start", chrono_tz::UTC).ok()?;
                    Some((when, s))
                })
                .collect();
            let mut starts = occurrences(body);
            for (when, _) in &exceptions {
                if !starts.contains(when) {
                    starts.push(*when);
                }
            }
            starts.sort();
            for (k, original) in starts.into_iter().enumerate() {
                let key = (pos, k + 1);
                match exceptions.iter().find(|(when, _)| *when == original) {
                    Some((_, exception)) => {
                        if !(changed(stored) || changed(exception)) {
                            continue;
                        }
                        if !is_cancelled(&exception.body)
                            || filter.since.is_some()
                            || filter.show_deleted
                        {
                            items.push((key, listed_event(&exception.body)));
                        }
                    }
                    None => {
                        if changed(stored) {
                            items.push((key, Value::Object(default_instance(body, &original))));
                        }
                    }
                }
            }
        }
        items
    }

    /// `GET calendars/{cid}/events`: paged (page tokens tied to the query and to the
    /// snapshot the listing started from), incremental with a sync token (410 when it
    /// expired, also mid-pagination when the test arms it), `nextSyncToken` on the last
    /// page only.
    pub(super) fn list_events(&mut self, ci: usize, role: &str, request: &Request) -> Answer {
        let max_results = request.max_results(DEFAULT_PAGE_SIZE, 2500)?;
        let sync_token = request.param("syncToken");
        let show_deleted = request.bool_param("showDeleted")?;
        let single_events = request.bool_param("singleEvents")?.unwrap_or(false);
        let ical_uid = request.param("iCalUID");
        const RESTRICTIONS: &[&str] = &[
            "timeMin",
            "timeMax",
            "q",
            "orderBy",
            "updatedMin",
            "iCalUID",
            "privateExtendedProperty",
            "sharedExtendedProperty",
        ];
        let params = request.params();
        if sync_token.is_some() {
            if params
                .iter()
                .any(|(k, _)| RESTRICTIONS.contains(&k.as_str()))
            {
                return Err(sync_token_restriction());
            }
            if show_deleted == Some(false) {
                return Err(invalid_parameter(
                    "showDeleted",
                    "showDeleted must not be false with a sync token.",
                ));
            }
        } else if let Some((name, _)) = params
            .iter()
            .find(|(k, _)| RESTRICTIONS.contains(&k.as_str()) && k != "iCalUID")
        {
            return Err(unimplemented_parameter(name));
        }
        let scope = SyncScope::Events(self.calendars[ci].id.clone());
        let fingerprint = request.fingerprint(&format!("events:{}", self.calendars[ci].id));
        let (since, snapshot, after, pages_before_expiry) = match request.param("pageToken") {
            Some(page_token) => {
                let since = match &sync_token {
                    Some(token) => Some(self.check_sync_token(token, &scope)?),
                    None => None,
                };
                let cursor = self.cursor(&page_token, &fingerprint)?;
                let (snapshot, after, pages) = (
                    cursor.snapshot_seq,
                    cursor.after,
                    cursor.pages_before_expiry,
                );
                if pages == Some(0) {
                    self.expire_sync_tokens();
                    return Err(full_sync_required());
                }
                (since, snapshot, Some(after), pages.map(|n| n - 1))
            }
            None => {
                let since = match &sync_token {
                    Some(token) => Some(self.check_sync_token(token, &scope)?),
                    None => None,
                };
                let pages = if since.is_some() {
                    self.expire_after_pages.take()
                } else {
                    None
                };
                if pages == Some(0) {
                    self.expire_sync_tokens();
                    return Err(full_sync_required());
                }
                (since, self.calendars[ci].seq, None, pages.map(|n| n - 1))
            }
        };
        let filter = EventFilter {
            since,
            show_deleted: show_deleted == Some(true),
            single_events,
            ical_uid,
        };
        let items: Vec<((usize, usize), Value)> = self
            .event_items(ci, &filter)
            .into_iter()
            .filter(|(key, _)| after.is_none_or(|after| *key > after))
            .collect();
        let page_size = max_results.min(self.page_size);
        let more = items.len() > page_size;
        let page: Vec<((usize, usize), Value)> = items.into_iter().take(page_size).collect();
        let calendar = &self.calendars[ci];
        let mut body = Map::new();
        body.insert("kind".into(), json!("calendar#events"));
        body.insert("etag".into(), json!(format!("\"p3{:013}\"", snapshot)));
        body.insert("summary".into(), json!(calendar.summary));
        body.insert(
            "description".into(),
            json!(calendar.description.clone().unwrap_or_default()),
        );
        body.insert("updated".into(), json!(calendar.updated));
        body.insert("timeZone".into(), json!(calendar.time_zone));
        body.insert("accessRole".into(), json!(role));
        body.insert(
            "defaultReminders".into(),
            if calendar.primary {
                json!([{"method": "popup", "minutes": 30}])
            } else {
                json!([])
            },
        );
        if more {
            let last = page.last().map(|(key, _)| *key).unwrap_or((0, 0));
            let token = self.new_cursor(fingerprint, last, snapshot, pages_before_expiry);
            body.insert("nextPageToken".into(), json!(token));
        } else {
            let token = self.sync_token(scope, snapshot);
            body.insert("nextSyncToken".into(), json!(token));
        }
        body.insert(
            "items".into(),
            Value::Array(page.into_iter().map(|(_, v)| v).collect()),
        );
        Ok(Reply::json(200, Value::Object(body)))
    }
}

/// What an events list asks for.
struct EventFilter {
    /// Changes after this sequence only (a sync token).
    since: Option<u64>,
    show_deleted: bool,
    single_events: bool,
    ical_uid: Option<String>,
}

/// An event as lists show it: the whole resource, or a tombstone when cancelled.
fn listed_event(body: &Map<String, Value>) -> Value {
    if !is_cancelled(body) {
        return Value::Object(body.clone());
    }
    let mut tombstone = Map::new();
    for key in [
        "kind",
        "etag",
        "id",
        "status",
        "recurringEventId",
        "originalStartTime",
    ] {
        if let Some(value) = body.get(key) {
            tombstone.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(tombstone)
}
