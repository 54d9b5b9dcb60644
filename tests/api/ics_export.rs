//! Exports read back: export → import → export keeps every stored field (RDATEs too,
//! date-valued for all-day events), a second parser (Python's `icalendar`) reads every
//! export to the same events, and SEQUENCE follows the event's revision.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::spawn_app;
use crate::support::ics::{events_in, exported, fixture, imported, set_timezone};

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

/// The export's content lines, unfolded.
fn unfolded_lines(export: &str) -> Vec<String> {
    export
        .replace("\r\n ", "")
        .split("\r\n")
        .map(str::to_owned)
        .collect()
}

/// Two RDATE series: a timed weekly one with extra dates across the spring DST change, and
/// an all-day one made of dates only.
const RDATE_FILE: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:rdate-timed\r\n\
DTSTART;TZID=Europe/Berlin:20260302T090000\r\nDTEND;TZID=Europe/Berlin:20260302T100000\r\n\
RRULE:FREQ=WEEKLY;COUNT=4\r\nRDATE;TZID=Europe/Berlin:20260401T090000,20260415T090000\r\n\
SUMMARY:Timed with extra dates\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:rdate-allday\r\n\
DTSTART;VALUE=DATE:20260310\r\nDTEND;VALUE=DATE:20260311\r\n\
RDATE;VALUE=DATE:20260320,20260330\r\nSUMMARY:All-day extra dates\r\nEND:VEVENT\r\n\
END:VCALENDAR\r\n";

#[tokio::test]
async fn rdates_survive_import_export_and_import_again() {
    let app = spawn_app().await;
    let user = app.sign_up("rdate@example.com").await;
    set_timezone(&app, &user, "Europe/Berlin").await;
    let first = imported(&app, &user, "?name=RDATEs", RDATE_FILE.as_bytes().to_vec()).await;
    let first_id = first["id"].as_str().expect("id");
    // A client's RDATE (Musubi's line form) rides along.
    let mut body = crate::helpers::event_body(&[first_id], "Client extra dates", 9);
    body["start"] = json!("2026-05-04T07:00:00.000Z");
    body["end"] = json!("2026-05-04T08:00:00.000Z");
    body["recurrence"] = json!("RRULE:FREQ=DAILY;COUNT=2\nRDATE:20260510T070000Z");
    let created = app.event_request(Method::POST, &user, &body).await;
    assert_eq!(created.status(), StatusCode::CREATED);

    // Worked out by hand: 09:00 Berlin is 08:00Z on 2 March (CET) and 07:00Z in April
    // (CEST from 29 March); all-day dates are UTC midnights, and an RDATE-only set lists
    // DTSTART as its first date (RFC 5545 counts it as an instance).
    let events = events_in(&app, &user, first_id).await;
    let recurrences: Vec<(Value, Value, Value)> = events
        .iter()
        .map(|e| {
            (
                e["title"].clone(),
                e["start"].clone(),
                e["recurrence"].clone(),
            )
        })
        .collect();
    assert_eq!(
        recurrences,
        vec![
            (
                json!("Timed with extra dates"),
                json!("2026-03-02T08:00:00.000Z"),
                json!("RRULE:FREQ=WEEKLY;COUNT=4\nRDATE:20260401T070000Z,20260415T070000Z"),
            ),
            (
                json!("All-day extra dates"),
                json!("2026-03-10T00:00:00.000Z"),
                json!("RDATE:20260310T000000Z,20260320T000000Z,20260330T000000Z"),
            ),
            (
                json!("Client extra dates"),
                json!("2026-05-04T07:00:00.000Z"),
                json!("RRULE:FREQ=DAILY;COUNT=2\nRDATE:20260510T070000Z"),
            ),
        ]
    );

    let export = exported(&app, &user, first_id).await;
    let lines = unfolded_lines(&export);
    for expected in [
        "DTSTART;TZID=Europe/Berlin:20260302T090000",
        "RDATE:20260401T070000Z,20260415T070000Z",
        "DTSTART;VALUE=DATE:20260310",
        "RDATE;VALUE=DATE:20260310,20260320,20260330",
        "RDATE:20260510T070000Z",
    ] {
        assert!(
            lines.iter().any(|l| l == expected),
            "{expected} in\n{export}"
        );
    }

    let second = imported(&app, &user, "?name=Again", export.into_bytes()).await;
    assert_eq!(second["imported"], 3);
    let again: Vec<Value> = events_in(&app, &user, second["id"].as_str().expect("id"))
        .await
        .iter()
        .map(stored_fields)
        .collect();
    let before: Vec<Value> = events.iter().map(stored_fields).collect();
    assert_eq!(again, before, "RDATEs survive export → import");
}

#[tokio::test]
async fn the_sequence_follows_the_revision() {
    let app = spawn_app().await;
    let user = app.sign_up("sequence@example.com").await;
    let calendar = app.create_calendar(&user, "Sequenced").await;
    let calendar_id = calendar["id"].as_str().expect("id");
    let body = crate::helpers::event_body(&[calendar_id], "Draft", 9);
    let created: Value = app
        .event_request(Method::POST, &user, &body)
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(created["revision"], 1);
    let sequence = |export: &str| -> Vec<String> {
        unfolded_lines(export)
            .into_iter()
            .filter(|l| l.starts_with("SEQUENCE:"))
            .collect()
    };
    let export = exported(&app, &user, calendar_id).await;
    assert_eq!(sequence(&export), vec!["SEQUENCE:1"]);

    for (revision, title) in [(1, "Final"), (2, "Final, moved")] {
        let mut update = created.clone();
        update["title"] = json!(title);
        update["revision"] = json!(revision);
        let response = app.event_request(Method::PUT, &user, &update).await;
        assert_eq!(response.status(), StatusCode::OK);
        let updated: Value = response.json().await.expect("JSON");
        assert_eq!(updated["revision"], revision + 1);
        let export = exported(&app, &user, calendar_id).await;
        assert_eq!(
            sequence(&export),
            vec![format!("SEQUENCE:{}", revision + 1)]
        );
        assert!(
            unfolded_lines(&export).contains(&format!("SUMMARY:{}", title.replace(',', "\\,")))
        );
    }
}
