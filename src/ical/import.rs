//! VEVENTs → [`ImportedEvent`]s.
//!
//! Per VEVENT: SUMMARY (unescaped; `Untitled event` when missing), DTSTART / DTEND or
//! DURATION with their zones ([`super::timezones`]), DATE values as all-day events (stored
//! from the start date's UTC midnight to the last day's midnight), STATUS:CANCELLED,
//! DESCRIPTION, LOCATION, URL and the recurrence ([`super::recurrence`]).
//!
//! Leniency: a missing UID is fine (UIDs only pair overrides with their series), duplicate
//! UIDs are separate events, DTEND before DTSTART is read as a zero-length event, an event
//! without DTEND or DURATION lasts one day (all-day), as long as its series (an override) or
//! zero, over-long texts are cut to Bowline's limits, and a VEVENT with no DTSTART (and no
//! RECURRENCE-ID to stand in for it) has no place on a calendar and is skipped, as iTIP
//! replies and cancellations often are. RECURRENCE-ID overrides: see [`super::overrides`].

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

use crate::domain::recurrence::expansion::Budget;

use super::lexer::{self, Component, Property};
use super::overrides;
use super::recurrence::{EventClock, Rule, Rules};
use super::timezones::{ZoneResolver, named_zone};
use super::values::{DateValue, parse_date_value, parse_duration, split_values, unescape_text};
use super::{IcsError, ImportedEvent, vtimezone};

/// Settings an import needs from its caller.
#[derive(Debug, Clone, Copy)]
pub struct ImportOptions {
    /// The importing user's time zone: floating times are read in it (unless the file
    /// names its own with `X-WR-TIMEZONE`).
    pub user_zone: Tz,
}

/// A parsed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCalendar {
    /// `X-WR-CALNAME`, if the file has one.
    pub name: Option<String>,
    /// The events, in file order.
    pub events: Vec<ImportedEvent>,
    /// VEVENTs skipped because they have no start.
    pub skipped: usize,
    /// The first VEVENT's UID (a CalDAV resource holds one UID: a series and its
    /// overrides).
    pub uid: Option<String>,
}

/// How many recurrence instances one import may look at (splitting series at
/// `RANGE=THISANDFUTURE` overrides counts instances, and so does walking each COUNT rule
/// to its last instance to see it ends within the year 9999), and for how long.
const IMPORT_RECURRENCE_STEPS: u64 = 2_000_000;
const IMPORT_RECURRENCE_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// Title of an event without SUMMARY.
pub const UNTITLED: &str = "Untitled event";

/// A VEVENT as read, before overrides are attached.
#[derive(Debug, Clone)]
pub struct Draft {
    /// UID, if any.
    pub uid: Option<String>,
    /// The event as it will be stored (its recurrence still in `rules`).
    pub event: ImportedEvent,
    /// RRULE / RDATE / EXDATE.
    pub rules: Rules,
    /// How its own times are read.
    pub clock: EventClock,
    /// Its RECURRENCE-ID: the value, its TZID, `RANGE=THISANDFUTURE`.
    pub recurrence_id: Option<(DateValue, Option<String>, bool)>,
    /// Whether it has DTEND or DURATION (an override without either lasts as long as its
    /// series).
    pub explicit_end: bool,
    /// Line of its BEGIN:VEVENT (errors about the whole event name it).
    pub line: usize,
    /// Set when an override made it redundant.
    pub dropped: bool,
}

