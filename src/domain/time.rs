//! Timestamps on the wire: ISO 8601 UTC with exactly millisecond precision and `Z`
//! (`2026-07-23T12:00:00.000Z`), the form better-auth and the existing clients parse.

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, TimeZone, Utc};

/// Formats `at` as the wire timestamp.
pub fn format_timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses a timestamp a client sent: RFC 3339 (any offset, any fraction), a date
/// (`2026-07-23`, UTC midnight) or a date-time without offset (read as UTC).
pub fn parse_timestamp(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return date
            .and_hms_opt(0, 0, 0)
            .map(|at| Utc.from_utc_datetime(&at));
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
        .map(|at| Utc.from_utc_datetime(&at))
}

/// A JavaScript time value (milliseconds since the epoch) as a timestamp.
pub fn from_epoch_millis(millis: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis(millis)
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
}
