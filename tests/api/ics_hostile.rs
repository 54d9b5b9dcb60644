//! iCalendar input no real producer writes but anyone can send: components nested tens of
//! thousands deep (refused naming the line, the server keeps running) and control
//! characters in text values (dropped, so PostgreSQL can store the rest); and what real
//! producers get wrong (lone CR line ends, text that is not UTF-8, broken quoted-printable,
//! Windows zone names), written here so the default suite needs no corpus beside it (folded
//! lines, a byte-order mark and a Windows zone with its VTIMEZONE are in `ics.rs`' fixtures).

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::spawn_app;
use crate::support::ics::{events_in, import, imported};

#[tokio::test]
async fn deeply_nested_components_are_refused_naming_the_line() {
    let app = spawn_app().await;
    let user = app.sign_up("deep@example.com").await;
    let depth = 50_000;
    let body = format!(
        "BEGIN:VCALENDAR\r\n{}{}END:VCALENDAR\r\n",
        "BEGIN:A\r\n".repeat(depth),
        "END:A\r\n".repeat(depth)
    );
    let response = import(&app, &user, "", body.into_bytes()).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let answer: Value = response.json().await.expect("JSON");
    assert_eq!(
        answer["error"],
        "That file isn't valid iCalendar data (line 17: BEGIN:A nests components more than 16 deep)."
    );
    // The server is still there, and nothing was created.
    assert!(app.get("/api/v1/server/ok").await.status().is_success());
    let (_, calendars) = app
        .call(reqwest::Method::GET, "/api/v1/calendars", &user, None)
        .await;
    assert_eq!(
        calendars.as_array().expect("calendars").len(),
        1,
        "only the personal one"
    );
}

#[tokio::test]
async fn control_characters_in_text_values_are_dropped() {
    let app = spawn_app().await;
    let user = app.sign_up("nul-ics@example.com").await;
    let body = b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nX-WR-CALNAME:Te\0am\r\nBEGIN:VEVENT\r\nUID:nul-1\r\n\
DTSTART:20260301T090000Z\r\nDTEND:20260301T100000Z\r\nSUMMARY:Plan\0ning\x01 day\r\n\
DESCRIPTION:Line one\\nline\0 two\twith a tab\r\nLOCATION:Room\0 4\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let answer = imported(&app, &user, "", body.to_vec()).await;
    assert_eq!(answer["imported"], 1);
    assert_eq!(answer["name"], "Team");
    let events = events_in(&app, &user, answer["id"].as_str().expect("id")).await;
    assert_eq!(events[0]["title"], "Planning day");
    assert_eq!(events[0]["description"], "Line one\nline two\twith a tab");
    assert_eq!(events[0]["location"], "Room 4");
    assert_eq!(events[0]["start"], "2026-03-01T09:00:00.000Z");
}

/// What real producers send that RFC 5545 does not allow, written here (the real-world
/// corpus is its own suite): lone CR line ends, text that is not UTF-8, a broken
/// quoted-printable value of a vCalendar 1.0 export, and Windows zone names with no
/// VTIMEZONE. Each file imports, read as well as it can be.
#[tokio::test]
async fn files_real_producers_get_wrong_import_as_well_as_they_can() {
    let app = spawn_app().await;
    let user = app.sign_up("sloppy-ics@example.com").await;
    let cases: Vec<(&str, Vec<u8>, Value)> = vec![
        (
            "lone CR line ends, a fold among them",
            b"BEGIN:VCALENDAR\rVERSION:2.0\rBEGIN:VEVENT\rUID:cr-1\rSUMMARY:Old\r  Mac\r\
DTSTART:20260301T090000Z\rDTEND:20260301T100000Z\rEND:VEVENT\rEND:VCALENDAR\r"
                .to_vec(),
            json!(["Old Mac", "2026-03-01T09:00:00.000Z", "2026-03-01T10:00:00.000Z"]),
        ),
        (
            "Latin-1 text (not UTF-8)",
            b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:latin-1\r\nSUMMARY:Caf\xe9 r\xe9union\r\n\
DTSTART:20260302T090000Z\r\nDTEND:20260302T093000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
                .to_vec(),
            json!(["Caf\u{fffd} r\u{fffd}union", "2026-03-02T09:00:00.000Z", "2026-03-02T09:30:00.000Z"]),
        ),
        (
            "a quoted-printable value broken off by a soft line break",
            b"BEGIN:VCALENDAR\r\nVERSION:1.0\r\nBEGIN:VEVENT\r\nUID:qp-1\r\n\
SUMMARY;ENCODING=QUOTED-PRINTABLE;CHARSET=UTF-8:Caf=C3=A9 =\r\n\
DESCRIPTION;ENCODING=QUOTED-PRINTABLE:Line =0D=0A=\r\n\
DTSTART:20260303T090000Z\r\nDTEND:20260303T100000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
                .to_vec(),
            json!(["Caf=C3=A9 =", "2026-03-03T09:00:00.000Z", "2026-03-03T10:00:00.000Z"]),
        ),
        (
            "Windows zone names without a VTIMEZONE",
            b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:windows-1\r\nSUMMARY:Standup\r\n\
DTSTART;TZID=\"W. Europe Standard Time\":20260701T090000\r\n\
DTEND;TZID=Pacific Standard Time:20260701T020000\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
                .to_vec(),
            json!(["Standup", "2026-07-01T07:00:00.000Z", "2026-07-01T09:00:00.000Z"]),
        ),
    ];
    for (what, body, expected) in cases {
        let answer = imported(&app, &user, "", body).await;
        assert_eq!(answer["imported"], 1, "{what}: {answer}");
        let events = events_in(&app, &user, answer["id"].as_str().expect("id")).await;
        let got = json!([events[0]["title"], events[0]["start"], events[0]["end"]]);
        assert_eq!(got, expected, "{what}");
    }
}
