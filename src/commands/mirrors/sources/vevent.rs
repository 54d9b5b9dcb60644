//! iCalendar text for provider items that are not iCalendar themselves (Google and Microsoft
//! events): a series with its edited and removed instances, or one event, written as
//! VEVENTs so the importer reads them exactly as it reads CalDAV objects and `.ics` files.

use chrono::{NaiveDate, NaiveDateTime};

use crate::ical::writer::Writer;

/// A start, end or instance time as the provider gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// A date (all-day).
    Date(NaiveDate),
    /// A UTC date-time.
    Utc(NaiveDateTime),
    /// A wall-clock time in a named zone (IANA or Windows name).
    Zoned {
        /// The wall-clock time.
        local: NaiveDateTime,
        /// The zone's name.
        zone: String,
    },
}

impl When {
    fn write(&self, writer: &mut Writer, name: &str) {
        match self {
            When::Date(date) => {
                writer.line(
                    name,
                    &[("VALUE", "DATE")],
                    &date.format("%Y%m%d").to_string(),
                );
            }
            When::Utc(at) => writer.line(name, &[], &at.format("%Y%m%dT%H%M%SZ").to_string()),
            When::Zoned { local, zone } => writer.line(
                name,
                &[("TZID", zone.as_str())],
                &local.format("%Y%m%dT%H%M%S").to_string(),
            ),
        }
    }
}

/// One VEVENT.
#[derive(Debug, Clone, Default)]
pub struct Item {
    /// UID (a series and its instances share one).
    pub uid: String,
    /// Title.
    pub summary: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Location.
    pub location: Option<String>,
    /// Start.
    pub start: Option<When>,
    /// End (exclusive).
    pub end: Option<When>,
    /// Cancelled by its organizer (shown struck through, not deleted).
    pub cancelled: bool,
    /// RRULE / RDATE / EXDATE lines of a series, as the provider wrote them.
    pub recurrence: Vec<String>,
    /// Instances removed from a series.
    pub exdates: Vec<When>,
    /// The instance an edited occurrence replaces.
    pub recurrence_id: Option<When>,
}

/// A `text/calendar` document holding `items` (a series first, then its instances).
pub fn calendar(items: &[Item]) -> String {
    let mut writer = Writer::new();
    writer.begin("VCALENDAR");
    writer.line("VERSION", &[], "2.0");
    writer.line("PRODID", &[], "-//Bowline//Provider mirror//EN");
    for item in items {
        writer.begin("VEVENT");
        writer.text("UID", &item.uid);
        if let Some(when) = &item.recurrence_id {
            when.write(&mut writer, "RECURRENCE-ID");
        }
        if let Some(when) = &item.start {
            when.write(&mut writer, "DTSTART");
        }
        if let Some(when) = &item.end {
            when.write(&mut writer, "DTEND");
        }
        for line in &item.recurrence {
            write_rule_line(&mut writer, line);
        }
        for when in &item.exdates {
            when.write(&mut writer, "EXDATE");
        }
        for (name, value) in [
            ("SUMMARY", &item.summary),
            ("DESCRIPTION", &item.description),
            ("LOCATION", &item.location),
        ] {
            if let Some(value) = value.as_deref().filter(|v| !v.trim().is_empty()) {
                writer.text(name, value);
            }
        }
        if item.cancelled {
            writer.line("STATUS", &[], "CANCELLED");
        }
        writer.end("VEVENT");
    }
    writer.end("VCALENDAR");
    writer.finish()
}

