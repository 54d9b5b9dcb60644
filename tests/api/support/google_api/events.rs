//! Events as Google keeps them: inserting (client ids, 409 on a taken id), reading an
//! event or a not yet materialized instance of a series, writing with PUT or PATCH (an
//! edited instance becomes an exception; `If-Match` checked against the quoted etag),
//! deleting into `cancelled` tombstones (a series takes its exceptions with it).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::recurrence::{default_instance, is_occurrence};
use super::reply::{Reply, api_error, invalid, not_found};
use super::state::{State, Stored, random_base32hex};
use super::times::{When, parse_event_time};
use super::validate::{normalize_and_validate, writable_fields};

/// How an existing event is written.
pub(super) enum Write {
    /// PUT: the body replaces every writable field.
    Replace(Map<String, Value>),
    /// PATCH: merged into the event.
    Patch(Map<String, Value>),
}

impl State {
    /// A change in calendar `ci`: its change sequence moves on (returned) and `updated`.
    fn bump(&mut self, ci: usize) -> u64 {
        let updated = self.next_update();
        let calendar = &mut self.calendars[ci];
        calendar.seq += 1;
        calendar.updated = updated;
        calendar.seq
    }

    /// The calendar's zone (times without their own zone are written in it).
    pub(super) fn calendar_zone(&self, ci: usize) -> chrono_tz::Tz {
        self.calendars[ci]
            .time_zone
            .parse()
            .unwrap_or(chrono_tz::UTC)
    }

    /// `events.insert`: a new event with a given or a generated id (409 when the id is
    /// taken, even by a deleted event).
    pub(super) fn insert_event(
        &mut self,
        ci: usize,
        body: Map<String, Value>,
    ) -> Result<Map<String, Value>, Reply> {
        let id = match body.get("id") {
            None | Some(Value::Null) => loop {
                let id = random_base32hex(26);
                if !self.calendars[ci].index.contains_key(&id) {
                    break id;
                }
            },
            Some(Value::String(id)) => {
                if !is_valid_event_id(id) {
                    return Err(api_error(
                        400,
                        "invalidResourceId",
                        "Invalid resource id value.",
                    ));
                }
                if self.calendars[ci].index.contains_key(id) {
                    return Err(api_error(
                        409,
                        "duplicate",
                        "The requested identifier already exists.",
                    ));
                }
                id.clone()
            }
            Some(_) => {
                return Err(api_error(
                    400,
                    "invalidResourceId",
                    "Invalid resource id value.",
                ));
            }
        };
        if body.get("status").and_then(Value::as_str) == Some("cancelled") {
            return Err(invalid("Invalid value for: status"));
        }
        if body.contains_key("recurringEventId") || body.contains_key("originalStartTime") {
            return Err(invalid(
                "Instances are created by their series, not inserted.",
            ));
        }
        let zone = self.calendar_zone(ci);
        let mut content = writable_fields(&body);
        normalize_and_validate(&mut content, zone, false)?;
        let ical_uid = match body.get("iCalUID").and_then(Value::as_str) {
            Some(uid) if !uid.is_empty() => uid.to_owned(),
            _ => format!("{id}@google.com"),
        };
        let etag = self.next_etag();
        let now = self.next_update();
        let calendar = &self.calendars[ci];
        let owner_email = self.owner_email(ci);
        let mut event = Map::new();
        event.insert("kind".into(), json!("calendar#event"));
        event.insert("etag".into(), json!(etag));
        event.insert("id".into(), json!(id));
        event.insert("status".into(), json!("confirmed"));
        event.insert("htmlLink".into(), json!(html_link(&id, &calendar.id)));
        event.insert("created".into(), json!(now));
        event.insert("updated".into(), json!(now));
        let sequence = content
            .remove("sequence")
            .and_then(|s| s.as_u64())
            .unwrap_or(0);
        for (key, value) in content {
            event.insert(key, value);
        }
        if !event.contains_key("status") {
            event.insert("status".into(), json!("confirmed"));
        }
        event.insert(
            "creator".into(),
            json!({"email": owner_email, "self": true}),
        );
        event.insert(
            "organizer".into(),
            organizer(&calendar.id, &calendar.summary, calendar.primary),
        );
        event.insert("iCalUID".into(), json!(ical_uid));
        event.insert("sequence".into(), json!(sequence));
        if !event.contains_key("reminders") {
            event.insert("reminders".into(), json!({"useDefault": true}));
        }
        if !event.contains_key("eventType") {
            event.insert("eventType".into(), json!("default"));
        }
        let seq = self.bump(ci);
        let calendar = &mut self.calendars[ci];
        calendar.index.insert(id, calendar.events.len());
        calendar.events.push(Stored {
            body: event.clone(),
            changed_at: seq,
        });
        Ok(event)
    }

