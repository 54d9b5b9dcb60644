//! A calendar's events → a `text/calendar` snapshot.
//!
//! One VEVENT per live event: `UID` is the event id (stable across exports), `DTSTAMP` and
//! `LAST-MODIFIED` its last change, `CREATED`, `SEQUENCE` its revision, SUMMARY,
//! DESCRIPTION, LOCATION, URL, `STATUS:CANCELLED` for cancelled events, and the stored
//! recurrence as RRULE / RDATE / EXDATE lines. All-day events are `VALUE=DATE` with the
//! exclusive DTEND (the day after the stored last day), their UNTIL / RDATE / EXDATE as
//! dates. Single timed events are written in UTC (exact, no zone needed); recurring timed
//! events are written in the exporting user's time zone with its VTIMEZONE, so other
//! applications expand them on that wall clock across DST, as Bowline's clients do (in UTC
//! when that zone is UTC, or when the start's wall-clock time is ambiguous there).

use chrono::{DateTime, Datelike, Duration, LocalResult, TimeZone, Utc};
use chrono_tz::Tz;
use entities::events;

use super::recurrence::format_utc;
use super::tzdb_vtimezone::write_vtimezone;
use super::values::{DateValue, parse_date_value, split_values};
use super::writer::Writer;

/// What an export needs.
#[derive(Debug, Clone, Copy)]
pub struct ExportCalendar<'a> {
    /// Calendar name (`X-WR-CALNAME`).
    pub name: &'a str,
    /// The exporting user's time zone (for recurring timed events).
    pub zone: Tz,
    /// The live events, in the order to write them.
    pub events: &'a [events::Model],
}

/// `PRODID` of Bowline's exports.
pub const PRODID: &str = "-//Bowline//Bowline Calendar//EN";

/// Writes the snapshot; `now` is the year the zone rules are written up to.
pub fn export_calendar(calendar: &ExportCalendar<'_>, now: DateTime<Utc>) -> String {
    let mut writer = Writer::new();
    writer.begin("VCALENDAR");
    writer.line("VERSION", &[], "2.0");
    writer.line("PRODID", &[], PRODID);
    writer.line("CALSCALE", &[], "GREGORIAN");
    writer.line("METHOD", &[], "PUBLISH");
    writer.text("X-WR-CALNAME", calendar.name);

    let zoned: Vec<&events::Model> = calendar
        .events
        .iter()
        .filter(|event| in_zone(event, calendar.zone))
        .collect();
    if let (Some(first), Some(last)) = (
        zoned.iter().map(|e| e.start.year()).min(),
        zoned.iter().map(|e| e.start.year()).max(),
    ) {
        write_vtimezone(&mut writer, calendar.zone, first, last.max(now.year()) + 1);
    }
    for event in calendar.events {
        write_event(&mut writer, event, &event.id.to_string(), calendar.zone);
    }
    writer.end("VCALENDAR");
    writer.finish()
}

/// One event as a CalDAV resource of its own: a VCALENDAR holding just that VEVENT, with
/// the resource's `uid` (the event id for events Bowline created there), in UTC.
pub fn export_resource(event: &events::Model, uid: &str) -> String {
    let mut writer = Writer::new();
    writer.begin("VCALENDAR");
    writer.line("VERSION", &[], "2.0");
    writer.line("PRODID", &[], PRODID);
    write_event(&mut writer, event, uid, Tz::UTC);
    writer.end("VCALENDAR");
    writer.finish()
}

