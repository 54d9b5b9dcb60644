//! Series: the RRULE/EXDATE/RDATE lines of an event read into a rule set (with `UNTIL`
//! made UTC for the `rrule` crate), the original starts of its instances up to a horizon,
//! and an instance as Google shows one that has no exception.

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, SecondsFormat, TimeZone, Utc};
use rrule::{RRule, RRuleSet, Unvalidated};
use serde_json::{Map, Value, json};

use super::times::{When, parse_event_time};

/// How far beyond now (or the series' start) `singleEvents=true` expands a series, and the
/// most instances it lists per series.
const EXPANSION_HORIZON_DAYS: i64 = 730;
const EXPANSION_LIMIT: u16 = 2500;

/// The series' rule set: `start` (with its zone, or a day at midnight UTC) and the
/// recurrence lines.
pub(super) fn recurrence_set(event: &Map<String, Value>) -> Result<RRuleSet, String> {
    let start = event.get("start").ok_or("no start")?;
    let lines: Vec<&str> = event
        .get("recurrence")
        .and_then(Value::as_array)
        .ok_or("no recurrence")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let (dt_start, all_day, zone) = if let Some(date) = start.get("date").and_then(Value::as_str) {
        let day = NaiveDate::parse_from_str(date, "%Y-%m-%d").map_err(|e| e.to_string())?;
        let midnight = day.and_hms_opt(0, 0, 0).ok_or("midnight")?.and_utc();
        (
            midnight.with_timezone(&rrule::Tz::UTC),
            true,
            chrono_tz::UTC,
        )
    } else {
        let zone: chrono_tz::Tz = start
            .get("timeZone")
            .and_then(Value::as_str)
            .ok_or("no zone")?
            .parse()
            .map_err(|_| "bad zone")?;
        let at = start
            .get("dateTime")
            .and_then(Value::as_str)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .ok_or("bad start")?;
        (at.with_timezone(&rrule::Tz::Tz(zone)), false, zone)
    };
    let local_time = dt_start.with_timezone(&zone).time();
    let mut set = RRuleSet::new(dt_start);
    for line in lines {
        let (head, values) = line.split_once(':').ok_or("no ':'")?;
        let mut head = head.split(';');
        let name = head.next().unwrap_or_default().to_ascii_uppercase();
        let params: Vec<(String, String)> = head
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.to_ascii_uppercase(), v.to_owned()))
            .collect();
        match name.as_str() {
            "RRULE" => {
                let fixed = utc_until(values, all_day, zone)?;
                let rule: RRule<Unvalidated> = fixed.parse().map_err(|e| format!("{e}"))?;
                set = set.rrule(rule.validate(dt_start).map_err(|e| format!("{e}"))?);
            }
            "EXRULE" => {}
            "RDATE" | "EXDATE" => {
                let tzid = params
                    .iter()
                    .find(|(k, _)| k == "TZID")
                    .map(|(_, v)| v.parse::<chrono_tz::Tz>().map_err(|_| "bad TZID"))
                    .transpose()?
                    .unwrap_or(zone);
                for value in values.split(',') {
                    let at: DateTime<Utc> = if value.len() == 8 {
                        let day = NaiveDate::parse_from_str(value, "%Y%m%d")
                            .map_err(|e| e.to_string())?;
                        let local = day.and_time(if all_day {
                            chrono::NaiveTime::MIN
                        } else {
                            local_time
                        });
                        zone.from_local_datetime(&local)
                            .earliest()
                            .ok_or("bad date")?
                            .with_timezone(&Utc)
                    } else if let Some(utc) = value.strip_suffix('Z') {
                        NaiveDateTime::parse_from_str(utc, "%Y%m%dT%H%M%S")
                            .map_err(|e| e.to_string())?
                            .and_utc()
                    } else {
                        let local = NaiveDateTime::parse_from_str(value, "%Y%m%dT%H%M%S")
                            .map_err(|e| e.to_string())?;
                        tzid.from_local_datetime(&local)
                            .earliest()
                            .ok_or("bad local time")?
                            .with_timezone(&Utc)
                    };
                    let at = at.with_timezone(&dt_start.timezone());
                    set = if name == "RDATE" {
                        set.rdate(at)
                    } else {
                        set.exdate(at)
                    };
                }
            }
            other => return Err(format!("unknown line {other}")),
        }
    }
    Ok(set)
}

