//! Timestamps on the wire: ISO 8601 UTC with exactly millisecond precision and `Z`
//! (`2026-07-23T12:00:00.000Z`), the form better-auth and the existing clients parse.
//! Accepted timestamps lie in the years 1 to 9999 (UTC): what RFC 3339 can write back, and
//! both databases store.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, SecondsFormat, TimeZone, Utc};

/// The first and last years a timestamp may fall in.
pub const YEARS: std::ops::RangeInclusive<i32> = 1..=9999;

/// `at`, if it falls in [`YEARS`].
fn in_range(at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    YEARS.contains(&at.year()).then_some(at)
}

/// Formats `at` as the wire timestamp.
pub fn format_timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses a timestamp a client sent: RFC 3339 (any offset, any fraction), a date
/// (`2026-07-23`, UTC midnight) or a date-time without offset (read as UTC).
/// Outside [`YEARS`] it is `None`.
pub fn parse_timestamp(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return in_range(at.with_timezone(&Utc));
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return date
            .and_hms_opt(0, 0, 0)
            .map(|at| Utc.from_utc_datetime(&at))
            .and_then(in_range);
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
        .map(|at| Utc.from_utc_datetime(&at))
        .and_then(in_range)
}

/// A JavaScript time value (milliseconds since the epoch) as a timestamp, if it falls in
/// [`YEARS`].
pub fn from_epoch_millis(millis: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis(millis).and_then(in_range)
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn milliseconds_and_zulu() {
        let at = Utc
            .with_ymd_and_hms(2026, 7, 23, 12, 0, 0)
            .single()
            .expect("valid date");
        assert_eq!(format_timestamp(at), "2026-07-23T12:00:00.000Z");
    }

    #[test]
    fn parses_what_clients_send() {
        let expected = Utc
            .with_ymd_and_hms(2026, 7, 23, 12, 0, 0)
            .single()
            .expect("valid date");
        for text in [
            "2026-07-23T12:00:00.000Z",
            "2026-07-23T12:00:00Z",
            "2026-07-23T14:00:00+02:00",
            "2026-07-23T12:00:00",
            "2026-07-23T12:00:00.0000000Z",
        ] {
            assert_eq!(parse_timestamp(text), Some(expected), "{text}");
        }
        assert_eq!(
            parse_timestamp("2026-07-23"),
            Utc.with_ymd_and_hms(2026, 7, 23, 0, 0, 0).single()
        );
        for bad in ["", "not-a-date", "2026-13-01", "12:00"] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_years_1_to_9999() {
        for bad in [
            "0000-12-31T23:59:59.999Z",
            "0001-01-01T00:30:00+01:00",
            "+10000-01-01T00:00:00Z",
            "10000-01-01",
            "+10000-01-01",
            "-0001-01-01",
            "-000001-01-01T00:00:00",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
        assert!(parse_timestamp("0001-01-01T00:00:00Z").is_some());
        assert!(parse_timestamp("9999-12-31T23:59:59.999Z").is_some());
        // Year 10000 and 1 BC in JavaScript milliseconds.
        assert_eq!(from_epoch_millis(253_402_300_800_000), None);
        assert_eq!(from_epoch_millis(-62_198_755_200_000), None);
        assert!(from_epoch_millis(253_402_300_799_999).is_some());
        assert!(from_epoch_millis(-62_135_596_800_000).is_some());
        assert_eq!(from_epoch_millis(i64::MAX), None);
    }
}
