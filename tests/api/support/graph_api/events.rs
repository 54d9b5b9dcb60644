//! Events as Outlook keeps them: checking what a client writes (times, all-day rules,
//! recurrence, property names), creating, merging patches (an edited occurrence becomes an
//! exception), deleting, and expanding series into occurrences inside a window.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, NaiveTime, Utc};
use serde_json::{Map, Value, json};

use super::recurrence::Recurrence;
use super::reply::Failure;
use super::state::{
    EventRecord, Kind, Stamp, State, ViewItem, When, occurrence_id, parse_occurrence_id,
};
use super::times::{format_local, instant, parse_local, zone};

/// Properties a client may write.
const WRITABLE: &[&str] = &[
    "subject",
    "body",
    "start",
    "end",
    "isAllDay",
    "location",
    "locations",
    "recurrence",
    "showAs",
    "sensitivity",
    "importance",
    "categories",
    "attendees",
    "isReminderOn",
    "reminderMinutesBeforeStart",
    "transactionId",
    "responseRequested",
    "allowNewTimeProposals",
    "isOnlineMeeting",
    "onlineMeetingProvider",
    "hideAttendees",
    "singleValueExtendedProperties",
    "multiValueExtendedProperties",
];

/// Properties of the resource that Graph ignores on writes (read-only or set by actions).
const IGNORED: &[&str] = &[
    "id",
    "changeKey",
    "createdDateTime",
    "lastModifiedDateTime",
    "iCalUId",
    "type",
    "seriesMasterId",
    "webLink",
    "organizer",
    "bodyPreview",
    "hasAttachments",
    "isOrganizer",
    "responseStatus",
    "isDraft",
    "onlineMeeting",
    "onlineMeetingUrl",
    "isCancelled",
    "originalStartTimeZone",
    "originalEndTimeZone",
    "originalStart",
];

fn stamp(props: &Map<String, Value>, field: &str) -> Result<Stamp, Failure> {
    let value = props
        .get(field)
        .filter(|v| v.is_object())
        .ok_or_else(|| Failure::invalid(format!("The '{field}' property is required.")))?;
    let text = value
        .get("dateTime")
        .and_then(Value::as_str)
        .ok_or_else(|| Failure::invalid(format!("{field}.dateTime is required.")))?;
    let local = parse_local(text).map_err(|why| Failure::invalid(format!("{field}: {why}")))?;
    let zone_name = value
        .get("timeZone")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let tz = zone(zone_name).ok_or_else(|| {
        Failure::new(
            400,
            "TimeZoneNotSupportedException",
            format!(
                "A valid TimeZone value must be specified. The following TimeZone value is not supported: '{zone_name}'."
            ),
        )
    })?;
    Ok(Stamp {
        local,
        zone: zone_name.to_owned(),
        tz,
    })
}

/// Reads and checks the times of `props`.
fn when(props: &Map<String, Value>) -> Result<When, Failure> {
    let start = stamp(props, "start")?;
    let end = stamp(props, "end")?;
    let all_day = props
        .get("isAllDay")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if all_day && (start.local.time() != NaiveTime::MIN || end.local.time() != NaiveTime::MIN) {
        return Err(Failure::invalid(
            "If IsAllDay is true, the start and end times must be set to midnight.",
        ));
    }
    let when = When {
        start,
        end,
        all_day,
    };
    let (from, to) = when.span();
    if to < from || (all_day && to == from) {
        return Err(Failure::invalid(
            "The end of the event must be after its start.",
        ));
    }
    Ok(when)
}

/// Refuses property names the `event` type does not have.
fn check_names(body: &Map<String, Value>) -> Result<(), Failure> {
    for name in body.keys() {
        let known = name.starts_with('@')
            || WRITABLE.contains(&name.as_str())
            || IGNORED.contains(&name.as_str());
        if !known {
            return Err(Failure::new(
                400,
                "RequestBodyRead",
                format!(
                    "The property '{name}' does not exist on type 'microsoft.graph.event'. Make sure to only use property names that are defined by the type or mark the type as open type."
                ),
            ));
        }
    }
    Ok(())
}