/// The recurrence of `event` as the iCalendar lines an export writes for it (`RRULE:…`,
/// `EXDATE;VALUE=DATE:…`, unfolded): what Google takes in an event's `recurrence`.
pub fn recurrence_lines(event: &events::Model) -> Vec<String> {
    let Some(recurrence) = &event.recurrence else {
        return Vec::new();
    };
    let mut writer = Writer::new();
    write_recurrence(&mut writer, recurrence, event.is_all_day);
    writer
        .finish()
        .replace("\r\n ", "")
        .lines()
        .map(str::trim_end)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Whether `event` is written with a TZID of `zone` (see the module doc).
fn in_zone(event: &events::Model, zone: Tz) -> bool {
    !event.is_all_day
        && zone != Tz::UTC
        && zone != Tz::Etc__UTC
        && event
            .recurrence
            .as_deref()
            .is_some_and(|r| !r.trim().is_empty())
        && matches!(
            zone.from_local_datetime(&event.start.with_timezone(&zone).naive_local()),
            LocalResult::Single(_)
        )
        && matches!(
            zone.from_local_datetime(&event.end.with_timezone(&zone).naive_local()),
            LocalResult::Single(_)
        )
}

fn write_event(writer: &mut Writer, event: &events::Model, uid: &str, zone: Tz) {
    writer.begin("VEVENT");
    writer.line("UID", &[], uid);
    writer.line("DTSTAMP", &[], &format_utc(event.updated_at));
    writer.line("CREATED", &[], &format_utc(event.created_at));
    writer.line("LAST-MODIFIED", &[], &format_utc(event.updated_at));
    writer.line("SEQUENCE", &[], &event.revision.max(0).to_string());
    writer.text("SUMMARY", &event.title);
    if event.is_all_day {
        let first = event.start.date_naive();
        let last = event.end.date_naive().max(first);
        let date = |d: chrono::NaiveDate| d.format("%Y%m%d").to_string();
        writer.line("DTSTART", &[("VALUE", "DATE")], &date(first));
        writer.line(
            "DTEND",
            &[("VALUE", "DATE")],
            &date(last + Duration::days(1)),
        );
    } else if in_zone(event, zone) {
        let local = |at: DateTime<Utc>| {
            at.with_timezone(&zone)
                .naive_local()
                .format("%Y%m%dT%H%M%S")
                .to_string()
        };
        writer.line("DTSTART", &[("TZID", zone.name())], &local(event.start));
        writer.line("DTEND", &[("TZID", zone.name())], &local(event.end));
    } else {
        writer.line("DTSTART", &[], &format_utc(event.start));
        writer.line("DTEND", &[], &format_utc(event.end));
    }
    if let Some(recurrence) = &event.recurrence {
        write_recurrence(writer, recurrence, event.is_all_day);
    }
    if let Some(description) = &event.description {
        writer.text("DESCRIPTION", description);
    }
    if let Some(location) = &event.location {
        writer.text("LOCATION", location);
    }
    if let Some(url) = event.url.as_deref().filter(|u| !u.trim().is_empty()) {
        writer.line("URL", &[], url.trim());
    }
    if event.is_canceled {
        writer.line("STATUS", &[], "CANCELLED");
    }
    writer.end("VEVENT");
}

/// The stored recurrence (a bare RRULE or RRULE/RDATE/EXDATE lines) as properties.
fn write_recurrence(writer: &mut Writer, recurrence: &str, all_day: bool) {
    for line in recurrence.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (head, value) = if line.to_ascii_uppercase().starts_with("FREQ=") {
            ("RRULE", line)
        } else {
            match line.split_once(':') {
                Some(split) => split,
                None => continue,
            }
        };
        let mut head = head.split(';');
        let name = head.next().unwrap_or_default().trim().to_ascii_uppercase();
        let params: Vec<(String, String)> = head
            .filter_map(|param| param.split_once('='))
            .map(|(k, v)| {
                (
                    k.trim().to_ascii_uppercase(),
                    v.trim().trim_matches('"').to_owned(),
                )
            })
            .filter(|(k, _)| k != "VALUE")
            .collect();
        match name.as_str() {
            "RRULE" | "EXRULE" => writer.line(&name, &[], &rule_text(value, all_day)),
            "RDATE" | "EXDATE" if all_day => {
                let dates: Vec<String> = split_values(value)
                    .filter_map(parse_date_value)
                    .map(|v| date_of(v).format("%Y%m%d").to_string())
                    .collect();
                if !dates.is_empty() {
                    writer.line(&name, &[("VALUE", "DATE")], &dates.join(","));
                }
            }
            "RDATE" | "EXDATE" => {
                let params: Vec<(&str, &str)> = params
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                writer.line(&name, &params, value.trim());
            }
            _ => {}
        }
    }
}

