//! Recurrence of imported events: RRULE / RDATE / EXDATE read into [`Rules`] (instants in
//! UTC), and written in Bowline's stored form, which `domain::recurrence` expands from the
//! event's UTC start: a bare RRULE when that is all there is, else iCalendar lines
//! (`RRULE:…`, `RDATE:…Z,…`, `EXDATE:…Z,…`).
//!
//! Normalisation: `UNTIL` becomes a UTC date-time (a floating or DATE `UNTIL` is read in the
//! event's zone, a DATE meaning the end of that day; for all-day events the date's UTC
//! midnight), identical repeated RRULEs collapse, EXDATEs without RRULE or RDATE are dropped
//! (they exclude nothing), and an RDATE-only set gets DTSTART as an RDATE (RFC 5545 counts
//! DTSTART as the first instance; the `rrule` crate would not). Every stored rule is checked
//! by the domain's event rules, so what cannot be expanded is refused at import.

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Utc};

use crate::domain::recurrence::expansion::{self, Budget};

use super::IcsError;
use super::timezones::ZoneResolver;
use super::values::{DateValue, parse_date_value};

/// The recurrence of one event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// RRULEs.
    pub rrules: Vec<Rule>,
    /// Extra instances.
    pub rdates: Vec<DateTime<Utc>>,
    /// Excluded instances.
    pub exdates: Vec<DateTime<Utc>>,
}

/// One RRULE as `KEY=VALUE` parts (keys upper case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    parts: Vec<(String, String)>,
    /// Line of the RRULE in the file.
    pub line: usize,
}

/// How an event's own times are read: for values of RRULE `UNTIL`, EXDATE, RDATE and
/// RECURRENCE-ID that carry no zone of their own.
#[derive(Debug, Clone)]
pub struct EventClock {
    /// DTSTART was a DATE.
    pub all_day: bool,
    /// DTSTART's TZID (values without TZID or `Z` are read in it).
    pub tzid: Option<String>,
    /// DTSTART's wall-clock time of day.
    pub time_of_day: NaiveTime,
}

impl EventClock {
    /// The instant a DATE / DATE-TIME value of this event means: for all-day events the
    /// date's UTC midnight; a DATE on a timed event is that day at the event's time of day.
    pub fn instant(
        &self,
        resolver: &mut ZoneResolver,
        value: DateValue,
        tzid: Option<&str>,
    ) -> DateTime<Utc> {
        if self.all_day {
            let date = match value {
                DateValue::Utc(at) if tzid.is_none() => Utc.from_utc_datetime(&at).date_naive(),
                other => other.date(),
            };
            return Utc.from_utc_datetime(&date.and_time(NaiveTime::MIN));
        }
        let value = match value {
            DateValue::Date(date) => DateValue::Local(date.and_time(self.time_of_day)),
            other => other,
        };
        resolver.instant(value, tzid.or(self.tzid.as_deref()))
    }
}

impl Rule {
    /// Reads an RRULE value; an empty value or a part without `=` is unreadable.
    pub fn read(value: &str, line: usize) -> Result<Self, IcsError> {
        let mut parts = Vec::new();
        for part in value.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| IcsError::at(line, "an RRULE part has no value"))?;
            parts.push((
                key.trim().to_ascii_uppercase(),
                value.trim().to_ascii_uppercase(),
            ));
        }
        if !parts.iter().any(|(key, _)| key == "FREQ") {
            return Err(IcsError::at(line, "RRULE has no FREQ"));
        }
        Ok(Self { parts, line })
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.parts
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn set(&mut self, key: &str, value: String) {
        match self.parts.iter_mut().find(|(k, _)| k == key) {
            Some(part) => part.1 = value,
            None => self.parts.push((key.to_owned(), value)),
        }
    }

    fn remove(&mut self, key: &str) {
        self.parts.retain(|(k, _)| k != key);
    }

    /// `COUNT`, if the rule has one.
    pub fn count(&self) -> Option<u32> {
        self.get("COUNT").and_then(|count| count.parse().ok())
    }

    /// Replaces `COUNT` (the remaining instances of a split series).
    pub fn set_count(&mut self, count: u32) {
        self.remove("UNTIL");
        self.set("COUNT", count.to_string());
    }

    /// Ends the rule at `until` (inclusive), replacing any COUNT.
    pub fn set_until(&mut self, until: DateTime<Utc>) {
        self.remove("COUNT");
        self.set("UNTIL", format_utc(until));
    }

    /// Moves a (normalised) `UNTIL` by `delta`, for a series moved by that much.
    pub fn shift_until(&mut self, delta: Duration) {
        let until = self.get("UNTIL").and_then(parse_date_value);
        if let Some(DateValue::Utc(until)) = until {
            self.set("UNTIL", format_utc(Utc.from_utc_datetime(&until) + delta));
        }
    }

    /// Makes `UNTIL` a UTC date-time (see the module doc), never before `start`.
    pub fn normalise_until(
        &mut self,
        resolver: &mut ZoneResolver,
        clock: &EventClock,
        start: DateTime<Utc>,
    ) -> Result<(), IcsError> {
        let Some(raw) = self.get("UNTIL").map(str::to_owned) else {
            return Ok(());
        };
        let value = parse_date_value(&raw)
            .ok_or_else(|| IcsError::at(self.line, "RRULE UNTIL is not a date or date-time"))?;
        let until = match value {
            DateValue::Date(date) if !clock.all_day => {
                let end_of_day = date.and_time(NaiveTime::MIN) + Duration::seconds(86_399);
                resolver.instant(DateValue::Local(end_of_day), clock.tzid.as_deref())
            }
            other => clock.instant(resolver, other, None),
        };
        self.set("UNTIL", format_utc(until.max(start)));
        Ok(())
    }

    /// The rule's text (`FREQ=…;…`).
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// `20260705T120000Z`.
pub fn format_utc(at: DateTime<Utc>) -> String {
    at.format("%Y%m%dT%H%M%SZ").to_string()
}

