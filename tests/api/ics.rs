//! iCalendar import and export over HTTP: what an import creates and answers, its limits
//! and errors (and that a failed import leaves nothing behind), and the export's access
//! rules, headers and form. Round trips and the second parser: `ics_export`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::spawn_app;
use crate::support::ics::{events_in, export, exported, fixture, import, imported, set_timezone};

#[tokio::test]
async fn an_import_creates_a_calendar_with_the_files_events() {
    let app = spawn_app().await;
    let user = app.sign_up("importer@example.com").await;
    let answer = imported(
        &app,
        &user,
        "?name=Work&color=%23C8553D",
        fixture("team.ics"),
    )
    .await;
    assert_eq!(answer["imported"], 5);
    assert_eq!(answer["name"], "Work");
    assert_eq!(answer["color"], "#C8553D");
    assert_eq!(answer["role"], "owner");
    assert_eq!(answer["isDefault"], false);
    assert_eq!(answer["creatorID"], user.id.as_str());
    assert_eq!(
        answer["members"],
        json!([{ "id": user.id, "name": "Test User", "email": user.email }])
    );
    let id = answer["id"].as_str().expect("id");

    let events = events_in(&app, &user, id).await;
    let summary: Vec<Value> = events
        .iter()
        .map(|e| {
            json!([
                e["title"],
                e["start"],
                e["end"],
                e["isAllDay"],
                e["isCanceled"]
            ])
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            json!([
                "Standup",
                "2026-01-05T08:00:00.000Z",
                "2026-01-05T08:15:00.000Z",
                false,
                false
            ]),
            json!([
                "Standup (moved)",
                "2026-01-12T09:00:00.000Z",
                "2026-01-12T09:15:00.000Z",
                false,
                false
            ]),
            json!([
                "Offsite",
                "2026-03-10T00:00:00.000Z",
                "2026-03-12T00:00:00.000Z",
                true,
                false
            ]),
            json!([
                "Launch",
                "2026-07-01T16:00:00.000Z",
                "2026-07-01T17:00:00.000Z",
                false,
                true
            ]),
            json!([
                "Lunch (floating)",
                "2026-07-02T12:00:00.000Z",
                "2026-07-02T13:00:00.000Z",
                false,
                false
            ]),
        ]
    );
    let standup = &events[0];
    assert_eq!(
        standup["recurrence"],
        "RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10\nEXDATE:20260112T080000Z,20260119T080000Z",
        "the override's instance is excluded from its series"
    );
    assert_eq!(standup["description"], "Weekly, short\nBring coffee");
    assert_eq!(standup["location"], "Room 1; Building B");
    assert_eq!(
        standup["color"], "#C8553D",
        "events take the calendar's colour"
    );
    assert_eq!(standup["organizer"], user.id.as_str());
    assert_eq!(standup["originCalendarID"], id);
    assert_eq!(events[3]["url"], "https://example.com/launch");
}

#[tokio::test]
async fn names_colours_and_floating_times_fall_back_sensibly() {
    let app = spawn_app().await;
    let user = app.sign_up("fallbacks@example.com").await;
    set_timezone(&app, &user, "America/New_York").await;
    let answer = imported(&app, &user, "", fixture("team.ics")).await;
    assert_eq!(answer["name"], "Team calendar", "X-WR-CALNAME");
    assert_eq!(answer["color"], "#7a9e7e");
    let events = events_in(&app, &user, answer["id"].as_str().expect("id")).await;
    let lunch = events
        .iter()
        .find(|e| e["title"] == "Lunch (floating)")
        .expect("lunch");
    assert_eq!(
        lunch["start"], "2026-07-02T16:00:00.000Z",
        "floating: the user's zone"
    );

    let nameless = b"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:20260101T100000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let answer = imported(&app, &user, "?name=%20%20", nameless.to_vec()).await;
    assert_eq!(answer["name"], "Imported calendar");
    let events = events_in(&app, &user, answer["id"].as_str().expect("id")).await;
    assert_eq!(events[0]["title"], "Untitled event");
}

#[tokio::test]
async fn sloppy_files_are_read_leniently() {
    let app = spawn_app().await;
    let user = app.sign_up("messy@example.com").await;
    let answer = imported(&app, &user, "", fixture("messy.ics")).await;
    assert_eq!(answer["imported"], 3);
    assert_eq!(answer["name"], "Messy export");
    let events = events_in(&app, &user, answer["id"].as_str().expect("id")).await;
    let summary: Vec<Value> = events
        .iter()
        .map(|e| json!([e["title"], e["start"], e["end"], e["isAllDay"]]))
        .collect();
    assert_eq!(
        summary,
        vec![
            json!([
                "Lower-case names",
                "2026-04-01T00:00:00.000Z",
                "2026-04-01T00:00:00.000Z",
                true
            ]),
            json!([
                "Folded before the colon",
                "2026-04-02T07:00:00.000Z",
                "2026-04-02T07:30:00.000Z",
                false
            ]),
            json!([
                "Same UID, no override",
                "2026-04-03T09:00:00.000Z",
                "2026-04-03T09:00:00.000Z",
                false
            ]),
        ]
    );
}

