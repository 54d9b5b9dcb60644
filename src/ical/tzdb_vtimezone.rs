//! VTIMEZONE components written from the time-zone database (`chrono-tz`), for exports.
//!
//! The zone's transitions between two years are found by scanning its offsets, then
//! grouped: transitions in consecutive years on the same nth (or last) weekday of the same
//! month, at the same wall-clock time, with the same offsets and name, become one
//! observance with a yearly RRULE (open-ended when it is still in force at the end of the
//! range, so later instances keep their DST rules); any other transition is an observance of
//! its own. An observance at the start of the range carries the offset in force then.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::{OffsetComponents, OffsetName, Tz};

use super::recurrence::format_utc;
use super::writer::Writer;

/// One change of offset.
#[derive(Debug, Clone)]
struct Transition {
    at: DateTime<Utc>,
    from: i32,
    to: i32,
    name: String,
    dst: bool,
}

impl Transition {
    /// Wall-clock time of the change, in the offset before it.
    fn local(&self) -> NaiveDateTime {
        (self.at + Duration::seconds(i64::from(self.from))).naive_utc()
    }

    /// The nth-weekday descriptions that fit its date: `n` from the start, `-1` if last.
    fn weekday_positions(&self) -> Vec<i32> {
        let date = self.local().date();
        let mut positions = vec![i32::try_from((date.day() - 1) / 7 + 1).unwrap_or(1)];
        if (date + Duration::days(7)).month() != date.month() {
            positions.push(-1);
        }
        positions
    }
}

