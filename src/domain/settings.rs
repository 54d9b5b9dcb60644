//! The settings document: its fields and defaults, validation of complete settings (PUT) and
//! patches (PATCH), and the rule keeping `notificationsOnByDefault` and `defaultReminder` in
//! step. Unknown keys are stripped, never stored; optional fields a client leaves out keep
//! their stored value, so an older client cannot reset what a newer one set.

use serde_json::{Map, Value, json};

use super::reminders;

/// Settings of a new user (`onboarded: false`).
pub fn defaults() -> Value {
    json!({
        "notificationsOnByDefault": true,
        "defaultCalendarView": "month",
        "weekStartsOn": "monday",
        "timeFormat": "24h",
        "dateFormat": "dmy",
        "theme": "system",
        "onboarded": false,
        "tabBarLabels": true,
        "calendarOrder": [],
        "timezone": "UTC",
        "defaultReminder": reminders::default_rule(),
        "notificationEmails": { "eventChanged": true, "pollDecided": true }
    })
}

/// Fields a complete settings body (PUT) must carry.
const REQUIRED: [&str; 5] = [
    "notificationsOnByDefault",
    "defaultCalendarView",
    "weekStartsOn",
    "timeFormat",
    "dateFormat",
];

/// Most entries in `calendarOrder`.
const MAX_CALENDAR_ORDER: usize = 500;

/// Checks one field: `Ok(Some(value))` when known and valid, `Ok(None)` when known and
/// invalid, `Err(())` when unknown (to be stripped).
fn check_field(key: &str, value: &Value) -> Result<Option<Value>, ()> {
    let one_of = |allowed: &[&str]| {
        value
            .as_str()
            .filter(|v| allowed.contains(v))
            .map(|_| value.clone())
    };
    let boolean = || value.is_boolean().then(|| value.clone());
    Ok(match key {
        "notificationsOnByDefault" | "onboarded" | "tabBarLabels" => boolean(),
        "defaultCalendarView" => one_of(&["week", "month", "day", "schedule"]),
        "weekStartsOn" => one_of(&["monday", "sunday"]),
        "timeFormat" => one_of(&["12h", "24h"]),
        "dateFormat" => one_of(&["dmy", "mdy", "ymd"]),
        "theme" => one_of(&["system", "dark", "light"]),
        "calendarOrder" => value
            .as_array()
            .filter(|ids| {
                ids.len() <= MAX_CALENDAR_ORDER
                    && ids
                        .iter()
                        .all(|id| id.as_str().is_some_and(|s| (1..=128).contains(&s.len())))
            })
            .map(|_| value.clone()),
        "timezone" => value
            .as_str()
            .filter(|zone| (1..=64).contains(&zone.len()) && zone.parse::<chrono_tz::Tz>().is_ok())
            .map(|_| value.clone()),
        "defaultReminder" => reminders::parse_rule(value),
        "notificationEmails" => value
            .as_object()
            .filter(|emails| {
                emails.len() == 2
                    && emails.get("eventChanged").is_some_and(Value::is_boolean)
                    && emails.get("pollDecided").is_some_and(Value::is_boolean)
            })
            .map(|_| value.clone()),
        _ => return Err(()),
    })
}

/// The known fields of `body`, validated; unknown ones are dropped.
fn known_fields(body: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut fields = Map::new();
    for (key, value) in body {
        match check_field(key, value) {
            Ok(Some(valid)) => {
                fields.insert(key.clone(), valid);
            }
            Ok(None) => return None,
            Err(()) => {}
        }
    }
    Some(fields)
}

/// The fields of a complete settings body (PUT), or `None` when it is not valid settings.
pub fn complete(body: &Map<String, Value>) -> Option<Map<String, Value>> {
    let fields = known_fields(body)?;
    REQUIRED
        .iter()
        .all(|key| fields.contains_key(*key))
        .then_some(fields)
}

/// The fields of a patch, or `None` when a known field is invalid or nothing known is left.
pub fn patch(body: &Map<String, Value>) -> Option<Map<String, Value>> {
    known_fields(body).filter(|fields| !fields.is_empty())
}

/// The time zone a settings value names (`timezone`; UTC when unset or unknown).
pub fn zone_of(value: &Value) -> chrono_tz::Tz {
    value
        .get("timezone")
        .and_then(Value::as_str)
        .and_then(|zone| zone.parse::<chrono_tz::Tz>().ok())
        .unwrap_or(chrono_tz::Tz::UTC)
}

/// The stored value with defaults under it (fields added since it was written) and only
/// known fields kept.
pub fn with_defaults(stored: &Value) -> Value {
    let mut value = defaults();
    if let (Some(target), Some(stored)) = (value.as_object_mut(), stored.as_object()) {
        for (key, field) in stored {
            if target.contains_key(key) {
                target.insert(key.clone(), field.clone());
            }
        }
    }
    value
}

