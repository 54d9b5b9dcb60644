//! How Graph writes an event back: the v1.0 `event` resource in the zone and body type the
//! client prefers (all-day events stay midnight to midnight), and the short form of an
//! occurrence in a delta page.

use chrono_tz::Tz;
use serde_json::{Map, Value, json};

use super::state::{EventRecord, Kind, Stamp, State};
use super::times::{format_local, format_utc, instant};

/// How the client wants items written back (from its `Prefer` headers).
#[derive(Clone, Debug)]
pub(super) struct View {
    pub(super) zone_name: String,
    pub(super) tz: Tz,
    /// `outlook.body-content-type`: `Some(true)` for text, `Some(false)` for HTML.
    pub(super) text_body: Option<bool>,
    /// Times in each event's own zone instead of `zone_name`.
    pub(super) original_zones: bool,
}

impl View {
    /// UTC and text bodies (what Bowline asks for): what the fixture's accessors return.
    pub(super) fn fixture() -> Self {
        Self {
            zone_name: "UTC".into(),
            tz: Tz::UTC,
            text_body: Some(true),
            original_zones: false,
        }
    }
}

fn strip_html(html: &str) -> String {
    let body = html
        .find("<body")
        .and_then(|at| html[at..].find('>').map(|end| &html[at + end + 1..]))
        .unwrap_or(html);
    let body = body.split("</body>").next().unwrap_or(body);
    let mut text = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
        .trim()
        .to_owned()
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\n', "<br>\r\n")
}