/// An RRULE's `UNTIL` in UTC, as the `rrule` crate wants it with a zoned start (a date
/// means the end of that day in the series' zone; all-day series run in UTC here).
fn utc_until(rule: &str, all_day: bool, zone: chrono_tz::Tz) -> Result<String, String> {
    let parts: Result<Vec<String>, String> = rule
        .split(';')
        .map(|part| {
            let Some(value) = part.strip_prefix("UNTIL=") else {
                return Ok(part.to_owned());
            };
            if value.ends_with('Z') {
                return Ok(part.to_owned());
            }
            let local = if value.len() == 8 {
                let day = NaiveDate::parse_from_str(value, "%Y%m%d").map_err(|e| e.to_string())?;
                if all_day {
                    day.and_hms_opt(0, 0, 0).ok_or("time")?
                } else {
                    day.and_hms_opt(23, 59, 59).ok_or("time")?
                }
            } else {
                NaiveDateTime::parse_from_str(value, "%Y%m%dT%H%M%S").map_err(|e| e.to_string())?
            };
            let utc = zone
                .from_local_datetime(&local)
                .earliest()
                .ok_or("bad UNTIL")?
                .with_timezone(&Utc);
            Ok(format!("UNTIL={}", utc.format("%Y%m%dT%H%M%SZ")))
        })
        .collect();
    Ok(parts?.join(";"))
}

/// An occurrence of the rule set as a day or an instant.
fn to_when(at: DateTime<rrule::Tz>, all_day: bool) -> When {
    let utc = at.with_timezone(&Utc);
    if all_day {
        When::Day(utc.date_naive())
    } else {
        When::At(utc)
    }
}

/// The original starts of a series' instances (up to the expansion horizon).
pub(super) fn occurrences(master: &Map<String, Value>) -> Vec<When> {
    let Ok(set) = recurrence_set(master) else {
        return Vec::new();
    };
    let all_day = master.get("start").is_some_and(|s| s.get("date").is_some());
    let start = set.get_dt_start().with_timezone(&Utc);
    let horizon = start.max(Utc::now()) + Duration::days(EXPANSION_HORIZON_DAYS);
    set.before(horizon.with_timezone(&rrule::Tz::UTC))
        .all(EXPANSION_LIMIT)
        .dates
        .into_iter()
        .map(|at| to_when(at, all_day))
        .collect()
}

/// Whether the series has an instance starting at `original`.
pub(super) fn is_occurrence(master: &Map<String, Value>, original: When) -> bool {
    let Ok(set) = recurrence_set(master) else {
        return false;
    };
    let all_day = master.get("start").is_some_and(|s| s.get("date").is_some());
    let at = match (original, all_day) {
        (When::Day(day), true) => day.and_hms_opt(0, 0, 0).map(|t| t.and_utc()),
        (When::At(at), false) => Some(at),
        _ => None,
    };
    let Some(at) = at else {
        return false;
    };
    let second = Duration::seconds(1);
    !set.after((at - second).with_timezone(&rrule::Tz::UTC))
        .before((at + second).with_timezone(&rrule::Tz::UTC))
        .all(1)
        .dates
        .is_empty()
}

/// A series' instance at `original` as Google shows one without an exception.
pub(super) fn default_instance(master: &Map<String, Value>, original: &When) -> Map<String, Value> {
    let master_id = master.get("id").and_then(Value::as_str).unwrap_or_default();
    let mut instance = master.clone();
    instance.remove("recurrence");
    instance.insert(
        "id".into(),
        json!(format!("{master_id}_{}", original.stamp())),
    );
    let start = master.get("start").cloned().unwrap_or(Value::Null);
    let end = master.get("end").cloned().unwrap_or(Value::Null);
    let (original_start, instance_start, instance_end) = match original {
        When::Day(day) => {
            let length = match (
                parse_event_time(&start, "start", chrono_tz::UTC),
                parse_event_time(&end, "end", chrono_tz::UTC),
            ) {
                (Ok((When::Day(s), _)), Ok((When::Day(e), _))) => e - s,
                _ => Duration::days(1),
            };
            let date = |d: NaiveDate| json!({"date": d.format("%Y-%m-%d").to_string()});
            (date(*day), date(*day), date(*day + length))
        }
        When::At(at) => {
            let (s, e) = match (
                parse_event_time(&start, "start", chrono_tz::UTC),
                parse_event_time(&end, "end", chrono_tz::UTC),
            ) {
                (Ok((When::At(s), _)), Ok((When::At(e), _))) => (s, e),
                _ => (*at, *at),
            };
            let zoned = |value: &Value, at: DateTime<Utc>| {
                let zone: chrono_tz::Tz = value
                    .get("timeZone")
                    .and_then(Value::as_str)
                    .and_then(|z| z.parse().ok())
                    .unwrap_or(chrono_tz::UTC);
                json!({
                    "dateTime": at.with_timezone(&zone).to_rfc3339_opts(SecondsFormat::Secs, true),
                    "timeZone": zone.name(),
                })
            };
            (
                zoned(&start, *at),
                zoned(&start, *at),
                zoned(&end, *at + (e - s)),
            )
        }
    };
    instance.insert("start".into(), instance_start);
    instance.insert("end".into(), instance_end);
    instance.insert("recurringEventId".into(), json!(master_id));
    instance.insert("originalStartTime".into(), original_start);
    instance
}