/// Parses a whole file (see the module docs of [`super`] for what is accepted).
pub fn parse_calendar(bytes: &[u8], options: &ImportOptions) -> Result<ParsedCalendar, IcsError> {
    let top = lexer::read(bytes)?;
    let calendars: Vec<&Component> = top.iter().filter(|c| c.name == "VCALENDAR").collect();
    let calendar_text = |name: &str| {
        calendars
            .iter()
            .filter_map(|c| c.first(name))
            .map(|p| unescape_text(&p.value).trim().to_owned())
            .find(|value| !value.is_empty())
    };
    let name = calendar_text("X-WR-CALNAME").map(|name| truncate(name, 200));
    let floating = calendar_text("X-WR-TIMEZONE")
        .and_then(|zone| named_zone(&zone))
        .unwrap_or(options.user_zone);
    let (definitions, locations) = vtimezone::collect(&top);
    let mut resolver = ZoneResolver::new(definitions, locations, floating);

    let vevents = top.iter().flat_map(|c| {
        let own = (c.name == "VEVENT").then_some(c);
        own.into_iter()
            .chain(c.children.iter().filter(|child| child.name == "VEVENT"))
    });
    let mut drafts = Vec::new();
    let mut skipped = 0;
    for vevent in vevents {
        match read_event(vevent, &mut resolver)? {
            Some(draft) => drafts.push(draft),
            None => skipped += 1,
        }
    }
    let uid = drafts.iter().find_map(|draft| draft.uid.clone());
    let mut budget = Budget::new(IMPORT_RECURRENCE_STEPS, IMPORT_RECURRENCE_TIME);
    overrides::attach(&mut drafts, &mut resolver, &mut budget)?;
    let mut events = Vec::with_capacity(drafts.len());
    for draft in drafts.into_iter().filter(|d| !d.dropped) {
        let mut event = draft.event;
        event.recurrence = draft.rules.stored(event.start);
        // The rules every stored event follows, whichever way it came.
        event
            .content()
            .check_within(&mut budget)
            .map_err(|problem| {
                let line = match problem.field {
                    "recurrence" => draft.rules.rrules.first().map_or(draft.line, |r| r.line),
                    _ => draft.line,
                };
                IcsError::at(line, problem.message)
            })?;
        events.push(event);
    }
    Ok(ParsedCalendar {
        name,
        events,
        skipped,
        uid,
    })
}

/// Reads one VEVENT; `None` when it has no start.
fn read_event(vevent: &Component, resolver: &mut ZoneResolver) -> Result<Option<Draft>, IcsError> {
    let recurrence_id = match vevent.first("RECURRENCE-ID") {
        Some(p) => Some((
            date_value(p)?,
            p.param("TZID").map(str::to_owned),
            p.param("RANGE")
                .is_some_and(|r| r.eq_ignore_ascii_case("THISANDFUTURE")),
            p,
        )),
        None => None,
    };
    let start_property = vevent
        .first("DTSTART")
        .filter(|p| !p.value.trim().is_empty())
        .or(recurrence_id.as_ref().map(|(_, _, _, p)| *p));
    let Some(start_property) = start_property else {
        return Ok(None);
    };
    let start_value = date_value(start_property)?;
    let all_day = matches!(start_value, DateValue::Date(_))
        || start_property
            .param("VALUE")
            .is_some_and(|v| v.eq_ignore_ascii_case("DATE"));
    let tzid = start_property.param("TZID").map(str::to_owned);
    let clock = EventClock {
        all_day,
        tzid: tzid.clone(),
        time_of_day: match start_value {
            DateValue::Utc(at) | DateValue::Local(at) => at.time(),
            DateValue::Date(_) => NaiveTime::MIN,
        },
    };
    let start = clock.instant(resolver, start_value, tzid.as_deref());
    let end = read_end(vevent, resolver, &clock, start)?;

    let mut rules = Rules::default();
    for property in vevent.all("RRULE").filter(|p| !p.value.trim().is_empty()) {
        let mut rule = Rule::read(&property.value, property.line)?;
        rule.normalise_until(resolver, &clock, start)?;
        rules.rrules.push(rule);
    }
    rules.rdates = instants(vevent, "RDATE", resolver, &clock)?;
    rules.exdates = instants(vevent, "EXDATE", resolver, &clock)?;

    let text = |name: &str, limit: usize| {
        vevent
            .first(name)
            .map(|p| unescape_text(&p.value))
            .filter(|value| !value.trim().is_empty())
            .map(|value| truncate(value, limit))
    };
    let status = vevent
        .first("STATUS")
        .map(|p| p.value.trim().to_ascii_uppercase());
    let event = ImportedEvent {
        title: text("SUMMARY", 1_000)
            .map(|title| title.trim().to_owned())
            .unwrap_or_else(|| UNTITLED.to_owned()),
        start,
        end,
        is_all_day: all_day,
        is_canceled: matches!(status.as_deref(), Some("CANCELLED" | "CANCELED")),
        description: text("DESCRIPTION", 50_000),
        location: text("LOCATION", 2_000),
        recurrence: None,
        url: vevent
            .first("URL")
            .map(|p| p.value.trim().to_owned())
            .filter(|url| !url.is_empty() && url.chars().count() <= 2_048),
    };
    Ok(Some(Draft {
        uid: vevent
            .first("UID")
            .map(|p| p.value.trim().to_owned())
            .filter(|uid| !uid.is_empty()),
        event,
        rules,
        clock,
        recurrence_id: recurrence_id.map(|(value, tzid, future, _)| (value, tzid, future)),
        explicit_end: ["DTEND", "DURATION"].iter().any(|name| {
            vevent
                .first(name)
                .is_some_and(|p| !p.value.trim().is_empty())
        }),
        line: vevent.line,
        dropped: false,
    }))
}