/// `current` with `changes` applied, then the reminder/boolean coupling: a `defaultReminder`
/// sent sets `notificationsOnByDefault` to whether it reminds; otherwise `false` sent makes
/// the rule silent, and `true` sent over a silent rule restores the default rule.
pub fn apply(current: &Value, changes: &Map<String, Value>) -> Value {
    let mut value = with_defaults(current);
    let Some(target) = value.as_object_mut() else {
        return value;
    };
    for (key, field) in changes {
        target.insert(key.clone(), field.clone());
    }
    if let Some(rule) = changes.get("defaultReminder") {
        let reminds = !reminders::is_silent(rule);
        target.insert("notificationsOnByDefault".into(), reminds.into());
    } else if let Some(on) = changes
        .get("notificationsOnByDefault")
        .and_then(Value::as_bool)
    {
        let silent = target
            .get("defaultReminder")
            .is_none_or(reminders::is_silent);
        if !on {
            target.insert("defaultReminder".into(), reminders::silent_rule());
        } else if silent {
            target.insert("defaultReminder".into(), reminders::default_rule());
        }
    }
    value
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn object(value: &Value) -> Map<String, Value> {
        value.as_object().cloned().expect("an object")
    }

    fn complete_of(value: &Value) -> Option<Map<String, Value>> {
        complete(&object(value))
    }

    fn patch_of(value: Value) -> Option<Map<String, Value>> {
        patch(&object(&value))
    }

    fn put_body() -> Value {
        json!({
            "notificationsOnByDefault": true,
            "defaultCalendarView": "week",
            "weekStartsOn": "sunday",
            "timeFormat": "12h",
            "dateFormat": "mdy",
        })
    }

    #[test]
    fn complete_settings_need_the_required_fields() {
        assert!(complete_of(&put_body()).is_some());
        let mut missing = put_body();
        missing.as_object_mut().unwrap().remove("dateFormat");
        assert!(complete_of(&missing).is_none());
        let mut bad = put_body();
        bad["theme"] = json!("chartreuse");
        assert!(complete_of(&bad).is_none());
    }

    #[test]
    fn patches_strip_unknown_fields_and_refuse_empty_or_invalid_ones() {
        let fields = patch_of(json!({ "theme": "dark", "unknown": 1 })).unwrap();
        assert_eq!(Value::Object(fields), json!({ "theme": "dark" }));
        assert!(patch_of(json!({ "unknown": 1 })).is_none());
        assert!(patch_of(json!({})).is_none());
        assert!(patch_of(json!({ "weekStartsOn": 3 })).is_none());
        assert!(patch_of(json!({ "timezone": "Europe/Prague" })).is_some());
        assert!(patch_of(json!({ "timezone": "Mars/Olympus" })).is_none());
        assert!(patch_of(json!({ "notificationEmails": { "eventChanged": false } })).is_none());
    }

    #[test]
    fn omitted_fields_keep_their_stored_values() {
        let stored = apply(
            &defaults(),
            &patch_of(json!({ "theme": "dark", "onboarded": true })).unwrap(),
        );
        let after = apply(&stored, &complete_of(&put_body()).unwrap());
        assert_eq!(after["theme"], "dark");
        assert_eq!(after["onboarded"], true);
        assert_eq!(after["defaultCalendarView"], "week");
    }

    #[test]
    fn the_reminder_and_the_switch_stay_in_step() {
        let silent = apply(
            &defaults(),
            &patch_of(json!({ "defaultReminder": reminders::silent_rule() })).unwrap(),
        );
        assert_eq!(silent["notificationsOnByDefault"], false);
        let on = apply(
            &silent,
            &patch_of(json!({ "notificationsOnByDefault": true })).unwrap(),
        );
        assert_eq!(on["defaultReminder"], reminders::default_rule());
        let off = apply(
            &on,
            &patch_of(json!({ "notificationsOnByDefault": false })).unwrap(),
        );
        assert_eq!(off["defaultReminder"], reminders::silent_rule());
        let custom = json!({ "minutesBefore": 30, "allDay": null });
        let custom = apply(
            &off,
            &patch_of(json!({ "defaultReminder": custom.clone() })).unwrap(),
        );
        assert_eq!(custom["notificationsOnByDefault"], true);
        let kept = apply(
            &custom,
            &patch_of(json!({ "notificationsOnByDefault": true })).unwrap(),
        );
        assert_eq!(
            kept["defaultReminder"],
            json!({ "minutesBefore": 30, "allDay": null })
        );
        let themed = apply(&kept, &patch_of(json!({ "theme": "light" })).unwrap());
        assert_eq!(themed["defaultReminder"], kept["defaultReminder"]);
    }
}
