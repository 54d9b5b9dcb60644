//! Property values: DATE and DATE-TIME (with the sloppiness real files have), DURATION,
//! UTC-OFFSET, PERIOD starts, and TEXT unescaping.

use chrono::{Duration, NaiveDate, NaiveDateTime, NaiveTime};

/// A DATE or DATE-TIME value before its time zone is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateValue {
    /// A calendar date (all-day).
    Date(NaiveDate),
    /// A date-time with a `Z`: UTC.
    Utc(NaiveDateTime),
    /// A date-time without `Z`: floating, or local to the property's TZID.
    Local(NaiveDateTime),
}

impl DateValue {
    /// The date part.
    pub fn date(self) -> NaiveDate {
        match self {
            Self::Date(date) => date,
            Self::Utc(at) | Self::Local(at) => at.date(),
        }
    }
}

/// Parses `20140409`, `20140409T093000`, `20140409T093000Z`; also tolerates a date with a
/// `Z` (`20131210Z`, Google), a missing seconds field and a leap second. `None` otherwise.
pub fn parse_date_value(text: &str) -> Option<DateValue> {
    let text = text.trim();
    let (body, utc) = match text.strip_suffix(['Z', 'z']) {
        Some(body) => (body, true),
        None => (text, false),
    };
    let (date_part, time_part) = match body.split_once(['T', 't']) {
        Some((date, time)) => (date, Some(time)),
        None => (body, None),
    };
    let date = parse_date(date_part)?;
    let Some(time_part) = time_part else {
        return Some(DateValue::Date(date));
    };
    let time = parse_time(time_part)?;
    let at = date.and_time(time);
    Some(if utc {
        DateValue::Utc(at)
    } else {
        DateValue::Local(at)
    })
}

fn digits(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn parse_date(text: &str) -> Option<NaiveDate> {
    if text.len() != 8 {
        return None;
    }
    let year = i32::try_from(digits(text.get(0..4)?)?).ok()?;
    NaiveDate::from_ymd_opt(year, digits(text.get(4..6)?)?, digits(text.get(6..8)?)?)
}

fn parse_time(text: &str) -> Option<NaiveTime> {
    let (hour, minute, second) = match text.len() {
        6 => (
            digits(text.get(0..2)?)?,
            digits(text.get(2..4)?)?,
            digits(text.get(4..6)?)?,
        ),
        4 => (digits(text.get(0..2)?)?, digits(text.get(2..4)?)?, 0),
        _ => return None,
    };
    NaiveTime::from_hms_opt(hour, minute, second.min(59))
}

/// Parses a DURATION (`PT1H`, `-P0DT0H10M0S`, `P1W`, `P2D`); `None` if unreadable.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim().to_ascii_uppercase();
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(&text)),
    };
    let rest = rest.strip_prefix('P')?;
    let mut seconds: i64 = 0;
    let mut number = String::new();
    let mut in_time = false;
    let mut any = false;
    for c in rest.chars() {
        match c {
            '0'..='9' => number.push(c),
            'T' if number.is_empty() => in_time = true,
            'W' | 'D' | 'H' | 'M' | 'S' => {
                let n: i64 = number.parse().ok()?;
                number.clear();
                any = true;
                let unit = match (c, in_time) {
                    ('W', false) => 7 * 86_400,
                    ('D', false) => 86_400,
                    ('H', true) => 3_600,
                    ('M', true) => 60,
                    ('S', true) => 1,
                    _ => return None,
                };
                seconds = seconds.checked_add(n.checked_mul(unit)?)?;
            }
            _ => return None,
        }
    }
    if !any || !number.is_empty() {
        return None;
    }
    let duration = Duration::try_seconds(seconds)?;
    Some(if negative { -duration } else { duration })
}

/// Parses a UTC-OFFSET (`+0100`, `-0500`, `+023017`) into seconds east of UTC; `None` if
/// unreadable or not below 24 hours (`+5328`).
pub fn parse_utc_offset(text: &str) -> Option<i32> {
    let text = text.trim();
    let sign = match text.get(0..1)? {
        "+" => 1,
        "-" => -1,
        _ => return None,
    };
    let body = text.get(1..)?;
    let (hours, minutes, seconds) = match body.len() {
        4 => (digits(body.get(0..2)?)?, digits(body.get(2..4)?)?, 0),
        6 => (
            digits(body.get(0..2)?)?,
            digits(body.get(2..4)?)?,
            digits(body.get(4..6)?)?,
        ),
        _ => return None,
    };
    if hours >= 24 || minutes >= 60 || seconds >= 60 {
        return None;
    }
    let total = i32::try_from(hours * 3_600 + minutes * 60 + seconds).ok()?;
    Some(sign * total)
}

/// The values of a multi-valued DATE / DATE-TIME / PERIOD property (`a,b,c`), each PERIOD
/// reduced to its start. Empty items are skipped.
pub fn split_values(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(|item| item.split('/').next().unwrap_or_default().trim())
        .filter(|item| !item.is_empty())
}

/// Unescapes a TEXT value: `\n` / `\N` → newline, `\,` `\;` `\\` → the character.
pub fn unescape_text(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n' | 'N') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn at(y: i32, m: u32, d: u32, h: u32, min: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_opt(h, min, 0)
            .unwrap()
    }

    #[test]
    fn dates_and_date_times() {
        assert_eq!(
            parse_date_value("20140409"),
            Some(DateValue::Date(
                NaiveDate::from_ymd_opt(2014, 4, 9).unwrap()
            ))
        );
        assert_eq!(
            parse_date_value("20131210Z"),
            Some(DateValue::Date(
                NaiveDate::from_ymd_opt(2013, 12, 10).unwrap()
            ))
        );
        assert_eq!(
            parse_date_value("20140409T093000Z"),
            Some(DateValue::Utc(at(2014, 4, 9, 9, 30)))
        );
        assert_eq!(
            parse_date_value(" 20140409T0930 "),
            Some(DateValue::Local(at(2014, 4, 9, 9, 30)))
        );
        for bad in [
            "",
            "tomorrow",
            "2014049",
            "20141340",
            "20140409T25",
            "20140409T256000",
        ] {
            assert_eq!(parse_date_value(bad), None, "{bad}");
        }
    }

    #[test]
    fn durations_offsets_text() {
        assert_eq!(parse_duration("PT1H"), Some(Duration::hours(1)));
        assert_eq!(parse_duration("-P0DT0H10M0S"), Some(Duration::minutes(-10)));
        assert_eq!(parse_duration("P1W"), Some(Duration::days(7)));
        assert_eq!(parse_duration("P1DT2H"), Some(Duration::hours(26)));
        assert_eq!(parse_duration("PT"), None);
        assert_eq!(parse_duration("P1H"), None);
        assert_eq!(parse_utc_offset("+0100"), Some(3_600));
        assert_eq!(parse_utc_offset("-0430"), Some(-16_200));
        assert_eq!(parse_utc_offset("+023017"), Some(9_017));
        assert_eq!(parse_utc_offset("+5328"), None);
        assert_eq!(unescape_text("a\\, b\\; c\\nd\\Ne\\\\"), "a, b; c\nd\ne\\");
        let items: Vec<_> = split_values("20231125T090000Z/20231125T123000Z,,x").collect();
        assert_eq!(items, vec!["20231125T090000Z", "x"]);
    }
}