#[tokio::test]
async fn unreadable_files_are_400s_naming_the_line_and_leave_nothing_behind() {
    let app = spawn_app().await;
    let user = app.sign_up("errors@example.com").await;
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "",
            Vec::new(),
            400,
            "Request body must be an iCalendar file...",
        ),
        (
            "",
            b" \r\n".to_vec(),
            400,
            "Request body must be an iCalendar file...",
        ),
        (
            "",
            fixture("truncated.ics"),
            400,
            "That file isn't valid iCalendar data (line 7: the file ends before END:VEVENT (BEGIN at line 4); it looks truncated).",
        ),
        (
            "",
            fixture("bad-date.ics"),
            400,
            "That file isn't valid iCalendar data (line 7: DTSTART is not a date or date-time).",
        ),
        (
            "",
            b"<html>not a calendar</html>".to_vec(),
            400,
            "That file isn't valid iCalendar data (line 1: no BEGIN:VCALENDAR or BEGIN:VEVENT found).",
        ),
        (
            "",
            "BEGIN:VEVENT\nEND:VEVENT\n".repeat(10_001).into_bytes(),
            400,
            "An iCalendar import may contain at most 10,000 events.",
        ),
        (
            "?color=red",
            fixture("team.ics"),
            400,
            "color must be a hex colour such as #7a9e7e.",
        ),
        (
            "?provider=google",
            fixture("team.ics"),
            400,
            "Calendar destination requires both provider and accountId.",
        ),
    ];
    for (query, body, status, message) in cases {
        let response = import(&app, &user, query, body).await;
        assert_eq!(response.status().as_u16(), status, "{message}");
        let error: Value = response.json().await.expect("JSON");
        assert_eq!(error["error"], message);
        assert!(error["requestId"].is_string());
    }
    let too_big = vec![b' '; 10 * 1024 * 1024 + 1];
    assert_eq!(
        import(&app, &user, "", too_big).await.status(),
        StatusCode::PAYLOAD_TOO_LARGE
    );
    let anonymous = app
        .client
        .post(app.url("/api/v1/calendars/import"))
        .body(fixture("team.ics"))
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    let calendars: Value = app.get_json_as(&user, "/api/v1/calendars").await;
    assert_eq!(
        calendars.as_array().expect("list").len(),
        1,
        "only the personal calendar"
    );
    assert_eq!(app.read_events(&user, "").await["events"], json!([]));
}

#[tokio::test]
async fn exports_are_for_members_and_follow_rfc_5545() {
    let app = spawn_app().await;
    let owner = app.sign_up("exporter@example.com").await;
    let outsider = app.sign_up("outsider@example.com").await;
    set_timezone(&app, &owner, "Europe/Berlin").await;
    let answer = imported(
        &app,
        &owner,
        "?name=Team%20%E2%80%93%20Caf%C3%A9",
        fixture("team.ics"),
    )
    .await;
    let id = answer["id"].as_str().expect("id");

    let denied = export(&app, &outsider, id).await;
    assert_eq!(denied.status(), StatusCode::FORBIDDEN);
    let error: Value = denied.json().await.expect("JSON");
    assert_eq!(error["error"], "You can't access this calendar.");
    assert_eq!(
        export(&app, &owner, "not-a-uuid").await.status(),
        StatusCode::BAD_REQUEST
    );
    let unknown = uuid::Uuid::new_v4().to_string();
    assert_eq!(
        export(&app, &owner, &unknown).await.status(),
        StatusCode::FORBIDDEN
    );

    let invite = app.create_invite(&owner, id, None).await;
    let joined = app
        .join(&outsider, id, invite["id"].as_str().expect("token"))
        .await;
    assert!(joined.status().is_success());
    let response = export(&app, &outsider, id).await;
    assert_eq!(response.status(), StatusCode::OK, "any member, viewers too");
    assert_eq!(
        response.headers()["content-type"],
        "text/calendar; charset=utf-8"
    );
    assert_eq!(
        response.headers()["content-disposition"],
        "attachment; filename=\"Team_Caf_.ics\""
    );

    let text = exported(&app, &owner, id).await;
    assert!(text.starts_with("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:"));
    assert!(text.ends_with("END:VCALENDAR\r\n"));
    assert!(
        !text.replace("\r\n", "").contains('\n'),
        "CRLF line ends only"
    );
    for line in text.split("\r\n") {
        assert!(line.len() <= 75, "folded at 75 octets: {line}");
    }
    let unfolded = text.replace("\r\n ", "");
    let lines: Vec<&str> = unfolded.split("\r\n").collect();
    let events = events_in(&app, &owner, id).await;
    for event in &events {
        let uid = format!("UID:{}", event["id"].as_str().expect("id"));
        assert!(lines.contains(&uid.as_str()), "UID is the event id");
    }
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("DTSTAMP:")).count(),
        5
    );
    assert_eq!(
        lines.iter().filter(|l| **l == "SEQUENCE:1").count(),
        5,
        "the revision"
    );
    assert!(lines.contains(&"STATUS:CANCELLED"));
    assert!(lines.contains(&"DTSTART;VALUE=DATE:20260310"));
    assert!(
        lines.contains(&"DTEND;VALUE=DATE:20260313"),
        "DTEND is exclusive"
    );
    assert!(lines.contains(&"X-WR-CALNAME:Team – Café"));
    // The recurring event is written on the exporter's wall clock, with that VTIMEZONE.
    assert!(lines.contains(&"DTSTART;TZID=Europe/Berlin:20260105T090000"));
    let tzids: std::collections::BTreeSet<&str> = lines
        .iter()
        .filter_map(|l| {
            l.split_once(";TZID=")
                .map(|(_, rest)| rest.split([':', ';']).next().unwrap_or_default())
        })
        .collect();
    for tzid in tzids {
        assert!(
            lines.contains(&format!("TZID:{tzid}").as_str()),
            "VTIMEZONE for {tzid}"
        );
    }
    assert_eq!(lines.iter().filter(|l| **l == "BEGIN:VTIMEZONE").count(), 1);
}
