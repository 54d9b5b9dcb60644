//! Recurrence rules cannot stall the server: rules that would repeat without bound are
//! refused on every write path with a clear 400, and expanding what is stored (rows written
//! before those rules, or rules that are merely expensive) is bounded in work and runs off
//! the async runtime, so many public previews at once leave every other route answering.

use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use entities::events;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser, event_body, spawn_app};
use crate::support::ics::import;

/// An event body starting at `start` (ISO), lasting `minutes`, with `rule`.
fn recurring(calendar: &str, start: &str, minutes: i64, rule: &str) -> Value {
    let start_at = chrono::DateTime::parse_from_rfc3339(start).expect("start");
    let end = start_at + chrono::Duration::minutes(minutes);
    let mut body = event_body(&[calendar], "Repeats", 9);
    body["start"] = json!(start);
    body["end"] = json!(end.to_rfc3339());
    body["recurrence"] = json!(rule);
    body
}

#[tokio::test]
async fn rules_that_repeat_without_bound_are_refused_on_create_update_and_import() {
    let app = spawn_app().await;
    let user = app.sign_up("rules@example.com").await;
    let calendar = app.create_calendar(&user, "Rules").await;
    let calendar = calendar["id"].as_str().expect("id");
    let exdates: Vec<String> = (0..1_001)
        .map(|n| format!("2026{:02}{:02}T090000Z", 1 + n % 12, 1 + n % 28))
        .collect();
    let many_exdates = format!("RRULE:FREQ=DAILY\nEXDATE:{}", exdates.join(","));
    let refused = [
        (
            "0001-01-01T00:00:00Z",
            0,
            "FREQ=SECONDLY",
            "at most 1440 times a day",
        ),
        (
            "2026-07-01T09:00:00Z",
            60,
            "FREQ=DAILY;INTERVAL=0",
            "INTERVAL",
        ),
        (
            "2026-07-01T09:00:00Z",
            60,
            "FREQ=DAILY;COUNT=100000",
            "COUNT",
        ),
        (
            "2026-07-01T09:00:00Z",
            120,
            "FREQ=HOURLY",
            "longer than it takes to repeat",
        ),
        (
            "2026-07-01T09:00:00Z",
            60,
            many_exdates.as_str(),
            "RDATE and EXDATE",
        ),
        (
            "2026-07-01T09:00:00Z",
            60,
            "FREQ=FORTNIGHTLY",
            "Bowline can read",
        ),
        // Found by the fuzz target: the rrule crate panicked slicing inside a character.
        (
            "2026-07-01T09:00:00Z",
            60,
            "FREQ=WEEKLY;BYDAY=M\u{b1}\u{4e8}\u{b1},FR;INTERVAL=2",
            "Bowline can read",
        ),
        // Found by the fuzz target: a third instance in months that hold one, which the
        // rrule crate looked for over 100,000 months.
        (
            "0751-05-11T02:31:16Z",
            60,
            "FREQ=MONTHLY;BYSETPOS=3;COUNT=20",
            "selects no instance",
        ),
        (
            "2026-07-01T09:00:00Z",
            60,
            "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
            "selects no instance",
        ),
        (
            "2026-07-01T09:00:00Z",
            60,
            "RRULE:FREQ=DAILY\nRRULE:FREQ=WEEKLY\nRRULE:FREQ=MONTHLY\nRRULE:FREQ=YEARLY\nRRULE:FREQ=DAILY;INTERVAL=2",
            "at most 4 RRULEs",
        ),
    ];
    for (start, minutes, rule, expected) in refused {
        let body = recurring(calendar, start, minutes, rule);
        let response = app.event_request(Method::POST, &user, &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{rule:.60}");
        let answer: Value = response.json().await.expect("JSON");
        let message = answer["error"].as_str().expect("message");
        assert!(message.contains(expected), "{rule:.60}: {message}");
        assert!(!message.contains(rule), "the rule is not echoed: {message}");
    }
    // The same rules on an update.
    let created = app
        .create_event(
            &user,
            &recurring(calendar, "2026-07-01T09:00:00Z", 60, "FREQ=WEEKLY"),
        )
        .await;
    let mut update = created.clone();
    update["recurrence"] = json!("FREQ=MINUTELY");
    let response = app.event_request(Method::PUT, &user, &update).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let events = app.read_events(&user, "").await;
    assert_eq!(
        events["events"][0]["recurrence"], "FREQ=WEEKLY",
        "unchanged"
    );

    // And in a file: every second since 1601.
    let file = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:a\r\n\
                DTSTART:16010101T000000Z\r\nRRULE:FREQ=SECONDLY\r\nSUMMARY:Tick\r\n\
                END:VEVENT\r\nEND:VCALENDAR\r\n";
    let response = import(&app, &user, "", file.as_bytes().to_vec()).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let answer: Value = response.json().await.expect("JSON");
    let message = answer["error"].as_str().expect("message");
    assert!(
        message.contains("line 6"),
        "names the RRULE's line: {message}"
    );
    assert!(message.contains("times a day"), "{message}");
}

#[tokio::test]
async fn sane_rules_far_from_their_start_still_expand_in_previews() {
    let app = spawn_app().await;
    let owner = app.sign_up("far@example.com").await;
    let calendar = app.create_calendar(&owner, "Far").await;
    let calendar = calendar["id"].as_str().expect("id");
    // Every day at 09:00 since the year 1, an hour long.
    let daily = app
        .create_event(
            &owner,
            &recurring(calendar, "0001-01-01T09:00:00Z", 60, "FREQ=DAILY"),
        )
        .await;
    let token = invite_token(&app, &owner, calendar).await;
    let preview = preview(&app, &token).await;
    let events = preview["events"].as_array().expect("events");
    assert!(
        (29..=31).contains(&events.len()),
        "one a day: {}",
        events.len()
    );
    let prefix = format!("{}_", daily["id"].as_str().expect("id"));
    for event in events {
        assert!(event["id"].as_str().expect("id").starts_with(&prefix));
        assert!(
            event["start"]
                .as_str()
                .expect("start")
                .ends_with("T09:00:00.000Z"),
            "{event}"
        );
    }
}

#[tokio::test]
async fn many_previews_of_hostile_stored_rules_leave_the_server_answering() {
    let app = spawn_app().await;
    let owner = app.sign_up("hostile@example.com").await;
    // Rules no write path accepts today, stored as an older server could have: every
    // second since the year 1, a count of four billion seconds, a yearly rule firing every
    // second of January, and a weekly rule on an event lasting a thousand years.
    let hostile = [
        ("FREQ=SECONDLY", Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0), 0),
        (
            "FREQ=SECONDLY;COUNT=4000000000",
            Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0),
            0,
        ),
        (
            "FREQ=YEARLY;BYMONTH=1;BYHOUR=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23;\
             BYMINUTE=0,5,10,15,20,25,30,35,40,45,50,55;BYSECOND=0,10,20,30,40,50",
            Utc.with_ymd_and_hms(1601, 1, 1, 0, 0, 0),
            0,
        ),
        (
            "FREQ=WEEKLY",
            Utc.with_ymd_and_hms(1200, 1, 1, 0, 0, 0),
            1_000 * 365,
        ),
    ];
    let mut tokens = Vec::new();
    for n in 0..3 {
        let calendar = app.create_calendar(&owner, &format!("Hostile {n}")).await;
        let calendar = calendar["id"].as_str().expect("id").to_owned();
        for (rule, start, days) in &hostile {
            let created = app
                .create_event(&owner, &event_body(&[&calendar], "Stored long ago", 9))
                .await;
            // Stored as an older server could have accepted it.
            let start = start.single().expect("start");
            let end = start + chrono::Duration::days(*days);
            app.overwrite_event(
                &created,
                vec![
                    (events::Column::Recurrence, (*rule).into()),
                    (events::Column::Start, start.into()),
                    (events::Column::End, end.into()),
                ],
            )
            .await;
        }
        tokens.push(invite_token(&app, &owner, &calendar).await);
    }

    let previews: Vec<_> = (0..12)
        .map(|n| {
            let client = app.client.clone();
            let url = app.url(&format!("/api/v1/calendars/tokens/{}", tokens[n % 3]));
            tokio::spawn(async move { client.get(url).send().await.expect("preview").status() })
        })
        .collect();
    // While they run, the server answers everything else at once.
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let started = Instant::now();
        let ok = tokio::time::timeout(Duration::from_secs(2), app.get("/api/v1/server/ok"))
            .await
            .expect("/server/ok answers while previews expand");
        assert_eq!(ok.status(), StatusCode::OK);
        slowest = slowest.max(started.elapsed());
    }
    println!("while 12 previews expanded, /server/ok took {slowest:?} at worst");
    assert!(
        slowest < Duration::from_secs(1),
        "/server/ok took {slowest:?} at worst"
    );
    for preview in previews {
        let status = tokio::time::timeout(Duration::from_secs(30), preview)
            .await
            .expect("every preview ends")
            .expect("task");
        assert_eq!(status, StatusCode::OK);
    }
}

