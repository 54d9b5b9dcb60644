//! What Google accepts in an event it is asked to write: the writable fields, `start` and
//! `end` (both days or both times, not reversed, zones where a series needs them),
//! recurrence lines, status, transparency, visibility, colors, reminders and attendees.

use serde_json::{Map, Value};

use super::recurrence::recurrence_set;
use super::reply::{Reply, api_error, invalid};
use super::times::{When, parse_event_time};

/// Fields a client may write (read-only ones are the server's).
pub(super) fn writable_fields(body: &Map<String, Value>) -> Map<String, Value> {
    const READ_ONLY: &[&str] = &[
        "kind",
        "etag",
        "id",
        "htmlLink",
        "created",
        "updated",
        "creator",
        "organizer",
        "iCalUID",
        "recurringEventId",
        "originalStartTime",
        "hangoutLink",
        "privateCopy",
    ];
    body.iter()
        .filter(|(k, _)| !READ_ONLY.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Checks an event's writable fields as Google does and normalizes `start`/`end`.
pub(super) fn normalize_and_validate(
    content: &mut Map<String, Value>,
    zone: chrono_tz::Tz,
    update: bool,
) -> Result<(), Reply> {
    let start = content
        .get("start")
        .filter(|v| !v.is_null())
        .ok_or_else(|| api_error(400, "required", "Missing start time."))?;
    let end = content
        .get("end")
        .filter(|v| !v.is_null())
        .ok_or_else(|| api_error(400, "required", "Missing end time."))?;
    let (start_when, start_value) = parse_event_time(start, "start", zone)?;
    let (end_when, end_value) = parse_event_time(end, "end", zone)?;
    match (start_when, end_when) {
        (When::Day(s), When::Day(e)) if e <= s => {
            return Err(api_error(
                400,
                "timeRangeEmpty",
                "The specified time range is empty.",
            ));
        }
        (When::At(s), When::At(e)) if e < s => {
            return Err(api_error(
                400,
                "timeRangeEmpty",
                "The specified time range is empty.",
            ));
        }
        (When::Day(_), When::At(_)) | (When::At(_), When::Day(_)) => {
            return Err(invalid(
                "Start and end times must either both be date or both be dateTime.",
            ));
        }
        _ => {}
    }
    let timed = matches!(start_when, When::At(_));
    match content.get("recurrence") {
        None | Some(Value::Null) => {
            content.remove("recurrence");
        }
        Some(Value::Array(lines)) if lines.is_empty() => {
            content.remove("recurrence");
        }
        Some(Value::Array(lines)) => {
            for line in lines {
                let text = line
                    .as_str()
                    .ok_or_else(|| invalid("Invalid recurrence rule."))?;
                let name = text
                    .split([':', ';'])
                    .next()
                    .unwrap_or_default()
                    .to_ascii_uppercase();
                if !["RRULE", "EXRULE", "RDATE", "EXDATE"].contains(&name.as_str()) {
                    return Err(invalid("Invalid recurrence rule."));
                }
            }
            if timed {
                for (which, value) in [("start", &start_value), ("end", &end_value)] {
                    if value.get("timeZone").is_none() {
                        return Err(invalid(&format!(
                            "Missing time zone definition for {which} time."
                        )));
                    }
                }
            }
        }
        Some(_) => return Err(invalid("Invalid recurrence rule.")),
    }
    content.insert("start".into(), start_value);
    content.insert("end".into(), end_value);
    if content.contains_key("recurrence") && recurrence_set(content).is_err() {
        return Err(invalid("Invalid recurrence rule."));
    }
    if let Some(status) = content.get("status") {
        let allowed: &[&str] = if update {
            &["confirmed", "tentative", "cancelled"]
        } else {
            &["confirmed", "tentative"]
        };
        if !status.as_str().is_some_and(|s| allowed.contains(&s)) {
            return Err(invalid("Invalid value for: status"));
        }
    }
    for (field, allowed) in [
        ("transparency", &["opaque", "transparent"][..]),
        (
            "visibility",
            &["default", "public", "private", "confidential"][..],
        ),
    ] {
        if let Some(value) = content.get(field)
            && !value.as_str().is_some_and(|v| allowed.contains(&v))
        {
            return Err(invalid(&format!("Invalid value for: {field}")));
        }
    }
    if let Some(color) = content.get("colorId") {
        let valid = color
            .as_str()
            .and_then(|c| c.parse::<u8>().ok())
            .is_some_and(|c| (1..=11).contains(&c));
        if !valid {
            return Err(invalid("Invalid value for: colorId"));
        }
    }
    if let Some(reminders) = content.get("reminders") {
        let overrides = reminders
            .get("overrides")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if reminders.get("useDefault").and_then(Value::as_bool) == Some(true)
            && !overrides.is_empty()
        {
            return Err(api_error(
                400,
                "cannotUseDefaultRemindersAndSpecifyOverride",
                "Cannot specify both default reminders and overrides at the same time.",
            ));
        }
        if overrides.len() > 5 {
            return Err(api_error(400, "tooManyReminders", "Too many reminders."));
        }
        for reminder in &overrides {
            let minutes_ok = reminder
                .get("minutes")
                .and_then(Value::as_i64)
                .is_some_and(|m| (0..=40320).contains(&m));
            let method_ok = reminder
                .get("method")
                .and_then(Value::as_str)
                .is_some_and(|m| m == "email" || m == "popup");
            if !minutes_ok || !method_ok {
                return Err(invalid("Invalid value for: reminders.overrides"));
            }
        }
    }
    if let Some(attendees) = content.get("attendees") {
        let valid = attendees.as_array().is_some_and(|list| {
            list.iter().all(|a| {
                a.get("email")
                    .and_then(Value::as_str)
                    .is_some_and(|e| e.contains('@'))
            })
        });
        if !valid {
            return Err(api_error(400, "required", "Missing attendee email."));
        }
    }
    Ok(())
}