    /// The calendar owner's address (the calendar id for calendars of outsiders).
    fn owner_email(&self, ci: usize) -> String {
        let owner = &self.calendars[ci].owner;
        self.accounts
            .iter()
            .find(|a| &a.user.sub == owner)
            .map(|a| a.user.email.clone())
            .unwrap_or_else(|| self.calendars[ci].id.clone())
    }

    /// The stored event or the instance of a series this id names, as `events.get` shows it.
    pub(super) fn get_event(&self, ci: usize, event_id: &str) -> Option<Map<String, Value>> {
        let calendar = &self.calendars[ci];
        if let Some(&pos) = calendar.index.get(event_id) {
            return Some(calendar.events[pos].body.clone());
        }
        let (master, original) = self.virtual_instance(ci, event_id)?;
        Some(default_instance(&calendar.events[master].body, &original))
    }

    /// `(master position, original start)` of an instance id (`<master>_<stamp>`) of a
    /// live series that has no exception stored yet.
    fn virtual_instance(&self, ci: usize, event_id: &str) -> Option<(usize, When)> {
        let (master_id, stamp) = event_id.rsplit_once('_')?;
        let calendar = &self.calendars[ci];
        let &pos = calendar.index.get(master_id)?;
        let master = &calendar.events[pos].body;
        if is_cancelled(master) || !master.contains_key("recurrence") {
            return None;
        }
        let original = When::from_stamp(stamp)?;
        is_occurrence(master, original).then_some((pos, original))
    }

    /// The instance id of `master_id`'s occurrence at `original_start` (panics when the
    /// series has no such occurrence).
    pub(super) fn instance_id(&self, ci: usize, master_id: &str, original_start: &Value) -> String {
        let calendar = &self.calendars[ci];
        let pos = *calendar.index.get(master_id).expect("known series");
        let master = &calendar.events[pos].body;
        let (original, _) = parse_event_time(original_start, "start", chrono_tz::UTC)
            .unwrap_or_else(|reply| panic!("original start: {:?}", reply.body));
        assert!(
            is_occurrence(master, original),
            "the series {master_id} has no instance at {original_start}"
        );
        format!("{master_id}_{}", original.stamp())
    }