async fn invite_token(app: &TestApp, owner: &TestUser, calendar: &str) -> String {
    let invite = app.create_invite(owner, calendar, None).await;
    invite["id"].as_str().expect("token").to_owned()
}

async fn preview(app: &TestApp, token: &str) -> Value {
    let response = app.get(&format!("/api/v1/calendars/tokens/{token}")).await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("JSON")
}

#[tokio::test]
async fn a_recurrence_past_the_year_9999_is_refused_on_every_write_path() {
    let app = spawn_app().await;
    let user = app.sign_up("years@example.com").await;
    let calendar = app.create_calendar(&user, "Far").await;
    let calendar = calendar["id"].as_str().expect("id");
    let past = [
        ("9999-12-30T00:00:00Z", 24 * 60, "FREQ=DAILY;COUNT=5"),
        ("9999-12-31T22:00:00Z", 60, "RRULE:FREQ=HOURLY;COUNT=3"),
        (
            "9999-12-31T00:00:00Z",
            60,
            "FREQ=DAILY;UNTIL=99991231T235959Z",
        ),
        (
            "9999-12-01T09:00:00Z",
            180,
            "RRULE:FREQ=WEEKLY\nRDATE:99991231T230000Z",
        ),
        // Leap days only: 600 of them from 8000 run past 9999 (a short walk, so that a
        // loaded machine's debug build stays well inside the check's time).
        (
            "8000-02-29T09:00:00Z",
            60,
            "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;COUNT=600",
        ),
    ];
    for (start, minutes, rule) in past {
        let body = recurring(calendar, start, minutes, rule);
        let response = app.event_request(Method::POST, &user, &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{rule}");
        let answer: Value = response.json().await.expect("JSON");
        assert_eq!(
            answer["error"], "recurrence instances must lie in the years 1 to 9999.",
            "{rule}"
        );
    }
    // Ending on the last day of 9999 is fine; so is a rule that goes on without end.
    for (start, minutes, rule) in [
        ("9999-12-30T00:00:00Z", 24 * 60, "FREQ=DAILY;COUNT=1"),
        ("9999-12-30T00:00:00Z", 24 * 60, "FREQ=DAILY"),
        (
            "2026-07-01T09:00:00Z",
            60,
            "FREQ=MONTHLY;BYDAY=-1FR;COUNT=10000",
        ),
    ] {
        let body = recurring(calendar, start, minutes, rule);
        let response = app.event_request(Method::POST, &user, &body).await;
        assert_eq!(response.status(), StatusCode::CREATED, "{rule}");
    }

    // An update to such a rule.
    let created = app
        .create_event(
            &user,
            &recurring(calendar, "9999-12-30T00:00:00Z", 24 * 60, "FREQ=WEEKLY"),
        )
        .await;
    let mut update = created.clone();
    update["recurrence"] = json!("FREQ=DAILY;COUNT=5");
    let response = app.event_request(Method::PUT, &user, &update).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);

    // The probe's file.
    let file = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:far\r\n\
                DTSTART;VALUE=DATE:99991230\r\nRRULE:FREQ=DAILY;COUNT=5\r\nSUMMARY:Far\r\n\
                END:VEVENT\r\nEND:VCALENDAR\r\n";
    let response = import(&app, &user, "", file.as_bytes().to_vec()).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let answer: Value = response.json().await.expect("JSON");
    let message = answer["error"].as_str().expect("message");
    assert!(message.contains("years 1 to 9999"), "{message}");

    // A file of many long COUNT rules: walking them shares the import's budget, so it is
    // refused in bounded time instead of being walked for minutes.
    let mut many = String::from("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n");
    for n in 0..2_000 {
        many.push_str(&format!(
            "BEGIN:VEVENT\r\nUID:long-{n}\r\nDTSTART:20260701T090000Z\r\n\
             RRULE:FREQ=MONTHLY;BYDAY=-1FR;COUNT=10000\r\nSUMMARY:Long\r\nEND:VEVENT\r\n"
        ));
    }
    many.push_str("END:VCALENDAR\r\n");
    let response = import(&app, &user, "", many.into_bytes()).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let answer: Value = response.json().await.expect("JSON");
    let message = answer["error"].as_str().expect("message");
    assert!(message.contains("more work to check"), "{message}");
    let events = app.read_events(&user, "").await;
    assert!(
        events["events"]
            .as_array()
            .expect("events")
            .iter()
            .all(|event| event["title"] != "Far" && event["title"] != "Long"),
        "nothing of either file was stored"
    );
}
