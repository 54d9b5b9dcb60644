//! Graph's `dateTimeTimeZone`: the local times clients send (no offset, at most 7
//! fractional digits, an IANA or Windows zone) and the ones Graph writes back (always 7
//! fractional digits, in the zone of `Prefer: outlook.timezone`).

use std::str::FromStr;

use bowline::ical::timezones::{local_in, windows_zone};
use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, Timelike, Utc};
use chrono_tz::Tz;

/// The zone a `timeZone` value names: an IANA name as written or a Windows zone name
/// (Bowline's CLDR table). `None` for anything else.
pub(super) fn zone(name: &str) -> Option<Tz> {
    let name = name.trim();
    Tz::from_str(name)
        .ok()
        .or_else(|| windows_zone(name).and_then(|iana| Tz::from_str(iana).ok()))
}

/// A `dateTime` as Graph accepts it on writes: `YYYY-MM-DDTHH:MM:SS` with an optional
/// fraction of 1 to 7 digits and no offset.
pub(super) fn parse_local(text: &str) -> Result<NaiveDateTime, String> {
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (text, None),
    };
    let mut local = NaiveDateTime::parse_from_str(whole, "%Y-%m-%dT%H:%M:%S")
        .map_err(|_| format!("'{text}' is not a date and time without an offset"))?;
    if let Some(fraction) = fraction {
        if fraction.is_empty()
            || fraction.len() > 7
            || !fraction.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(format!(
                "'{text}' has an offset or more than 7 fractional digits"
            ));
        }
        let nanos: u32 = format!("{fraction:0<9}")
            .parse()
            .map_err(|_| text.to_owned())?;
        local = local
            .with_nanosecond(nanos)
            .ok_or_else(|| text.to_owned())?;
    }
    Ok(local)
}

/// A local time as Graph writes it: `2026-12-01T09:00:00.0000000`.
pub(super) fn format_local(local: NaiveDateTime) -> String {
    format!(
        "{}.{:07}",
        local.format("%Y-%m-%dT%H:%M:%S"),
        local.nanosecond() % 1_000_000_000 / 100
    )
}

/// An instant as Graph writes `createdDateTime`: `2026-12-01T09:00:00.1234567Z`.
pub(super) fn format_utc(at: DateTime<Utc>) -> String {
    format!("{}Z", format_local(at.naive_utc()))
}

/// `startDateTime` / `endDateTime` of a calendar view: ISO 8601 with an offset, or
/// without one (read as UTC).
pub(super) fn parse_query_instant(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .map(|at| at.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            text.parse::<NaiveDateTime>()
                .ok()
                .map(|local| local.and_utc())
        })
}

/// An instant as it goes back into a URL (`2026-01-01T00:00:00Z`).
pub(super) fn format_query_instant(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// `local` in `tz` as an instant (a time in a DST gap takes the offset before it).
pub(super) fn instant(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    local_in(tz, local)
}

/// Midnight UTC of `date`: where an all-day event's floating day is placed when it is
/// compared with a window.
pub(super) fn day_start(date: NaiveDate) -> DateTime<Utc> {
    date.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_times_take_up_to_seven_digits_and_no_offset() {
        assert!(parse_local("2026-12-01T09:00:00").is_ok());
        assert!(parse_local("2026-12-01T09:00:00.1234567").is_ok());
        assert!(parse_local("2026-12-01T09:00:00.12345678").is_err());
        assert!(parse_local("2026-12-01T09:00:00Z").is_err());
        assert!(parse_local("2026-12-01T09:00:00+01:00").is_err());
        let local = parse_local("2026-12-01T09:00:00.5").unwrap();
        assert_eq!(format_local(local), "2026-12-01T09:00:00.5000000");
    }

    #[test]
    fn windows_and_iana_names_resolve() {
        assert_eq!(zone("W. Europe Standard Time"), Some(Tz::Europe__Berlin));
        assert_eq!(
            zone("Pacific Standard Time"),
            Some(Tz::America__Los_Angeles)
        );
        assert_eq!(zone("UTC"), Some(Tz::UTC));
        assert_eq!(zone("Europe/Paris"), Some(Tz::Europe__Paris));
        assert_eq!(zone("Mars/Olympus"), None);
    }
}
