//! Pages: the `PageConfigV1` schema (strict objects, a `view` union discriminated by `id`,
//! defaults filled in), names, the default Page's config, and dropping calendars the reader
//! can no longer access from a config on the way out.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

/// Name of the Page created for every user.
pub const DEFAULT_PAGE_NAME: &str = "My calendar";
/// Most active Pages per user (a reorder lists at most this many).
pub const MAX_PAGES: usize = 100;
/// Longest Page name, in characters.
const MAX_NAME_CHARS: usize = 80;
/// Most calendar ids in a visibility list.
const MAX_CALENDAR_IDS: usize = 500;
/// Most filters.
const MAX_FILTERS: usize = 20;

const ICONS: [&str; 12] = [
    "house",
    "calendar-days",
    "star",
    "sparkles",
    "circle",
    "diamond",
    "heart",
    "plane",
    "coffee",
    "flag",
    "music",
    "briefcase",
];
const DENSITIES: [&str; 3] = ["compact", "comfortable", "spacious"];

/// A trimmed name of 1–80 characters.
pub fn parse_name(value: &Value) -> Option<String> {
    let name = value.as_str()?.trim();
    (!name.is_empty() && name.chars().count() <= MAX_NAME_CHARS).then(|| name.to_owned())
}

/// Only `allowed` keys, and every `required` one.
fn keys_ok(object: &Map<String, Value>, allowed: &[&str], required: &[&str]) -> bool {
    object.keys().all(|key| allowed.contains(&key.as_str()))
        && required.iter().all(|key| object.contains_key(*key))
}

/// An optional string field among `allowed`, or its default.
fn choice(
    object: &Map<String, Value>,
    key: &str,
    allowed: &[&str],
    default: &str,
) -> Option<Value> {
    match object.get(key) {
        None => Some(default.into()),
        Some(value) => value
            .as_str()
            .filter(|v| allowed.contains(v))
            .map(|_| value.clone()),
    }
}

/// An optional boolean field, or its default.
fn flag(object: &Map<String, Value>, key: &str, default: bool) -> Option<Value> {
    match object.get(key) {
        None => Some(default.into()),
        Some(value) => value.is_boolean().then(|| value.clone()),
    }
}

