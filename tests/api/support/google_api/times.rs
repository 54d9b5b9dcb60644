//! Google's `EventDateTime`: `{date}` for all-day events or `{dateTime, timeZone?}` (an
//! offset, or a local time with its zone), parsed into a day or an instant and written back
//! as Google stores it; and the stamps of instance ids (`YYYYMMDD`, `YYYYMMDDTHHMMSSZ`).

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, SecondsFormat, TimeZone, Utc};
use serde_json::{Map, Value, json};

use super::reply::{Reply, api_error, invalid};

/// A parsed `EventDateTime`: a day (all-day events) or an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum When {
    Day(NaiveDate),
    At(DateTime<Utc>),
}

impl When {
    /// The instance-id suffix: `YYYYMMDD` or `YYYYMMDDTHHMMSSZ` (UTC).
    pub(super) fn stamp(self) -> String {
        match self {
            When::Day(day) => day.format("%Y%m%d").to_string(),
            When::At(at) => at.format("%Y%m%dT%H%M%SZ").to_string(),
        }
    }

    /// Reads an instance-id suffix back.
    pub(super) fn from_stamp(stamp: &str) -> Option<Self> {
        if stamp.len() == 8 {
            return NaiveDate::parse_from_str(stamp, "%Y%m%d")
                .ok()
                .map(When::Day);
        }
        NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%SZ")
            .ok()
            .map(|at| When::At(at.and_utc()))
    }
}

/// Parses `{date}` or `{dateTime, timeZone?}`; returns it with the value Google stores
/// (`dateTime` written with the offset of its `timeZone`, or of the calendar's zone).
pub(super) fn parse_event_time(
    value: &Value,
    which: &str,
    calendar_zone: chrono_tz::Tz,
) -> Result<(When, Value), Reply> {
    let object = value
        .as_object()
        .ok_or_else(|| invalid(&format!("Invalid {which} time.")))?;
    let date = object.get("date").and_then(Value::as_str);
    let date_time = object.get("dateTime").and_then(Value::as_str);
    let zone = match object.get("timeZone") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(
            name.parse::<chrono_tz::Tz>()
                .map_err(|_| invalid(&format!("Invalid time zone definition for {which} time.")))?,
        ),
        Some(_) => {
            return Err(invalid(&format!(
                "Invalid time zone definition for {which} time."
            )));
        }
    };
    match (date, date_time) {
        (Some(date), None) => {
            let day = NaiveDate::parse_from_str(date, "%Y-%m-%d")
                .map_err(|_| invalid(&format!("Invalid {which} time.")))?;
            Ok((
                When::Day(day),
                json!({"date": day.format("%Y-%m-%d").to_string()}),
            ))
        }
        (None, Some(text)) => {
            let at = match DateTime::parse_from_rfc3339(text) {
                Ok(at) => at.with_timezone(&Utc),
                Err(_) => {
                    let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
                        .map_err(|_| invalid(&format!("Invalid {which} time.")))?;
                    let zone = zone.ok_or_else(|| {
                        invalid(&format!("Missing time zone definition for {which} time."))
                    })?;
                    zone.from_local_datetime(&naive)
                        .earliest()
                        .ok_or_else(|| invalid(&format!("Invalid {which} time.")))?
                        .with_timezone(&Utc)
                }
            };
            let at = at - Duration::nanoseconds(i64::from(at.timestamp_subsec_nanos()));
            let shown = at
                .with_timezone(&zone.unwrap_or(calendar_zone))
                .to_rfc3339_opts(SecondsFormat::Secs, true);
            let mut out = Map::new();
            out.insert("dateTime".into(), json!(shown));
            if let Some(zone) = zone {
                out.insert("timeZone".into(), json!(zone.name()));
            }
            Ok((When::At(at), Value::Object(out)))
        }
        (Some(_), Some(_)) => Err(invalid(&format!(
            "Invalid {which} time: give either date or dateTime."
        ))),
        (None, None) => Err(api_error(
            400,
            "required",
            &format!("Missing {which} time."),
        )),
    }
}