impl Rules {
    /// Whether there is anything to repeat.
    pub fn is_recurring(&self) -> bool {
        !self.rrules.is_empty() || !self.rdates.is_empty()
    }

    /// The stored text for an event starting at `start`; `None` for a single event.
    pub fn stored(&self, start: DateTime<Utc>) -> Option<String> {
        if !self.is_recurring() {
            return None;
        }
        let mut rules: Vec<String> = Vec::new();
        for rule in &self.rrules {
            let text = rule.text();
            if !rules.contains(&text) {
                rules.push(text);
            }
        }
        let mut rdates = self.rdates.clone();
        if self.rrules.is_empty() {
            rdates.push(start);
        }
        let rdates = sorted_unique(rdates);
        let exdates = sorted_unique(self.exdates.clone());
        if rules.len() == 1 && self.rdates.is_empty() && exdates.is_empty() {
            return rules.pop();
        }
        let mut lines: Vec<String> = rules.into_iter().map(|r| format!("RRULE:{r}")).collect();
        if !rdates.is_empty() {
            lines.push(format!("RDATE:{}", join_utc(&rdates)));
        }
        if !exdates.is_empty() {
            lines.push(format!("EXDATE:{}", join_utc(&exdates)));
        }
        Some(lines.join("\n"))
    }

    /// How many instances fall before `before` (for splitting a COUNT-bounded series);
    /// `None` when `budget` ran out first.
    pub fn count_before(
        &self,
        start: DateTime<Utc>,
        before: DateTime<Utc>,
        budget: &mut Budget,
    ) -> Option<u32> {
        let Some(text) = self.stored(start) else {
            return Some(0);
        };
        expansion::count_before(start, &text, before, budget)
    }
}

fn sorted_unique(mut instants: Vec<DateTime<Utc>>) -> Vec<DateTime<Utc>> {
    instants.sort();
    instants.dedup();
    instants
}

fn join_utc(instants: &[DateTime<Utc>]) -> String {
    instants
        .iter()
        .map(|at| format_utc(*at))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn at(d: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, d, h, 0, 0).unwrap()
    }

    #[test]
    fn stored_forms() {
        let rule = Rule::read("freq=weekly;byday=mo;", 3).unwrap();
        let mut rules = Rules {
            rrules: vec![rule.clone(), rule],
            ..Rules::default()
        };
        assert_eq!(
            rules.stored(at(6, 9)).as_deref(),
            Some("FREQ=WEEKLY;BYDAY=MO")
        );
        rules.exdates = vec![at(13, 9), at(13, 9)];
        assert_eq!(
            rules.stored(at(6, 9)).as_deref(),
            Some("RRULE:FREQ=WEEKLY;BYDAY=MO\nEXDATE:20260713T090000Z")
        );
        let only_exdates = Rules {
            exdates: vec![at(13, 9)],
            ..Rules::default()
        };
        assert_eq!(only_exdates.stored(at(6, 9)), None);
        let only_rdates = Rules {
            rdates: vec![at(20, 9)],
            ..Rules::default()
        };
        assert_eq!(
            only_rdates.stored(at(6, 9)).as_deref(),
            Some("RDATE:20260706T090000Z,20260720T090000Z")
        );
    }

    #[test]
    fn counting_instances_is_bounded() {
        assert!(Rule::read("BYDAY=MO", 2).is_err());
        let daily = Rules {
            rrules: vec![Rule::read("FREQ=DAILY;COUNT=10", 1).unwrap()],
            ..Rules::default()
        };
        let mut budget = Budget::new(1_000, std::time::Duration::from_secs(10));
        assert_eq!(daily.count_before(at(1, 9), at(4, 9), &mut budget), Some(3));
        let dense = Rules {
            rrules: vec![Rule::read("FREQ=SECONDLY", 1).unwrap()],
            ..Rules::default()
        };
        let mut budget = Budget::new(1_000, std::time::Duration::from_secs(10));
        assert_eq!(dense.count_before(at(1, 9), at(4, 9), &mut budget), None);
    }
}
