//! Exports read back: export → import → export keeps every stored field, and a second
//! parser (Python's `icalendar`) reads every export to the same events.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::spawn_app;
use crate::ics::{events_in, exported, fixture, imported, set_timezone};

/// The fields Bowline stores for an event, as a comparable value.
fn stored_fields(event: &Value) -> Value {
    json!([
        event["title"],
        event["start"],
        event["end"],
        event["isAllDay"],
        event["isCanceled"],
        event["description"],
        event["location"],
        event["recurrence"],
        event["url"]
    ])
}

/// An export without the lines that differ between two copies of a calendar, its VEVENTs
/// sorted.
fn comparable(export: &str) -> Vec<String> {
    let unfolded = export.replace("\r\n ", "");
    let mut blocks: Vec<String> = unfolded
        .split("BEGIN:VEVENT\r\n")
        .skip(1)
        .map(|block| {
            block
                .lines()
                .filter(|l| {
                    ![
                        "UID:",
                        "DTSTAMP:",
                        "CREATED:",
                        "LAST-MODIFIED:",
                        "SEQUENCE:",
                    ]
                    .iter()
                    .any(|p| l.starts_with(p))
                })
                .take_while(|l| *l != "END:VEVENT")
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    blocks.sort();
    blocks
}

#[tokio::test]
async fn export_import_export_round_trips() {
    let app = spawn_app().await;
    let user = app.sign_up("roundtrip@example.com").await;
    set_timezone(&app, &user, "Europe/Berlin").await;
    let first = imported(&app, &user, "?name=First", fixture("team.ics")).await;
    let first_id = first["id"].as_str().expect("id");
    // Events written by clients round-trip too (musubi's two recurrence forms, millis).
    for (title, recurrence, all_day) in [
        ("Client weekly", json!("FREQ=WEEKLY;BYDAY=TU"), false),
        (
            "Client daily",
            json!("RRULE:FREQ=DAILY;COUNT=5\nEXDATE:20260902T070000Z"),
            false,
        ),
        (
            "Client holiday",
            json!("RRULE:FREQ=YEARLY;UNTIL=20300101T000000Z\nEXDATE:20270901T000000Z"),
            true,
        ),
    ] {
        let mut body = crate::helpers::event_body(&[first_id], title, 9);
        body["start"] = json!("2026-09-01T07:00:00.000Z");
        body["end"] = json!("2026-09-01T08:00:00.000Z");
        if all_day {
            body["start"] = json!("2026-09-01T00:00:00.000Z");
            body["end"] = json!("2026-09-02T00:00:00.000Z");
        }
        body["isAllDay"] = json!(all_day);
        body["recurrence"] = recurrence;
        body["description"] =
            json!("Ünïcödé, commas; semicolons\\ and a very long line ".repeat(4));
        body["hasAttendees"] = json!(false);
        let created = app.event_request(Method::POST, &user, &body).await;
        assert_eq!(created.status(), StatusCode::CREATED);
    }
    let first_export = exported(&app, &user, first_id).await;
    let second = imported(
        &app,
        &user,
        "?name=Second",
        first_export.clone().into_bytes(),
    )
    .await;
    assert_eq!(second["imported"], 8);
    let second_id = second["id"].as_str().expect("id");
    let second_export = exported(&app, &user, second_id).await;

    let before: Vec<Value> = events_in(&app, &user, first_id)
        .await
        .iter()
        .map(stored_fields)
        .collect();
    let after: Vec<Value> = events_in(&app, &user, second_id)
        .await
        .iter()
        .map(stored_fields)
        .collect();
    assert_eq!(before, after, "the stored fields survive export → import");
    assert_eq!(comparable(&first_export), comparable(&second_export));
}

/// Reads `export` with Python's `icalendar` package; one JSON object per VEVENT.
fn read_with_python(export: &str) -> Vec<Value> {
    const PYTHON: &str = "/usr/bin/python3";
    let script = r#"
import datetime, json, sys
import icalendar
cal = icalendar.Calendar.from_ical(sys.stdin.buffer.read())
out = []
for component in cal.walk():
    errors = getattr(component, "errors", [])
    if errors:
        sys.exit("%s: %s" % (component.name, errors))
for event in cal.walk("VEVENT"):
    def when(name):
        value = event.decoded(name)
        if isinstance(value, datetime.datetime):
            return value.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        return value.isoformat()
    out.append({"uid": str(event["UID"]), "summary": str(event["SUMMARY"]),
                "start": when("DTSTART"), "end": when("DTEND"),
                "cancelled": str(event.get("STATUS", "")) == "CANCELLED",
                "recurring": "RRULE" in event or "RDATE" in event})
print(json.dumps(out))
"#;
    let has_icalendar = std::process::Command::new(PYTHON)
        .args(["-c", "import icalendar"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        has_icalendar,
        "the second-parser test needs Python's icalendar package for {PYTHON} \
         (`.ci/run` installs it: apt-get install -y python3-icalendar)"
    );
    let mut child = std::process::Command::new(PYTHON)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run python3");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), export.as_bytes())
        .expect("write export");
    let output = child.wait_with_output().expect("python3 finishes");
    assert!(
        output.status.success(),
        "python icalendar rejected the export: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON from python")
}

#[tokio::test]
async fn a_second_parser_reads_every_export() {
    let app = spawn_app().await;
    let user = app.sign_up("python@example.com").await;
    for zone in ["Europe/Berlin", "America/Sao_Paulo", "UTC"] {
        set_timezone(&app, &user, zone).await;
        for file in ["team.ics", "messy.ics"] {
            let answer = imported(&app, &user, "", fixture(file)).await;
            let id = answer["id"].as_str().expect("id");
            let parsed = read_with_python(&exported(&app, &user, id).await);
            let events = events_in(&app, &user, id).await;
            assert_eq!(parsed.len(), events.len(), "{file} in {zone}");
            for event in events {
                let seen = parsed
                    .iter()
                    .find(|p| p["uid"] == event["id"])
                    .unwrap_or_else(|| panic!("{event} in python's reading"));
                assert_eq!(seen["summary"], event["title"]);
                assert_eq!(seen["cancelled"], event["isCanceled"]);
                assert_eq!(seen["recurring"], json!(!event["recurrence"].is_null()));
                if event["isAllDay"] == true {
                    let start = &event["start"].as_str().expect("start")[..10];
                    assert_eq!(seen["start"], start, "{file} in {zone}");
                } else {
                    assert_eq!(seen["start"], event["start"], "{file} in {zone}");
                    assert_eq!(seen["end"], event["end"], "{file} in {zone}");
                }
            }
        }
    }
}