/// A provider's `RRULE:…` / `EXDATE;TZID=…:…` line, kept only when it is one of those
/// properties on one line.
fn write_rule_line(writer: &mut Writer, line: &str) {
    if line.chars().any(char::is_control) {
        return;
    }
    let Some((head, value)) = line.split_once(':') else {
        return;
    };
    let name = head.split(';').next().unwrap_or_default().trim();
    if ["RRULE", "EXRULE", "RDATE", "EXDATE"]
        .iter()
        .any(|known| known.eq_ignore_ascii_case(name))
    {
        writer.line(head.trim(), &[], value.trim());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use chrono::TimeZone;
    use chrono_tz::Tz;

    use super::*;
    use crate::ical::{ImportOptions, parse_calendar};

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S").unwrap()
    }

    #[test]
    fn a_series_with_a_removed_and_an_edited_instance_reads_as_the_importer_reads_it() {
        let zone = "Europe/Berlin".to_owned();
        let series = Item {
            uid: "s1@google.com".into(),
            summary: Some("Standup; daily, really".into()),
            start: Some(When::Zoned {
                local: at("2026-12-01T09:00:00"),
                zone: zone.clone(),
            }),
            end: Some(When::Zoned {
                local: at("2026-12-01T09:15:00"),
                zone: zone.clone(),
            }),
            recurrence: vec!["RRULE:FREQ=DAILY;COUNT=5".into(), "X-BAD\r\nEVIL:1".into()],
            exdates: vec![When::Zoned {
                local: at("2026-12-02T09:00:00"),
                zone: zone.clone(),
            }],
            ..Item::default()
        };
        let edited = Item {
            uid: "s1@google.com".into(),
            summary: Some("Standup (moved)".into()),
            recurrence_id: Some(When::Zoned {
                local: at("2026-12-03T09:00:00"),
                zone: zone.clone(),
            }),
            start: Some(When::Utc(at("2026-12-03T10:00:00"))),
            end: Some(When::Utc(at("2026-12-03T10:15:00"))),
            ..Item::default()
        };
        let text = calendar(&[series, edited]);
        let parsed =
            parse_calendar(text.as_bytes(), &ImportOptions { user_zone: Tz::UTC }).unwrap();
        assert_eq!(parsed.events.len(), 2);
        let first = &parsed.events[0];
        assert_eq!(first.title, "Standup; daily, really");
        assert_eq!(
            first.start,
            chrono::Utc.with_ymd_and_hms(2026, 12, 1, 8, 0, 0).unwrap()
        );
        let recurrence = first.recurrence.as_deref().unwrap();
        assert!(
            recurrence.contains("COUNT=5") && recurrence.contains("EXDATE"),
            "{recurrence}"
        );
        assert_eq!(parsed.events[1].title, "Standup (moved)");
        assert_eq!(parsed.uid.as_deref(), Some("s1@google.com"));
    }

    #[test]
    fn all_day_items_and_windows_zones() {
        let day = Item {
            uid: "d".into(),
            start: Some(When::Date(NaiveDate::from_ymd_opt(2026, 7, 4).unwrap())),
            end: Some(When::Date(NaiveDate::from_ymd_opt(2026, 7, 5).unwrap())),
            ..Item::default()
        };
        let zoned = Item {
            uid: "z".into(),
            start: Some(When::Zoned {
                local: at("2026-07-04T09:00:00"),
                zone: "Pacific Standard Time".into(),
            }),
            end: Some(When::Zoned {
                local: at("2026-07-04T10:00:00"),
                zone: "Pacific Standard Time".into(),
            }),
            cancelled: true,
            ..Item::default()
        };
        let parsed = parse_calendar(
            calendar(&[day]).as_bytes(),
            &ImportOptions { user_zone: Tz::UTC },
        )
        .unwrap();
        let event = &parsed.events[0];
        assert!(event.is_all_day);
        assert_eq!(
            event.start, event.end,
            "a one-day event ends on its own day"
        );
        let parsed = parse_calendar(
            calendar(&[zoned]).as_bytes(),
            &ImportOptions { user_zone: Tz::UTC },
        )
        .unwrap();
        let event = &parsed.events[0];
        assert_eq!(
            event.start,
            chrono::Utc.with_ymd_and_hms(2026, 7, 4, 16, 0, 0).unwrap()
        );
        assert!(event.is_canceled);
        assert_eq!(event.title, crate::ical::import::UNTITLED);
    }
}
