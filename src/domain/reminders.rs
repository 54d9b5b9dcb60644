//! Reminder rules `{minutesBefore, allDay}`: strict objects with both keys required, each
//! branch `null` (never remind for that kind of event) or a value in range. The server stores
//! rules; clients compute the schedule.

use serde_json::{Map, Value, json};

/// Longest offset before a timed event: four weeks, in minutes.
pub const MAX_MINUTES_BEFORE: u64 = 40_320;
/// Most days before an all-day event.
pub const MAX_DAYS_BEFORE: u64 = 30;
/// Last minute of a day (`atMinute` counts minutes after local midnight).
pub const LAST_MINUTE_OF_DAY: u64 = 1439;

/// The default rule: 10 minutes before timed events, 18:00 the day before all-day events.
pub fn default_rule() -> Value {
    json!({ "minutesBefore": 10, "allDay": { "daysBefore": 1, "atMinute": 1080 } })
}

/// The rule that never reminds.
pub fn silent_rule() -> Value {
    json!({ "minutesBefore": null, "allDay": null })
}

/// Whether a (valid) rule never reminds.
pub fn is_silent(rule: &Value) -> bool {
    rule.get("minutesBefore").is_none_or(Value::is_null)
        && rule.get("allDay").is_none_or(Value::is_null)
}

/// A whole number in `0..=max` (JSON numbers like `10.0` count as whole).
fn whole_in_range(value: &Value, max: u64) -> Option<u64> {
    let number = value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n <= max as f64)
            .map(|n| n as u64)
    })?;
    (number <= max).then_some(number)
}

/// Exactly these keys, all present.
fn has_exactly(object: &Map<String, Value>, keys: &[&str]) -> bool {
    object.len() == keys.len() && keys.iter().all(|key| object.contains_key(*key))
}

/// The rule in canonical form, or `None` when `value` is not a valid rule.
pub fn parse_rule(value: &Value) -> Option<Value> {
    let rule = value.as_object()?;
    if !has_exactly(rule, &["minutesBefore", "allDay"]) {
        return None;
    }
    let minutes_before = match &rule["minutesBefore"] {
        Value::Null => Value::Null,
        minutes => whole_in_range(minutes, MAX_MINUTES_BEFORE)?.into(),
    };
    let all_day = match &rule["allDay"] {
        Value::Null => Value::Null,
        Value::Object(all_day) if has_exactly(all_day, &["daysBefore", "atMinute"]) => json!({
            "daysBefore": whole_in_range(&all_day["daysBefore"], MAX_DAYS_BEFORE)?,
            "atMinute": whole_in_range(&all_day["atMinute"], LAST_MINUTE_OF_DAY)?,
        }),
        _ => return None,
    };
    Some(json!({ "minutesBefore": minutes_before, "allDay": all_day }))
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn valid_rules_come_back_canonical() {
        assert_eq!(parse_rule(&default_rule()), Some(default_rule()));
        assert_eq!(parse_rule(&silent_rule()), Some(silent_rule()));
        assert_eq!(
            parse_rule(&json!({ "minutesBefore": 40320.0, "allDay": null })),
            Some(json!({ "minutesBefore": 40320, "allDay": null }))
        );
        assert!(is_silent(&silent_rule()));
        assert!(!is_silent(&default_rule()));
    }

    #[test]
    fn invalid_rules_are_refused() {
        for bad in [
            json!({}),
            json!(10),
            json!({ "minutesBefore": 10 }),
            json!({ "minutesBefore": 40321, "allDay": null }),
            json!({ "minutesBefore": -1, "allDay": null }),
            json!({ "minutesBefore": 1.5, "allDay": null }),
            json!({ "minutesBefore": "10", "allDay": null }),
            json!({ "minutesBefore": null, "allDay": { "daysBefore": 31, "atMinute": 0 } }),
            json!({ "minutesBefore": null, "allDay": { "daysBefore": 1, "atMinute": 1440 } }),
            json!({ "minutesBefore": null, "allDay": { "daysBefore": 1 } }),
            json!({ "minutesBefore": null, "allDay": null, "extra": 1 }),
        ] {
            assert_eq!(parse_rule(&bad), None, "{bad}");
        }
    }
}
