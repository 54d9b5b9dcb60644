//! Expanding an event's recurrence into occurrences (invite previews): the stored form is a
//! bare RRULE (`FREQ=WEEKLY;BYDAY=MO`) or iCalendar lines (`RRULE:…`, `EXDATE:…`, `RDATE:…`),
//! expanded from the event's start with the `rrule` crate.

use chrono::{DateTime, Duration, SubsecRound, Utc};
use rrule::{RRuleSet, Tz};

/// Occurrences (start, end) of an event starting at `start` and lasting until `end`,
/// overlapping `[from, to)`, at most `limit` of them. `None` if the rule cannot be read.
pub fn occurrences(
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    recurrence: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limit: u16,
) -> Option<Vec<(DateTime<Utc>, DateTime<Utc>)>> {
    let duration = end - start;
    // iCalendar times have whole seconds; the fraction is carried over to every occurrence.
    let fraction = start - start.trunc_subsecs(0);
    let mut text = format!("DTSTART:{}\n", start.format("%Y%m%dT%H%M%SZ"));
    for line in recurrence.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.to_ascii_uppercase().starts_with("FREQ=") {
            text.push_str("RRULE:");
        }
        text.push_str(line);
        text.push('\n');
    }
    let set: RRuleSet = text.trim_end().parse().ok()?;
    // An occurrence that started before `from` may still be running at `from`.
    let after = (from - duration - Duration::seconds(1)).with_timezone(&Tz::UTC);
    let before = to.with_timezone(&Tz::UTC);
    let result = set.after(after).before(before).all(limit);
    Some(
        result
            .dates
            .into_iter()
            .map(|at| at.with_timezone(&Utc) + fraction)
            .map(|at| (at, at + duration))
            .filter(|(s, e)| *s < to && (*e > from || (*s >= from && *s == *e)))
            .collect(),
    )
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(d: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, d, h, 0, 0)
            .single()
            .expect("t")
    }

    #[test]
    fn weekly_rule_with_an_exception() {
        let found = occurrences(
            at(6, 9),
            at(6, 10),
            "RRULE:FREQ=WEEKLY\nEXDATE:20260713T090000Z",
            at(1, 0),
            at(31, 0),
            100,
        )
        .expect("readable");
        let starts: Vec<_> = found.iter().map(|(s, _)| *s).collect();
        assert_eq!(starts, vec![at(6, 9), at(20, 9), at(27, 9)]);
        assert_eq!(found[0].1, at(6, 10));
    }

    #[test]
    fn bare_rules_and_bad_rules() {
        let found = occurrences(
            at(1, 9),
            at(1, 10),
            "FREQ=DAILY;COUNT=3",
            at(1, 0),
            at(31, 0),
            100,
        )
        .expect("readable");
        assert_eq!(found.len(), 3);
        assert!(
            occurrences(
                at(1, 9),
                at(1, 10),
                "FREQ=SOMETIMES",
                at(1, 0),
                at(31, 0),
                10
            )
            .is_none()
        );
    }
}