    /// PUT or PATCH of an existing event or of an instance of a series (which becomes an
    /// exception). `if_match`: the etag the client expects.
    pub(super) fn write_existing(
        &mut self,
        ci: usize,
        event_id: &str,
        if_match: Option<&str>,
        write: Write,
    ) -> Result<Map<String, Value>, Reply> {
        let zone = self.calendar_zone(ci);
        let (current, position) = match self.calendars[ci].index.get(event_id) {
            Some(&pos) => (self.calendars[ci].events[pos].body.clone(), Some(pos)),
            None => match self.virtual_instance(ci, event_id) {
                Some((master, original)) => (
                    default_instance(&self.calendars[ci].events[master].body, &original),
                    None,
                ),
                None => return Err(not_found()),
            },
        };
        if is_cancelled(&current) {
            return Err(not_found());
        }
        check_if_match(if_match, &current)?;
        let is_instance = current.contains_key("recurringEventId");
        let mut content = match write {
            Write::Replace(body) => writable_fields(&body),
            Write::Patch(patch) => {
                let mut merged = writable_fields(&current);
                for (key, value) in writable_fields(&patch) {
                    if value.is_null() {
                        merged.remove(&key);
                    } else if matches!(key.as_str(), "start" | "end") {
                        merged.insert(key, value);
                    } else {
                        let slot = merged.entry(key).or_insert(Value::Null);
                        merge_patch(slot, value);
                    }
                }
                merged
            }
        };
        if is_instance && content.contains_key("recurrence") {
            return Err(invalid("Invalid recurrence rule."));
        }
        normalize_and_validate(&mut content, zone, true)?;
        let current_sequence = current.get("sequence").and_then(Value::as_u64).unwrap_or(0);
        let sequence = match content.remove("sequence") {
            Some(given) => {
                let given = given
                    .as_u64()
                    .ok_or_else(|| invalid("Invalid sequence value."))?;
                if given < current_sequence {
                    return Err(invalid(
                        "Invalid sequence value. The specified sequence number is below the \
                         current sequence number of the resource.",
                    ));
                }
                given
            }
            None => current_sequence,
        };
        let timing_changed = ["start", "end", "recurrence"]
            .iter()
            .any(|key| content.get(*key) != current.get(*key));
        let etag = self.next_etag();
        let now = self.next_update();
        let mut event = Map::new();
        for key in [
            "kind", "etag", "id", "status", "htmlLink", "created", "updated",
        ] {
            if let Some(value) = current.get(key) {
                event.insert(key.to_owned(), value.clone());
            }
        }
        event.insert("etag".into(), json!(etag));
        event.insert("updated".into(), json!(now));
        if position.is_none() {
            // A new exception: its own creation.
            event.insert("created".into(), json!(now));
            event.insert(
                "htmlLink".into(),
                json!(html_link(event_id, &self.calendars[ci].id)),
            );
        }
        for (key, value) in content {
            event.insert(key, value);
        }
        if !event.contains_key("status") {
            event.insert("status".into(), json!("confirmed"));
        }
        for key in [
            "creator",
            "organizer",
            "recurringEventId",
            "originalStartTime",
            "iCalUID",
        ] {
            if let Some(value) = current.get(key) {
                event.insert(key.to_owned(), value.clone());
            }
        }
        event.insert(
            "sequence".into(),
            json!(sequence + u64::from(timing_changed && sequence == current_sequence)),
        );
        if !event.contains_key("reminders") {
            event.insert("reminders".into(), json!({"useDefault": true}));
        }
        if !event.contains_key("eventType") {
            event.insert("eventType".into(), json!("default"));
        }
        let cancelled_now = is_cancelled(&event);
        let seq = self.bump(ci);
        let calendar = &mut self.calendars[ci];
        let pos = match position {
            Some(pos) => {
                calendar.events[pos] = Stored {
                    body: event.clone(),
                    changed_at: seq,
                };
                pos
            }
            None => {
                calendar
                    .index
                    .insert(event_id.to_owned(), calendar.events.len());
                calendar.events.push(Stored {
                    body: event.clone(),
                    changed_at: seq,
                });
                calendar.events.len() - 1
            }
        };
        if cancelled_now {
            self.cancel_exceptions_of(ci, pos, seq);
        }
        Ok(event)
    }