/// One of the view variants, defaults filled in.
fn parse_view(value: &Value) -> Option<Value> {
    let view = value.as_object()?;
    if view.get("configVersion") != Some(&json!(1)) {
        return None;
    }
    let id = view.get("id")?.as_str()?;
    fn with(extra: &[&'static str]) -> Vec<&'static str> {
        [["id", "configVersion"].as_slice(), extra].concat()
    }
    match id {
        "day" if keys_ok(view, &with(&["density"]), &[]) => Some(json!({
            "id": "day", "configVersion": 1,
            "density": choice(view, "density", &DENSITIES, "comfortable")?,
        })),
        "week" if keys_ok(view, &with(&["weekend", "density"]), &[]) => Some(json!({
            "id": "week", "configVersion": 1,
            "weekend": flag(view, "weekend", true)?,
            "density": choice(view, "density", &DENSITIES, "comfortable")?,
        })),
        "month" if keys_ok(view, &with(&["showAdjacentDays"]), &[]) => Some(json!({
            "id": "month", "configVersion": 1,
            "showAdjacentDays": flag(view, "showAdjacentDays", true)?,
        })),
        "agenda" if keys_ok(view, &with(&["groupBy"]), &[]) => Some(json!({
            "id": "agenda", "configVersion": 1,
            "groupBy": choice(view, "groupBy", &["day"], "day")?,
        })),
        "multi-week" if keys_ok(view, &with(&["weeks"]), &[]) => {
            let weeks = match view.get("weeks") {
                None => 4,
                Some(weeks) => weeks.as_u64().filter(|w| (1..=20).contains(w))?,
            };
            Some(json!({ "id": "multi-week", "configVersion": 1, "weeks": weeks }))
        }
        _ => None,
    }
}

/// A list of 0–500 calendar ids (strings of 1–128 characters).
fn calendar_ids(value: &Value) -> Option<Value> {
    let ids = value.as_array()?;
    (ids.len() <= MAX_CALENDAR_IDS
        && ids
            .iter()
            .all(|id| id.as_str().is_some_and(|s| (1..=128).contains(&s.len()))))
    .then(|| value.clone())
}

/// `{mode: "all", hiddenCalendarIds}` or `{mode: "include", calendarIds}`.
fn parse_visibility(value: &Value) -> Option<Value> {
    let visibility = value.as_object()?;
    match visibility.get("mode")?.as_str()? {
        "all" if keys_ok(visibility, &["mode", "hiddenCalendarIds"], &[]) => Some(json!({
            "mode": "all",
            "hiddenCalendarIds": match visibility.get("hiddenCalendarIds") {
                None => json!([]),
                Some(ids) => calendar_ids(ids)?,
            },
        })),
        "include" if keys_ok(visibility, &["mode", "calendarIds"], &["calendarIds"]) => Some(
            json!({ "mode": "include", "calendarIds": calendar_ids(&visibility["calendarIds"])? }),
        ),
        _ => None,
    }
}

/// Up to 20 `{type: "attendance"|"time", value}` filters.
fn parse_filters(value: &Value) -> Option<Value> {
    let filters = value.as_array()?;
    if filters.len() > MAX_FILTERS {
        return None;
    }
    let valid = filters.iter().all(|filter| {
        let Some(filter) = filter.as_object() else {
            return false;
        };
        let allowed: &[&str] = match filter.get("type").and_then(Value::as_str) {
            Some("attendance") => &["all", "attending", "not-attending"],
            Some("time") => &["all", "timed", "all-day"],
            _ => return false,
        };
        keys_ok(filter, &["type", "value"], &["type", "value"])
            && filter["value"]
                .as_str()
                .is_some_and(|v| allowed.contains(&v))
    });
    valid.then(|| value.clone())
}

/// A `PageConfigV1` in canonical form (defaults filled), or `None` when it is not one.
pub fn parse_config(value: &Value) -> Option<Value> {
    let config = value.as_object()?;
    let allowed = [
        "schemaVersion",
        "icon",
        "view",
        "calendarVisibility",
        "filters",
        "showPolls",
    ];
    let required = ["schemaVersion", "view", "calendarVisibility"];
    if !keys_ok(config, &allowed, &required) || config["schemaVersion"] != json!(1) {
        return None;
    }
    let mut parsed = Map::new();
    parsed.insert("schemaVersion".into(), 1.into());
    if let Some(icon) = config.get("icon") {
        icon.as_str().filter(|i| ICONS.contains(i))?;
        parsed.insert("icon".into(), icon.clone());
    }
    parsed.insert("view".into(), parse_view(&config["view"])?);
    parsed.insert(
        "calendarVisibility".into(),
        parse_visibility(&config["calendarVisibility"])?,
    );
    let filters = match config.get("filters") {
        None => json!([]),
        Some(filters) => parse_filters(filters)?,
    };
    parsed.insert("filters".into(), filters);
    if let Some(show) = config.get("showPolls") {
        parsed.insert("showPolls".into(), show.as_bool()?.into());
    }
    Some(Value::Object(parsed))
}

/// The default Page's config, its view following the settings' `defaultCalendarView`.
pub fn default_config(default_calendar_view: Option<&str>) -> Value {
    let view = match default_calendar_view {
        Some("schedule") => "agenda",
        Some(view @ ("day" | "week" | "month")) => view,
        _ => "month",
    };
    let config = json!({
        "schemaVersion": 1,
        "icon": "house",
        "view": { "id": view, "configVersion": 1 },
        "calendarVisibility": { "mode": "all", "hiddenCalendarIds": [] },
        "filters": [],
        "showPolls": false,
    });
    parse_config(&config).unwrap_or(config)
}

/// `config` without the calendar ids the reader cannot access (they are not foreign keys:
/// a calendar may have been deleted or left since the Page was saved).
pub fn without_inaccessible(config: &Value, accessible: &HashSet<String>) -> Value {
    let mut config = config.clone();
    if let Some(visibility) = config
        .get_mut("calendarVisibility")
        .and_then(Value::as_object_mut)
    {
        for key in ["hiddenCalendarIds", "calendarIds"] {
            if let Some(Value::Array(ids)) = visibility.get_mut(key) {
                ids.retain(|id| id.as_str().is_some_and(|id| accessible.contains(id)));
            }
        }
    }
    config
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn config(view: Value) -> Value {
        json!({
            "schemaVersion": 1,
            "view": view,
            "calendarVisibility": { "mode": "all", "hiddenCalendarIds": [] },
        })
    }

    #[test]
    fn defaults_are_filled_in_and_legacy_fields_stay_absent() {
        let parsed = parse_config(&config(json!({ "id": "week", "configVersion": 1 }))).unwrap();
        assert_eq!(parsed["view"]["weekend"], true);
        assert_eq!(parsed["view"]["density"], "comfortable");
        assert_eq!(parsed["filters"], json!([]));
        assert!(parsed.get("showPolls").is_none());
        assert!(parsed.get("icon").is_none());
    }

    #[test]
    fn strict_objects_and_discriminated_views() {
        let mut unknown = config(json!({ "id": "day", "configVersion": 1 }));
        unknown["extra"] = json!(true);
        assert!(parse_config(&unknown).is_none());
        assert!(parse_config(&config(json!({ "id": "year", "configVersion": 1 }))).is_none());
        assert!(parse_config(&config(json!({ "id": "day", "configVersion": 2 }))).is_none());
        assert!(
            parse_config(&config(
                json!({ "id": "day", "configVersion": 1, "weekend": true })
            ))
            .is_none()
        );
        assert!(
            parse_config(&config(
                json!({ "id": "multi-week", "configVersion": 1, "weeks": 21 })
            ))
            .is_none()
        );
        let mut include = config(json!({ "id": "month", "configVersion": 1 }));
        include["calendarVisibility"] = json!({ "mode": "include", "hiddenCalendarIds": [] });
        assert!(parse_config(&include).is_none());
        include["calendarVisibility"] = json!({ "mode": "include", "calendarIds": ["a"] });
        assert!(parse_config(&include).is_some());
        let mut filters = config(json!({ "id": "agenda", "configVersion": 1 }));
        filters["filters"] = json!([{ "type": "time", "value": "all-day" }]);
        assert!(parse_config(&filters).is_some());
        filters["filters"] = json!([{ "type": "time", "value": "attending" }]);
        assert!(parse_config(&filters).is_none());
    }

    #[test]
    fn the_default_config_follows_the_settings_view() {
        let agenda = default_config(Some("schedule"));
        assert_eq!(agenda["view"]["id"], "agenda");
        assert_eq!(agenda["showPolls"], false);
        assert_eq!(agenda["calendarVisibility"]["mode"], "all");
        assert_eq!(default_config(Some("unknown"))["view"]["id"], "month");
        assert_eq!(parse_config(&agenda), Some(agenda));
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(parse_name(&json!("  Work ")), Some("Work".into()));
        assert_eq!(parse_name(&json!("   ")), None);
        assert_eq!(parse_name(&json!("x".repeat(81))), None);
        assert_eq!(parse_name(&json!("é".repeat(80))), Some("é".repeat(80)));
    }

    #[test]
    fn inaccessible_calendars_are_dropped_on_read() {
        let mut config = config(json!({ "id": "day", "configVersion": 1 }));
        config["calendarVisibility"]["hiddenCalendarIds"] = json!(["kept", "gone"]);
        let accessible = HashSet::from(["kept".to_owned()]);
        let read = without_inaccessible(&config, &accessible);
        assert_eq!(
            read["calendarVisibility"]["hiddenCalendarIds"],
            json!(["kept"])
        );
    }
}