/// The writable properties of `body` (plus `isCancelled` when the owner writes in Outlook).
fn writable(body: &Map<String, Value>, owner: bool) -> Map<String, Value> {
    body.iter()
        .filter(|(k, _)| WRITABLE.contains(&k.as_str()) || (owner && k.as_str() == "isCancelled"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn kind_for(props: &Map<String, Value>) -> Result<Kind, Failure> {
    match props.get("recurrence") {
        None | Some(Value::Null) => Ok(Kind::Single),
        Some(value) => Ok(Kind::Master {
            recurrence: Recurrence::parse(value).map_err(Failure::invalid)?,
            cancelled: BTreeSet::new(),
        }),
    }
}

/// Creates an event in `calendar_id`; a repeated `transactionId` there returns the event
/// the first request made. `owner` is Outlook's own user (may set `isCancelled`).
pub(super) fn create(
    state: &mut State,
    calendar_id: &str,
    body: &Map<String, Value>,
    owner: bool,
) -> Result<String, Failure> {
    check_names(body)?;
    let transaction_id = body
        .get("transactionId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(tx) = &transaction_id
        && let Some(existing) = state.events.values().find(|e| {
            e.calendar_id == calendar_id && e.transaction_id.as_deref() == Some(tx.as_str())
        })
    {
        return Ok(existing.id.clone());
    }
    let props = writable(body, owner);
    let when = when(&props)?;
    let kind = kind_for(&props)?;
    let id = State::new_event_id();
    let now = Utc::now();
    let record = EventRecord {
        id: id.clone(),
        calendar_id: calendar_id.to_owned(),
        seq: state.next_seq(),
        ical_uid: format!(
            "040000008200E00074C5B7101A82E00800000000{}",
            uuid::Uuid::new_v4().simple().to_string().to_uppercase()
        ),
        change_key: State::new_change_key(),
        created: now,
        modified: now,
        props,
        when,
        kind,
        transaction_id,
    };
    state.events.insert(id.clone(), record);
    Ok(id)
}

/// The occurrence of `master` that originally starts at `original`, as Graph shows it.
fn occurrence(master: &EventRecord, original: DateTime<Utc>) -> EventRecord {
    let mut record = master.clone();
    let (from, to) = master.when.span();
    let length = to - from;
    if master.when.all_day {
        let day = original.date_naive();
        let days = master.when.end.local.date() - master.when.start.local.date();
        record.when.start.local = day.and_time(NaiveTime::MIN);
        record.when.end.local = (day + days).and_time(NaiveTime::MIN);
    } else {
        let start_tz = master.when.start.tz;
        let end_tz = master.when.end.tz;
        record.when.start.local = original.with_timezone(&start_tz).naive_local();
        record.when.end.local = (original + length).with_timezone(&end_tz).naive_local();
    }
    record.id = occurrence_id(&master.id, original);
    record.ical_uid = format!(
        "{}{}",
        &master.ical_uid[..master.ical_uid.len().min(40)],
        original.format("%Y%m%d%H%M%S")
    );
    record.props.remove("recurrence");
    for (field, stamp) in [("start", &record.when.start), ("end", &record.when.end)] {
        record.props.insert(
            field.to_owned(),
            json!({"dateTime": format_local(stamp.local), "timeZone": stamp.zone}),
        );
    }
    record.kind = Kind::Occurrence {
        master_id: master.id.clone(),
        original,
    };
    record
}

/// Original starts of the occurrences of `master` (before exceptions and deletions) that
/// begin no later than `until`.
fn originals(master: &EventRecord, until: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let Kind::Master { recurrence, .. } = &master.kind else {
        return Vec::new();
    };
    let series_tz = recurrence
        .zone
        .as_deref()
        .and_then(zone)
        .unwrap_or(master.when.start.tz);
    let time = master.when.start.local.time();
    recurrence
        .dates_until((until + Duration::days(2)).date_naive())
        .into_iter()
        .map(|day| {
            if master.when.all_day {
                super::times::day_start(day)
            } else {
                instant(series_tz, day.and_time(time))
            }
        })
        .collect()
}

/// Every item of `calendar_id` inside `window`, by start: singles, occurrences and
/// exceptions (a series master is not an item of a view).
pub(super) fn view(
    state: &State,
    calendar_id: &str,
    window: (DateTime<Utc>, DateTime<Utc>),
) -> Vec<ViewItem> {
    let mut items = Vec::new();
    for record in state
        .events
        .values()
        .filter(|e| e.calendar_id == calendar_id)
    {
        match &record.kind {
            Kind::Single | Kind::Exception { .. } => {
                if record.when.overlaps(window) {
                    items.push(ViewItem {
                        id: record.id.clone(),
                        version: record.change_key.clone(),
                        start: record.when.span().0,
                    });
                }
            }
            Kind::Master { cancelled, .. } => {
                for original in originals(record, window.1) {
                    let id = occurrence_id(&record.id, original);
                    if cancelled.contains(&original) || state.events.contains_key(&id) {
                        continue;
                    }
                    let instance = occurrence(record, original);
                    if instance.when.overlaps(window) {
                        items.push(ViewItem {
                            id,
                            version: record.change_key.clone(),
                            start: instance.when.span().0,
                        });
                    }
                }
            }
            Kind::Occurrence { .. } => {}
        }
    }
    items.sort_by(|a, b| (a.start, &a.id).cmp(&(b.start, &b.id)));
    items
}

/// The record behind `id`: stored, or an occurrence computed from its live master.
pub(super) fn find(state: &State, id: &str) -> Option<EventRecord> {
    if let Some(record) = state.events.get(id) {
        return Some(record.clone());
    }
    let (master_id, original) = parse_occurrence_id(id)?;
    let master = state.events.get(&master_id)?;
    let Kind::Master { cancelled, .. } = &master.kind else {
        return None;
    };
    if cancelled.contains(&original) || !originals(master, original).contains(&original) {
        return None;
    }
    Some(occurrence(master, original))
}

/// Merges `body` into event `id` (an occurrence becomes an exception); a new change key.
pub(super) fn patch(
    state: &mut State,
    id: &str,
    body: &Map<String, Value>,
    owner: bool,
) -> Result<(), Failure> {
    check_names(body)?;
    let mut record = find(state, id).ok_or_else(Failure::not_found)?;
    let before = record.props.clone();
    for (name, value) in writable(body, owner) {
        if value.is_null() {
            record.props.remove(&name);
        } else {
            record.props.insert(name, value);
        }
    }
    record.when = when(&record.props)?;
    let timing_changed = ["start", "end", "recurrence", "isAllDay"]
        .iter()
        .any(|f| before.get(*f) != record.props.get(*f));
    record.kind = match record.kind {
        Kind::Occurrence {
            master_id,
            original,
        }
        | Kind::Exception {
            master_id,
            original,
        } => {
            if record.props.get("recurrence").is_some_and(|r| !r.is_null()) {
                return Err(Failure::invalid(
                    "An occurrence of a series cannot have a recurrence.",
                ));
            }
            Kind::Exception {
                master_id,
                original,
            }
        }
        Kind::Master { cancelled, .. } if !timing_changed => {
            let Kind::Master { recurrence, .. } = kind_for(&record.props)? else {
                return Err(Failure::invalid("The series lost its recurrence."));
            };
            Kind::Master {
                recurrence,
                cancelled,
            }
        }
        Kind::Single | Kind::Master { .. } => kind_for(&record.props)?,
    };
    if timing_changed && matches!(before.get("recurrence"), Some(r) if !r.is_null()) {
        // Outlook drops the exceptions of a series whose timing changed.
        state.events.retain(|_, e| e.kind.master_id() != Some(id));
    }
    if let Some(tx) = body.get("transactionId").and_then(Value::as_str) {
        record.transaction_id = Some(tx.to_owned());
    }
    record.change_key = State::new_change_key();
    record.modified = Utc::now();
    state.events.insert(record.id.clone(), record);
    Ok(())
}

/// Deletes event `id`: a master with its exceptions, an occurrence or exception from its
/// series.
pub(super) fn delete(state: &mut State, id: &str) -> Result<(), Failure> {
    let record = find(state, id).ok_or_else(Failure::not_found)?;
    match &record.kind {
        Kind::Single => {
            state.events.remove(id);
        }
        Kind::Master { .. } => {
            state.events.remove(id);
            state.events.retain(|_, e| e.kind.master_id() != Some(id));
        }
        Kind::Exception {
            master_id,
            original,
        }
        | Kind::Occurrence {
            master_id,
            original,
        } => {
            state.events.remove(id);
            if let Some(EventRecord {
                kind: Kind::Master { cancelled, .. },
                ..
            }) = state.events.get_mut(master_id)
            {
                cancelled.insert(*original);
            }
        }
    }
    Ok(())
}