    /// DELETE: the event (or an instance of a series) becomes a cancelled tombstone.
    pub(super) fn delete_event(
        &mut self,
        ci: usize,
        event_id: &str,
        if_match: Option<&str>,
    ) -> Result<(), Reply> {
        match self.calendars[ci].index.get(event_id).copied() {
            Some(pos) => {
                let current = &self.calendars[ci].events[pos].body;
                if is_cancelled(current) {
                    return Err(api_error(410, "deleted", "Resource has been deleted"));
                }
                check_if_match(if_match, current)?;
                let etag = self.next_etag();
                let now = self.next_update();
                let seq = self.bump(ci);
                let stored = &mut self.calendars[ci].events[pos];
                stored.body.insert("status".into(), json!("cancelled"));
                stored.body.insert("etag".into(), json!(etag));
                stored.body.insert("updated".into(), json!(now));
                stored.changed_at = seq;
                self.cancel_exceptions_of(ci, pos, seq);
                Ok(())
            }
            None => {
                let Some((master, original)) = self.virtual_instance(ci, event_id) else {
                    return Err(not_found());
                };
                let mut instance =
                    default_instance(&self.calendars[ci].events[master].body, &original);
                check_if_match(if_match, &instance)?;
                let etag = self.next_etag();
                let now = self.next_update();
                instance.insert("status".into(), json!("cancelled"));
                instance.insert("etag".into(), json!(etag));
                instance.insert("created".into(), json!(now));
                instance.insert("updated".into(), json!(now));
                let seq = self.bump(ci);
                let calendar = &mut self.calendars[ci];
                calendar
                    .index
                    .insert(event_id.to_owned(), calendar.events.len());
                calendar.events.push(Stored {
                    body: instance,
                    changed_at: seq,
                });
                Ok(())
            }
        }
    }

    /// A deleted series takes its exceptions with it.
    fn cancel_exceptions_of(&mut self, ci: usize, master: usize, seq: u64) {
        let master_id = self.calendars[ci].events[master].body["id"].clone();
        if !self.calendars[ci].events[master]
            .body
            .contains_key("recurrence")
        {
            return;
        }
        let exceptions: Vec<usize> = self.calendars[ci]
            .events
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.body.get("recurringEventId") == Some(&master_id) && !is_cancelled(&s.body)
            })
            .map(|(pos, _)| pos)
            .collect();
        for pos in exceptions {
            let etag = self.next_etag();
            let stored = &mut self.calendars[ci].events[pos];
            stored.body.insert("status".into(), json!("cancelled"));
            stored.body.insert("etag".into(), json!(etag));
            stored.changed_at = seq;
        }
    }
}

/// Whether the event is a `cancelled` tombstone.
pub(super) fn is_cancelled(body: &Map<String, Value>) -> bool {
    body.get("status").and_then(Value::as_str) == Some("cancelled")
}

/// Google's rule for client-chosen ids: base32hex (`a-v`, `0-9`), 5 to 1024 characters.
fn is_valid_event_id(id: &str) -> bool {
    (5..=1024).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'v').contains(&b))
}

/// The event's link in Google Calendar's web app.
fn html_link(event_id: &str, calendar_id: &str) -> String {
    let eid = STANDARD.encode(format!("{event_id} {calendar_id}"));
    format!(
        "https://www.google.com/calendar/event?eid={}",
        eid.trim_end_matches('=')
    )
}

/// The organizer of events of a calendar, as its owner writes them.
fn organizer(calendar_id: &str, summary: &str, primary: bool) -> Value {
    if primary {
        json!({"email": calendar_id, "self": true})
    } else {
        json!({"email": calendar_id, "displayName": summary, "self": true})
    }
}

/// RFC 7396 merge of `patch` into `target`.
fn merge_patch(target: &mut Value, patch: Value) {
    match patch {
        Value::Object(patch) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let target = target.as_object_mut().expect("object");
            for (key, value) in patch {
                if value.is_null() {
                    target.remove(&key);
                } else {
                    merge_patch(target.entry(key).or_insert(Value::Null), value);
                }
            }
        }
        other => *target = other,
    }
}

/// 412 `conditionNotMet` unless `If-Match` (when sent) is `*` or the current etag.
fn check_if_match(if_match: Option<&str>, current: &Map<String, Value>) -> Result<(), Reply> {
    let Some(expected) = if_match else {
        return Ok(());
    };
    let etag = current
        .get("etag")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if expected == "*" || expected == etag {
        Ok(())
    } else {
        Err(Reply::json(
            412,
            json!({"error": {
                "errors": [{
                    "domain": "global",
                    "reason": "conditionNotMet",
                    "message": "Precondition Failed",
                    "locationType": "header",
                    "location": "If-Match",
                }],
                "code": 412,
                "message": "Precondition Failed",
            }}),
        ))
    }
}
