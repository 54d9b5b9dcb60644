//! iCalendar input no real producer writes but anyone can send: components nested tens of
//! thousands deep (refused naming the line, the server keeps running) and control
//! characters in text values (dropped, so PostgreSQL can store the rest).

use reqwest::StatusCode;
use serde_json::Value;

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
