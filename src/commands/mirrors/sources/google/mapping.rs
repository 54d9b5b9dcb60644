//! Google events as Bowline reads and writes them: a series (master, edited and removed
//! instances) as VEVENTs for the importer, the resource's tag (the master's etag, with a
//! digest of its instances' when it has some) and the `If-Match` it sends, Google's times,
//! and an event's body for Google (all-day ends shifted to Google's exclusive date, the
//! recurrence as iCalendar lines, times of day with the owner's zone).

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use entities::events;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::commands::mirrors::resources::Fetched;
use crate::commands::mirrors::sources::vevent::{self, Item, When};
use crate::ical::export::recurrence_lines;
use crate::ical::timezones::named_zone;
use crate::providers::google::{EventTime, GoogleEvent};

/// The resource text of a master and its instances.
pub fn fetched(master: &GoogleEvent, instances: &[GoogleEvent]) -> Fetched {
    Fetched {
        href: master.id.clone(),
        etag: resource_tag(master, instances),
        text: vevent::calendar(&items_of(master, instances)),
    }
}

/// The event's body for Google; times of day are given in `zone` (the account owner's:
/// Google expands a series in it).
pub fn body(event: &events::Model, zone: Tz) -> Value {
    let time = |at: DateTime<Utc>, day: NaiveDate| {
        if event.is_all_day {
            json!({ "date": day.format("%Y-%m-%d").to_string() })
        } else {
            json!({
                "dateTime": at.to_rfc3339_opts(SecondsFormat::Secs, true),
                "timeZone": zone.name(),
            })
        }
    };
    let first = event.start.date_naive();
    let last = event.end.date_naive().max(first);
    let mut body = json!({
        "summary": event.title,
        "description": event.description,
        "location": event.location,
        "start": time(event.start, first),
        "end": time(event.end, last + Duration::days(1)),
    });
    let recurrence = recurrence_lines(event);
    if !recurrence.is_empty() {
        body["recurrence"] = json!(recurrence);
    }
    body
}

/// The Google id a new event gets: its Bowline id's 32 hex digits (base32hex, as Google
/// wants client ids).
pub fn google_id(event: &events::Model) -> String {
    event.id.uuid().simple().to_string()
}

/// The stored tag of a resource: the master's etag, and a digest of its instances' tags.
pub fn resource_tag(master: &GoogleEvent, instances: &[GoogleEvent]) -> Option<String> {
    let own = master.etag.clone()?;
    if instances.is_empty() {
        return Some(own);
    }
    let mut parts: Vec<String> = instances
        .iter()
        .map(|item| format!("{}={}", item.id, item.etag.as_deref().unwrap_or_default()))
        .collect();
    parts.sort();
    let digest = Sha256::digest(parts.join("\n").as_bytes());
    let short: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    Some(format!("{own}+{short}"))
}

/// The `If-Match` value of a stored tag: the master's own quoted etag.
pub fn if_match(stored: Option<&str>) -> Option<&str> {
    stored.map(|tag| match tag.rfind('"') {
        Some(end) => &tag[..=end],
        None => tag,
    })
}

/// A Google time as the importer reads it.
pub fn when(time: &EventTime) -> Option<When> {
    if let Some(date) = &time.date {
        return NaiveDate::parse_from_str(date, "%Y-%m-%d")
            .ok()
            .map(When::Date);
    }
    let text = time.date_time.as_deref()?;
    let zone = time
        .time_zone
        .as_deref()
        .filter(|zone| named_zone(zone).is_some());
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(
            match zone.and_then(|name| Some((name, named_zone(name)?))) {
                Some((name, tz)) => When::Zoned {
                    local: at.with_timezone(&tz).naive_local(),
                    zone: name.to_owned(),
                },
                None => When::Utc(at.naive_utc()),
            },
        );
    }
    // A wall-clock time without offset, in its named zone.
    let local = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S").ok()?;
    Some(match zone {
        Some(name) => When::Zoned {
            local,
            zone: name.to_owned(),
        },
        None => When::Utc(local),
    })
}

/// The VEVENTs of a master and its instances: removed instances become EXDATEs, edited
/// ones overrides.
pub fn items_of(master: &GoogleEvent, instances: &[GoogleEvent]) -> Vec<Item> {
    let uid = master.ical_uid.clone().unwrap_or_else(|| master.id.clone());
    let item = |event: &GoogleEvent| Item {
        uid: uid.clone(),
        summary: event.summary.clone(),
        description: event.description.clone(),
        location: event.location.clone(),
        start: event.start.as_ref().and_then(when),
        end: event.end.as_ref().and_then(when),
        ..Item::default()
    };
    let mut first = item(master);
    first.recurrence = master.recurrence.clone().unwrap_or_default();
    let mut items = vec![first];
    for instance in instances {
        let Some(original) = instance.original_start_time.as_ref().and_then(when) else {
            continue;
        };
        if instance.is_cancelled() {
            items[0].exdates.push(original);
        } else {
            let mut edited = item(instance);
            edited.recurrence_id = Some(original);
            items.push(edited);
        }
    }
    if !master.is_series() {
        items.truncate(1);
        items[0].exdates.clear();
    }
    items
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn event(value: Value) -> GoogleEvent {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_series_tag_covers_its_instances_and_if_match_sends_the_masters_own() {
        let master = event(json!({"id": "m", "etag": "\"1\"", "recurrence": ["RRULE:FREQ=DAILY"]}));
        assert_eq!(resource_tag(&master, &[]).as_deref(), Some("\"1\""));
        let cancelled = event(json!({"id": "m_1", "etag": "\"2\"", "status": "cancelled",
            "recurringEventId": "m", "originalStartTime": {"date": "2026-12-02"}}));
        let tag = resource_tag(&master, std::slice::from_ref(&cancelled)).unwrap();
        assert!(tag.starts_with("\"1\"+"), "{tag}");
        assert_eq!(if_match(Some(&tag)), Some("\"1\""));
        assert_eq!(if_match(Some("\"1\"")), Some("\"1\""));
        let items = items_of(&master, &[cancelled]);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].exdates.len(), 1);
    }

    #[test]
    fn times_keep_their_zone_or_are_read_in_utc() {
        let zoned = EventTime {
            date_time: Some("2026-12-01T09:00:00+01:00".into()),
            time_zone: Some("Europe/Berlin".into()),
            ..EventTime::default()
        };
        assert!(matches!(when(&zoned), Some(When::Zoned { zone, .. }) if zone == "Europe/Berlin"));
        let utc = EventTime {
            date_time: Some("2026-12-01T09:00:00+01:00".into()),
            ..EventTime::default()
        };
        assert_eq!(
            when(&utc),
            Some(When::Utc(
                NaiveDateTime::parse_from_str("2026-12-01T08:00:00", "%Y-%m-%dT%H:%M:%S").unwrap()
            ))
        );
        let day = EventTime {
            date: Some("2026-12-01".into()),
            ..EventTime::default()
        };
        assert!(matches!(when(&day), Some(When::Date(_))));
    }
}