/// The end from DTEND or DURATION (see the module doc); never before `start`.
fn read_end(
    vevent: &Component,
    resolver: &mut ZoneResolver,
    clock: &EventClock,
    start: DateTime<Utc>,
) -> Result<DateTime<Utc>, IcsError> {
    let day = Duration::days(1);
    let end = if let Some(p) = vevent.first("DTEND").filter(|p| !p.value.trim().is_empty()) {
        let value = date_value(p)?;
        if clock.all_day {
            let exclusive = Utc.from_utc_datetime(&value.date().and_time(NaiveTime::MIN));
            exclusive - day
        } else {
            clock.instant(resolver, value, p.param("TZID"))
        }
    } else if let Some(p) = vevent
        .first("DURATION")
        .filter(|p| !p.value.trim().is_empty())
    {
        let unreadable = || IcsError::at(p.line, "DURATION is not a duration".to_owned());
        let duration = parse_duration(&p.value).ok_or_else(unreadable)?;
        let duration = if clock.all_day {
            Duration::days((duration.num_days() - 1).max(0))
        } else {
            duration
        };
        start.checked_add_signed(duration).ok_or_else(unreadable)?
    } else {
        start
    };
    Ok(end.max(start))
}

/// The instants of every value of the `name` properties (RDATE, EXDATE).
fn instants(
    vevent: &Component,
    name: &str,
    resolver: &mut ZoneResolver,
    clock: &EventClock,
) -> Result<Vec<DateTime<Utc>>, IcsError> {
    let mut found = Vec::new();
    for property in vevent.all(name) {
        for item in split_values(&property.value) {
            let value = parse_date_value(item).ok_or_else(|| {
                IcsError::at(
                    property.line,
                    format!("a value of {name} is not a date or date-time"),
                )
            })?;
            found.push(clock.instant(resolver, value, property.param("TZID")));
        }
    }
    Ok(found)
}

/// A DATE / DATE-TIME property's value; unreadable ones name their line.
fn date_value(property: &Property) -> Result<DateValue, IcsError> {
    parse_date_value(&property.value).ok_or_else(|| {
        IcsError::at(
            property.line,
            format!("{} is not a date or date-time", property.name),
        )
    })
}

/// `text` cut to at most `limit` characters.
fn truncate(text: String, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => text[..at].to_owned(),
        None => text,
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    const TEAM: &[u8] = include_bytes!("../../tests/fixtures/ics/team.ics");

    fn parse(bytes: &[u8]) -> Result<ParsedCalendar, IcsError> {
        parse_calendar(bytes, &ImportOptions { user_zone: Tz::UTC })
    }

    #[test]
    fn hostile_values_are_errors_not_panics() {
        let huge = b"BEGIN:VEVENT\nDTSTART:99991231T000000Z\nDURATION:P99999999999W\nEND:VEVENT\n";
        assert_eq!(parse(huge).expect_err("overflow").line(), Some(3));
        let zone = "BEGIN:VCALENDAR\nBEGIN:VTIMEZONE\nTZID:Odd\nBEGIN:STANDARD\nDTSTART:16010101T000000\nTZOFFSETFROM:+0100\nTZOFFSETTO:+0000\nRRULE:FREQ=YEARLY;COUNT=2147483647;BYMONTH=3;BYDAY=-2147483648SU\nEND:STANDARD\nEND:VTIMEZONE\nBEGIN:VEVENT\nDTSTART;TZID=Odd:20260101T090000\nEND:VEVENT\nEND:VCALENDAR\n";
        let parsed = parse(zone.as_bytes()).expect("reads");
        assert_eq!(
            parsed.events[0].start.to_rfc3339(),
            "2026-01-01T09:00:00+00:00"
        );
    }

    /// Every prefix of a real file, and the file with any one byte changed, parses or is
    /// refused; nothing panics.
    #[test]
    fn truncated_and_mutated_files_never_panic() {
        for end in 0..TEAM.len() {
            let _ = parse(&TEAM[..end]);
        }
        for at in (0..TEAM.len()).step_by(3) {
            for replacement in [b':', b';', b'\n', b' ', b'"', b'9', 0xFF] {
                let mut bytes = TEAM.to_vec();
                bytes[at] = replacement;
                let _ = parse(&bytes);
            }
        }
        assert_eq!(parse(TEAM).expect("whole file").events.len(), 5);
    }
}
