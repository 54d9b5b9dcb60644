//! Timestamps on the wire: ISO 8601 UTC with exactly millisecond precision and `Z`
//! (`2026-07-23T12:00:00.000Z`), the form better-auth and the existing clients parse.

use chrono::{DateTime, SecondsFormat, Utc};

/// Formats `at` as the wire timestamp.
pub fn format_timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
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
}