/// An RRULE for writing: for all-day events `UNTIL` becomes a DATE.
fn rule_text(rule: &str, all_day: bool) -> String {
    if !all_day {
        return rule.to_owned();
    }
    rule.split(';')
        .map(|part| match part.split_once('=') {
            Some((key, value)) if key.eq_ignore_ascii_case("UNTIL") => parse_date_value(value)
                .map_or_else(
                    || part.to_owned(),
                    |v| format!("UNTIL={}", date_of(v).format("%Y%m%d")),
                ),
            _ => part.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(";")
}

fn date_of(value: DateValue) -> chrono::NaiveDate {
    match value {
        DateValue::Utc(at) => Utc.from_utc_datetime(&at).date_naive(),
        other => other.date(),
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use chrono::NaiveDate;
    use icalendar::Component;

    use super::*;
    use crate::domain::ids::EventId;

    fn at(day: u32, hour: u32) -> DateTime<Utc> {
        let date = NaiveDate::from_ymd_opt(2026, 3, day).unwrap();
        Utc.from_utc_datetime(&date.and_hms_opt(hour, 0, 0).unwrap())
    }

    fn event(
        title: &str,
        span: (DateTime<Utc>, DateTime<Utc>),
        all_day: bool,
        rule: Option<&str>,
    ) -> events::Model {
        events::Model {
            id: EventId::generate(),
            creator_id: "u".into(),
            organizer: "u".into(),
            title: title.into(),
            color: "#7a9e7e".into(),
            start: span.0,
            end: span.1,
            is_all_day: all_day,
            description: Some("Line one\nLine two, with; punctuation".into()),
            recurrence: rule.map(str::to_owned),
            revision: 3,
            created_at: span.0,
            updated_at: span.0,
            ..events::Model::default()
        }
    }

    /// The `icalendar` crate's strict parser is a second reader of what we write.
    #[test]
    fn the_icalendar_crate_reads_exports() {
        let events = vec![
            event(
                "Weekly",
                (at(2, 8), at(2, 9)),
                false,
                Some("RRULE:FREQ=WEEKLY;COUNT=5\nEXDATE:20260309T080000Z"),
            ),
            event(
                "Holiday",
                (at(10, 0), at(12, 0)),
                true,
                Some("FREQ=YEARLY;UNTIL=20300310T000000Z"),
            ),
            event("Once", (at(20, 15), at(20, 16)), false, None),
        ];
        let calendar = ExportCalendar {
            name: "Test",
            zone: Tz::Europe__Berlin,
            events: &events,
        };
        let text = export_calendar(&calendar, at(1, 0));
        let parsed: icalendar::Calendar = text.parse().expect("the icalendar crate parses it");
        let vevents: Vec<_> = parsed
            .components
            .iter()
            .filter_map(|c| c.as_event())
            .collect();
        assert_eq!(vevents.len(), 3);
        assert_eq!(vevents[0].get_summary(), Some("Weekly"));
        assert_eq!(
            vevents[0].get_description(),
            Some("Line one\nLine two, with; punctuation")
        );
        assert_eq!(
            vevents[1].property_value("RRULE"),
            Some("FREQ=YEARLY;UNTIL=20300310")
        );
        assert!(text.contains("DTSTART;TZID=Europe/Berlin:20260302T090000\r\n"));
        assert!(text.contains("EXDATE:20260309T080000Z\r\n"));
        assert!(text.contains("DTSTART;VALUE=DATE:20260310\r\nDTEND;VALUE=DATE:20260313\r\n"));
        assert!(text.contains("DTSTART:20260320T150000Z\r\n"));
        assert!(text.contains("BEGIN:VTIMEZONE\r\nTZID:Europe/Berlin\r\n"));
    }
}
