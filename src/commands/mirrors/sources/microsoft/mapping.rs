//! Outlook events as Bowline reads and writes them: an item (an occurrence without a title
//! of its own taking its master's) as a VEVENT for the importer, Graph's times (seven
//! fractional digits, no offset, the zone beside them, IANA or Windows names), and an
//! event's body for Graph (an all-day event's end shifted to Graph's exclusive midnight).

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use entities::events;
use serde_json::{Value, json};

use crate::commands::mirrors::resources::Fetched;
use crate::commands::mirrors::sources::vevent::{self, Item, When};
use crate::providers::graph::{DateTimeZone, GraphEvent};

/// The event's body for Graph: times in UTC with seven fractional digits, an all-day
/// event from its first day's midnight to the midnight after its last.
pub fn body(event: &events::Model) -> Value {
    // Graph's form: seven fractional digits, no offset, the zone beside it.
    let at = |instant: DateTime<Utc>| {
        let text = format!(
            "{}.{:07}",
            instant.format("%Y-%m-%dT%H:%M:%S"),
            instant.timestamp_subsec_nanos() / 100
        );
        json!({ "dateTime": text, "timeZone": "UTC" })
    };
    let (start, end) = if event.is_all_day {
        let first = event.start.date_naive();
        let last = event.end.date_naive().max(first);
        let midnight = |day: chrono::NaiveDate| day.and_time(chrono::NaiveTime::MIN).and_utc();
        (midnight(first), midnight(last + Duration::days(1)))
    } else {
        (event.start, event.end)
    };
    json!({
        "subject": event.title,
        "body": { "contentType": "text", "content": event.description.clone().unwrap_or_default() },
        "location": { "displayName": event.location.clone().unwrap_or_default() },
        "isAllDay": event.is_all_day,
        "start": at(start),
        "end": at(end),
    })
}

/// A Graph time as the importer reads it: UTC, or a wall-clock time in its named zone.
pub fn when(time: &DateTimeZone, all_day: bool) -> Option<When> {
    let text = time.date_time.split('.').next()?;
    let local = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S").ok()?;
    if all_day {
        return Some(When::Date(local.date()));
    }
    Some(match time.time_zone.as_deref().map(str::trim) {
        None | Some("" | "UTC" | "Etc/UTC" | "tzone://Microsoft/Utc") => When::Utc(local),
        Some(zone) => When::Zoned {
            local,
            zone: zone.to_owned(),
        },
    })
}

/// The VEVENT of an item (an occurrence without a title of its own takes its master's).
pub fn item_of(event: &GraphEvent, master: Option<&GraphEvent>) -> Item {
    let text = |own: Option<String>, inherited: Option<String>| {
        own.filter(|text| !text.trim().is_empty())
            .or(inherited.filter(|text| !text.trim().is_empty()))
    };
    let body =
        |event: Option<&GraphEvent>| event.and_then(|e| e.body.clone()).and_then(|b| b.content);
    let place = |event: Option<&GraphEvent>| {
        event
            .and_then(|e| e.location.clone())
            .and_then(|l| l.display_name)
    };
    Item {
        uid: event.ical_uid.clone().unwrap_or_else(|| event.id.clone()),
        summary: text(
            event.subject.clone(),
            master.and_then(|m| m.subject.clone()),
        ),
        description: text(body(Some(event)), body(master)),
        location: text(place(Some(event)), place(master)),
        start: event.start.as_ref().and_then(|t| when(t, event.is_all_day)),
        end: event.end.as_ref().and_then(|t| when(t, event.is_all_day)),
        cancelled: event.is_cancelled,
        ..Item::default()
    }
}

pub fn fetched(event: &GraphEvent, master: Option<&GraphEvent>) -> Fetched {
    Fetched {
        href: event.id.clone(),
        etag: event.tag(),
        text: vevent::calendar(&[item_of(event, master)]),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn graph_times_read_in_their_zone_and_all_day_as_dates() {
        let utc = DateTimeZone {
            date_time: "2026-12-09T20:30:00.0000000".into(),
            time_zone: Some("UTC".into()),
        };
        assert!(matches!(when(&utc, false), Some(When::Utc(_))));
        let windows = DateTimeZone {
            date_time: "2026-12-09T20:30:00.0000000".into(),
            time_zone: Some("Pacific Standard Time".into()),
        };
        assert!(matches!(when(&windows, false), Some(When::Zoned { .. })));
        assert!(matches!(when(&utc, true), Some(When::Date(_))));
    }

    #[test]
    fn occurrences_take_their_masters_title() {
        let master: GraphEvent = serde_json::from_value(json!({
            "id": "M", "subject": "Weekly", "body": {"content": "  "}, "type": "seriesMaster"
        }))
        .unwrap();
        let occurrence: GraphEvent = serde_json::from_value(json!({
            "id": "O", "type": "occurrence", "seriesMasterId": "M",
            "start": {"dateTime": "2026-12-09T20:30:00.0000000", "timeZone": "UTC"},
            "end": {"dateTime": "2026-12-09T21:30:00.0000000", "timeZone": "UTC"}
        }))
        .unwrap();
        let item = item_of(&occurrence, Some(&master));
        assert_eq!(item.summary.as_deref(), Some("Weekly"));
        assert_eq!(
            item.description, None,
            "a whitespace body is no description"
        );
    }
}