/// Writes a VTIMEZONE for `tz` covering the years `from..=to`.
pub fn write_vtimezone(writer: &mut Writer, tz: Tz, from: i32, to: i32) {
    let Some(range_start) =
        NaiveDate::from_ymd_opt(from, 1, 1).and_then(|d| d.and_hms_opt(0, 0, 0))
    else {
        return;
    };
    let start = Utc.from_utc_datetime(&range_start);
    let end = NaiveDate::from_ymd_opt(to + 1, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map_or(start, |at| Utc.from_utc_datetime(&at));
    let transitions = transitions(tz, start, end);

    writer.begin("VTIMEZONE");
    writer.line("TZID", &[], tz.name());
    let initial = describe(tz, start);
    observance(
        writer,
        &Transition {
            at: start - Duration::seconds(i64::from(initial.from)),
            ..initial
        },
        None,
    );
    let mut groups: Vec<(Vec<Transition>, Vec<i32>)> = Vec::new();
    for transition in transitions {
        let positions = transition.weekday_positions();
        let joinable = groups.iter_mut().rev().find(|(members, fits)| {
            members.last().is_some_and(|last| {
                last.dst == transition.dst
                    && last.from == transition.from
                    && last.to == transition.to
                    && last.name == transition.name
                    && last.local().year() + 1 == transition.local().year()
                    && last.local().month() == transition.local().month()
                    && last.local().weekday() == transition.local().weekday()
                    && last.local().time() == transition.local().time()
                    && fits.iter().any(|p| positions.contains(p))
            })
        });
        match joinable {
            Some((members, fits)) => {
                fits.retain(|p| positions.contains(p));
                members.push(transition);
            }
            None => groups.push((vec![transition], positions)),
        }
    }
    for (members, fits) in &groups {
        let (Some(first), Some(last)) = (members.first(), members.last()) else {
            continue;
        };
        if members.len() == 1 {
            observance(writer, first, None);
            continue;
        }
        let position = fits
            .iter()
            .copied()
            .max_by_key(|p| (*p == -1, *p))
            .unwrap_or(1);
        let weekday = &format!("{:?}", first.local().weekday()).to_ascii_uppercase()[..2];
        let mut rule = format!(
            "FREQ=YEARLY;BYMONTH={};BYDAY={position}{weekday}",
            first.local().month()
        );
        if last.local().year() < to {
            rule.push_str(&format!(";UNTIL={}", format_utc(last.at)));
        }
        observance(writer, first, Some(&rule));
    }
    writer.end("VTIMEZONE");
}

fn observance(writer: &mut Writer, transition: &Transition, rule: Option<&str>) {
    let kind = if transition.dst {
        "DAYLIGHT"
    } else {
        "STANDARD"
    };
    writer.begin(kind);
    writer.line(
        "DTSTART",
        &[],
        &transition.local().format("%Y%m%dT%H%M%S").to_string(),
    );
    if let Some(rule) = rule {
        writer.line("RRULE", &[], rule);
    }
    writer.line("TZOFFSETFROM", &[], &format_offset(transition.from));
    writer.line("TZOFFSETTO", &[], &format_offset(transition.to));
    writer.text("TZNAME", &transition.name);
    writer.end(kind);
}

/// The offset, name and DST flag in force at `at` (as a transition into it).
fn describe(tz: Tz, at: DateTime<Utc>) -> Transition {
    let offset = tz.offset_from_utc_datetime(&at.naive_utc());
    let seconds = offset.fix().local_minus_utc();
    Transition {
        at,
        from: seconds,
        to: seconds,
        name: offset
            .abbreviation()
            .map_or_else(|| format_offset(seconds), str::to_owned),
        dst: !offset.dst_offset().is_zero(),
    }
}

/// Every change of offset or name in `[start, end)`, to the second.
fn transitions(tz: Tz, start: DateTime<Utc>, end: DateTime<Utc>) -> Vec<Transition> {
    let key = |at: DateTime<Utc>| {
        let t = describe(tz, at);
        (t.to, t.name, t.dst)
    };
    let mut found = Vec::new();
    let mut at = start;
    let mut current = key(at);
    while at < end {
        let next = (at + Duration::hours(12)).min(end);
        let next_key = key(next);
        if next_key != current {
            // The first second with the new offset, by bisection.
            let (mut low, mut high) = (at, next);
            while high - low > Duration::seconds(1) {
                let middle = low + (high - low) / 2;
                if key(middle) == current {
                    low = middle;
                } else {
                    high = middle;
                }
            }
            let mut transition = describe(tz, high);
            transition.from = current.0;
            found.push(transition);
            current = next_key;
        }
        at = next;
    }
    found
}

/// `+0100`, `-0430`, `+023017`.
fn format_offset(seconds: i32) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let total = seconds.unsigned_abs();
    let (hours, minutes, secs) = (total / 3600, total % 3600 / 60, total % 60);
    if secs == 0 {
        format!("{sign}{hours:02}{minutes:02}")
    } else {
        format!("{sign}{hours:02}{minutes:02}{secs:02}")
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn berlin_becomes_two_yearly_rules() {
        let mut writer = Writer::new();
        write_vtimezone(&mut writer, Tz::Europe__Berlin, 2024, 2027);
        let text = writer.finish();
        assert!(text.contains("TZID:Europe/Berlin\r\n"), "{text}");
        assert!(text.contains("DTSTART:20240331T020000\r\nRRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\nTZNAME:CEST\r\n"), "{text}");
        assert!(text.contains("DTSTART:20241027T030000\r\nRRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU\r\nTZOFFSETFROM:+0200\r\nTZOFFSETTO:+0100\r\n"), "{text}");
        assert_eq!(text.matches("BEGIN:STANDARD").count(), 2, "{text}");
    }

    #[test]
    fn zones_without_dst_have_one_observance() {
        let mut writer = Writer::new();
        write_vtimezone(&mut writer, Tz::Asia__Tokyo, 2025, 2026);
        let text = writer.finish();
        assert_eq!(text.matches("BEGIN:STANDARD").count(), 1, "{text}");
        assert!(text.contains("TZOFFSETTO:+0900"));
        assert_eq!(format_offset(9_017), "+023017");
        assert_eq!(format_offset(-16_200), "-0430");
    }
}