/// `body` in the content type the client prefers (Outlook keeps HTML by default).
fn body(record: &EventRecord, view: &View) -> (Value, String) {
    let stored = record.props.get("body");
    let kind = stored
        .and_then(|b| b.get("contentType"))
        .and_then(Value::as_str)
        .unwrap_or("text");
    let content = stored
        .and_then(|b| b.get("content"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let is_html = kind.eq_ignore_ascii_case("html");
    let text = if is_html {
        strip_html(content)
    } else {
        content.to_owned()
    };
    let preview: String = text.chars().take(255).collect();
    let rendered = match (view.text_body, is_html) {
        (Some(true), _) => json!({"contentType": "text", "content": text}),
        (Some(false) | None, true) => json!({"contentType": "html", "content": content}),
        (Some(false) | None, false) if content.is_empty() => {
            json!({"contentType": "html", "content": ""})
        }
        (Some(false) | None, false) => json!({
            "contentType": "html",
            "content": format!(
                "<html><head>\r\n<meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\">\r\n</head>\r\n<body>\r\n{}\r\n</body>\r\n</html>\r\n",
                html_escape(content)
            ),
        }),
    };
    (rendered, preview)
}

fn time(stamp: &Stamp, all_day: bool, view: &View) -> Value {
    if view.original_zones {
        return json!({"dateTime": format_local(stamp.local), "timeZone": stamp.zone});
    }
    let local = if all_day {
        // All-day events come back midnight to midnight whatever the zone.
        stamp.local
    } else {
        instant(stamp.tz, stamp.local)
            .with_timezone(&view.tz)
            .naive_local()
    };
    json!({"dateTime": format_local(local), "timeZone": view.zone_name})
}

fn location(props: &Map<String, Value>) -> (Value, Value) {
    let name = props
        .get("location")
        .and_then(|l| l.get("displayName"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name.is_empty() {
        return (
            json!({"displayName": "", "locationType": "default", "uniqueIdType": "unknown", "address": {}, "coordinates": {}}),
            json!([]),
        );
    }
    let mut location = json!({
        "displayName": name,
        "locationType": "default",
        "uniqueId": name,
        "uniqueIdType": "private",
    });
    if let (Some(target), Some(Value::Object(given))) =
        (location.as_object_mut(), props.get("location"))
    {
        for (k, v) in given {
            target.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    let locations = json!([location.clone()]);
    (location, locations)
}

/// `recurrence` filled in the way Graph returns it.
fn recurrence(value: &Value, start: &Stamp) -> Value {
    let pattern = value.get("pattern").cloned().unwrap_or_default();
    let range = value.get("range").cloned().unwrap_or_default();
    let get = |v: &Value, k: &str, default: Value| v.get(k).cloned().unwrap_or(default);
    json!({
        "pattern": {
            "type": get(&pattern, "type", json!("daily")),
            "interval": get(&pattern, "interval", json!(1)),
            "month": get(&pattern, "month", json!(0)),
            "dayOfMonth": get(&pattern, "dayOfMonth", json!(0)),
            "daysOfWeek": get(&pattern, "daysOfWeek", json!([])),
            "firstDayOfWeek": get(&pattern, "firstDayOfWeek", json!("sunday")),
            "index": get(&pattern, "index", json!("first")),
        },
        "range": {
            "type": get(&range, "type", json!("noEnd")),
            "startDate": get(&range, "startDate", json!(start.local.date().to_string())),
            "endDate": get(&range, "endDate", json!("0001-01-01")),
            "recurrenceTimeZone": get(&range, "recurrenceTimeZone", json!(start.zone)),
            "numberOfOccurrences": get(&range, "numberOfOccurrences", json!(0)),
        },
    })
}

/// The short form of an occurrence in a delta page.
pub(super) fn render_delta_occurrence(record: &EventRecord, view: &View) -> Value {
    json!({
        "@odata.etag": format!("W/\"{}\"", record.change_key),
        "id": record.id,
        "type": record.kind.name(),
        "seriesMasterId": record.kind.master_id(),
        "isAllDay": record.when.all_day,
        "start": time(&record.when.start, record.when.all_day, view),
        "end": time(&record.when.end, record.when.all_day, view),
    })
}

/// The v1.0 `event` resource.
pub(super) fn render(state: &State, record: &EventRecord, view: &View) -> Value {
    let owner = state.owner_of(&record.calendar_id);
    let (owner_name, owner_address) = owner
        .map(|u| (u.name.clone(), u.email.clone()))
        .unwrap_or_default();
    let (body, preview) = body(record, view);
    let (location, locations) = location(&record.props);
    let prop = |name: &str, default: Value| record.props.get(name).cloned().unwrap_or(default);
    let recurrence = match (&record.kind, record.props.get("recurrence")) {
        (Kind::Master { .. }, Some(value)) => recurrence(value, &record.when.start),
        _ => Value::Null,
    };
    let mut event = json!({
        "@odata.etag": format!("W/\"{}\"", record.change_key),
        "id": record.id,
        "createdDateTime": format_utc(record.created),
        "lastModifiedDateTime": format_utc(record.modified),
        "changeKey": record.change_key,
        "categories": prop("categories", json!([])),
        "transactionId": record.transaction_id,
        "originalStartTimeZone": record.when.start.zone,
        "originalEndTimeZone": record.when.end.zone,
        "iCalUId": record.ical_uid,
        "uid": record.ical_uid,
        "reminderMinutesBeforeStart": prop("reminderMinutesBeforeStart", json!(15)),
        "isReminderOn": prop("isReminderOn", json!(true)),
        "hasAttachments": false,
        "subject": prop("subject", json!("")),
        "bodyPreview": preview,
        "importance": prop("importance", json!("normal")),
        "sensitivity": prop("sensitivity", json!("normal")),
        "isAllDay": record.when.all_day,
        "isCancelled": prop("isCancelled", json!(false)),
        "isOrganizer": true,
        "responseRequested": prop("responseRequested", json!(true)),
        "seriesMasterId": record.kind.master_id(),
        "showAs": prop("showAs", json!("busy")),
    });
    let rest = json!({
        "type": record.kind.name(),
        "webLink": format!(
            "https://outlook.live.com/owa/?itemid={}&exvsurl=1&path=/calendar/item",
            record.id
        ),
        "onlineMeetingUrl": null,
        "isOnlineMeeting": prop("isOnlineMeeting", json!(false)),
        "onlineMeetingProvider": prop("onlineMeetingProvider", json!("unknown")),
        "allowNewTimeProposals": prop("allowNewTimeProposals", json!(true)),
        "isDraft": false,
        "hideAttendees": prop("hideAttendees", json!(false)),
        "recurrence": recurrence,
        "onlineMeeting": null,
        "responseStatus": {"response": "organizer", "time": "0001-01-01T00:00:00Z"},
        "body": body,
        "start": time(&record.when.start, record.when.all_day, view),
        "end": time(&record.when.end, record.when.all_day, view),
        "location": location,
        "locations": locations,
        "attendees": prop("attendees", json!([])),
        "organizer": {"emailAddress": {"name": owner_name, "address": owner_address}},
    });
    if let (Some(target), Value::Object(rest)) = (event.as_object_mut(), rest) {
        target.extend(rest);
    }
    event
}
