//! Every path that stores an event holds it to the same rules (times in the years 1 to 9999,
//! start not after end), and no stored row can break another member's read: the boundary
//! values round-trip through import, link and every member's full and delta reads; values
//! outside them are refused by import and the events API alike; a row written before the
//! rules existed is left out of reads rather than failing them, and the migration that
//! repaired such rows moves them into range.

use chrono::{DateTime, TimeZone, Utc};
use entities::events;
use reqwest::{Method, StatusCode};
use sea_orm::EntityTrait;
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser, event_body, spawn_app};
use crate::support::ics::{import, imported};

fn calendar_file(events: &[(&str, &str)]) -> Vec<u8> {
    let mut text = String::from("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n");
    for (n, (start, end)) in events.iter().enumerate() {
        text.push_str(&format!(
            "BEGIN:VEVENT\r\nUID:edge-{n}\r\nSUMMARY:Edge {n}\r\n{start}\r\n{end}\r\nEND:VEVENT\r\n"
        ));
    }
    text.push_str("END:VCALENDAR\r\n");
    text.into_bytes()
}

/// A shared calendar of `owner` that `member` has joined (as an editor); its id.
async fn shared_with(app: &TestApp, owner: &TestUser, member: &TestUser) -> String {
    let calendar = app.create_calendar(owner, "Shared").await;
    let id = calendar["id"].as_str().expect("id").to_owned();
    app.join_with_invite(owner, &id, member).await;
    assert_eq!(
        app.set_role(owner, &id, &member.id, "editor")
            .await
            .status(),
        StatusCode::OK
    );
    id
}

#[tokio::test]
async fn boundary_times_import_link_and_read_back_for_every_member() {
    let app = spawn_app().await;
    let owner = app.sign_up("edges@example.com").await;
    let member = app.sign_up("member@example.com").await;
    let shared = shared_with(&app, &owner, &member).await;
    let before = app.read_events(&member, "").await;
    let since = before["serverTime"]
        .as_str()
        .expect("serverTime")
        .to_owned();

    let answer = imported(
        &app,
        &owner,
        "",
        calendar_file(&[
            ("DTSTART:00010101T000000Z", "DTEND:00010101T010000Z"),
            ("DTSTART:99991231T220000Z", "DURATION:PT1H59M59S"),
            // All day on the last day (its exclusive DTEND would be in the year 10000).
            ("DTSTART;VALUE=DATE:99991231", "TRANSP:TRANSPARENT"),
        ]),
    )
    .await;
    let imported_calendar = answer["id"].as_str().expect("id").to_owned();
    let events = app.read_events(&owner, "").await;
    let mine: Vec<&Value> = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["calendars"][0] == imported_calendar.as_str())
        .collect();
    assert_eq!(mine.len(), 3);
    // Link each into the shared calendar, and create the API's own boundary event there.
    for event in &mine {
        let id = event["id"].as_str().expect("id");
        let (status, _) = app
            .call(
                Method::POST,
                &format!("/api/v1/events/{id}/link"),
                &owner,
                Some(&json!({ "calendarID": shared })),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    let mut widest = event_body(&[&shared], "Widest", 9);
    widest["start"] = json!("0001-01-01T00:00:00.000Z");
    widest["end"] = json!("9999-12-31T23:59:59.999Z");
    app.create_event(&owner, &widest).await;

    for query in [String::new(), format!("?since={since}")] {
        let read = app.read_events(&member, &query).await;
        let mut times: Vec<(String, String)> = read["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| {
                (
                    e["start"].as_str().expect("start").to_owned(),
                    e["end"].as_str().expect("end").to_owned(),
                )
            })
            .collect();
        times.sort();
        assert_eq!(
            times,
            [
                ("0001-01-01T00:00:00.000Z", "0001-01-01T01:00:00.000Z"),
                ("0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"),
                ("9999-12-31T00:00:00.000Z", "9999-12-31T00:00:00.000Z"),
                ("9999-12-31T22:00:00.000Z", "9999-12-31T23:59:59.000Z"),
            ]
            .map(|(start, end)| (start.to_owned(), end.to_owned())),
            "{query}"
        );
    }
}

#[tokio::test]
async fn times_outside_the_years_1_to_9999_are_refused_by_import_and_the_api() {
    let app = spawn_app().await;
    let user = app.sign_up("outside@example.com").await;
    let files = [
        // Ends in the year 10000.
        ("DTSTART:99991231T230000Z", "DURATION:PT2H", 3),
        // A date in the year 0.
        (
            "DTSTART;VALUE=DATE:00000101",
            "DTEND;VALUE=DATE:00000102",
            3,
        ),
        ("DTSTART:00000101T000000Z", "DTEND:00010101T000000Z", 3),
    ];
    for (start, end, line) in files {
        let response = import(&app, &user, "", calendar_file(&[(start, end)])).await;
        let status = response.status();
        let answer: Value = response.json().await.expect("JSON");
        assert_eq!(status, StatusCode::BAD_REQUEST, "{start} {end}: {answer}");
        let message = answer["error"].as_str().expect("message");
        assert!(
            message.contains(&format!("line {line}")) && message.contains("years 1 to 9999"),
            "{message}"
        );
    }
    let calendars = app.get_json_as(&user, "/api/v1/calendars").await;
    assert_eq!(
        calendars.as_array().expect("list").len(),
        1,
        "nothing stored"
    );
    let home = calendars[0]["id"].as_str().expect("id");
    for (start, end) in [
        ("9999-12-31T23:00:00.000Z", "+010000-01-01T01:00:00.000Z"),
        ("0000-12-31T00:00:00.000Z", "0001-01-01T00:00:00.000Z"),
        ("9999-12-31T23:00:00.000Z", "253402300800000"),
    ] {
        let mut body = event_body(&[home], "Outside", 9);
        body["start"] = json!(start);
        body["end"] = match end.parse::<i64>() {
            Ok(millis) => json!(millis),
            Err(_) => json!(end),
        };
        let response = app.event_request(Method::POST, &user, &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{start} {end}");
    }
}

#[tokio::test]
async fn a_row_no_write_path_produces_is_left_out_of_reads_not_fatal_to_them() {
    let app = spawn_app().await;
    let owner = app.sign_up("legacy@example.com").await;
    let member = app.sign_up("reader@example.com").await;
    let shared = shared_with(&app, &owner, &member).await;
    let before = app.read_events(&member, "").await;
    let since = before["serverTime"]
        .as_str()
        .expect("serverTime")
        .to_owned();
    let good = app
        .create_event(&owner, &event_body(&[&shared], "Fine", 9))
        .await;
    let bad = app
        .create_event(&owner, &event_body(&[&shared], "Stored long ago", 10))
        .await;
    // What an import of `DTSTART:99991231T230000Z` with `DURATION:PT2H` used to store.
    app.overwrite_event(&bad, vec![(events::Column::End, year_10000().into())])
        .await;
    for query in ["".to_owned(), format!("?since={since}")] {
        let read = app.read_events(&member, &query).await;
        let ids: Vec<&str> = read["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["id"].as_str().expect("id"))
            .collect();
        assert_eq!(ids, vec![good["id"].as_str().expect("id")], "{query}");
    }
    // Such a row does not spread: linking it is refused with the rule it breaks.
    let other = app.create_calendar(&owner, "Other").await;
    let (status, answer) = app
        .call(
            Method::POST,
            &format!("/api/v1/events/{}/link", bad["id"].as_str().expect("id")),
            &owner,
            Some(&json!({ "calendarID": other["id"] })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .expect("message")
            .contains("years 1 to 9999")
    );
}

/// What an import of `DTSTART:99991231T230000Z` with `DURATION:PT2H` used to store.
fn year_10000() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(10_000, 1, 1, 1, 0, 0)
        .single()
        .expect("instant")
}

#[tokio::test]
async fn the_repair_migration_moves_stored_times_into_range_one_revision_up() {
    use migration::{Migrator, MigratorTrait};
    let mut app = spawn_app().await;
    let owner = app.sign_up("repair@example.com").await;
    let home = app.get_json_as(&owner, "/api/v1/calendars").await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let late = app
        .create_event(&owner, &event_body(&[&home], "Late", 9))
        .await;
    let early = app
        .create_event(&owner, &event_body(&[&home], "Early", 10))
        .await;
    let fine = app
        .create_event(&owner, &event_body(&[&home], "Fine", 11))
        .await;
    app.overwrite_event(&late, vec![(events::Column::End, year_10000().into())])
        .await;
    let year_zero = Utc
        .with_ymd_and_hms(0, 6, 1, 0, 0, 0)
        .single()
        .expect("start");
    app.overwrite_event(&early, vec![(events::Column::Start, year_zero.into())])
        .await;
    let db = app.db_connection().await;
    app.stop_in_place().await.expect("stopped");

    // Run the repair again, as a server that had stored these rows would at its upgrade.
    let migrations: Vec<String> = Migrator::migrations()
        .iter()
        .map(|m| m.name().to_owned())
        .collect();
    let repair = migrations
        .iter()
        .position(|name| name == "m20261124_000013_repair_event_times_out_of_range")
        .expect("the repair migration");
    let since_repair = u32::try_from(migrations.len() - repair).expect("count");
    Migrator::down(&db, Some(since_repair))
        .await
        .expect("back to before the repair");
    Migrator::up(&db, None).await.expect("up");
    let stored = |id: &Value| {
        let id: uuid::Uuid = id["id"].as_str().expect("id").parse().expect("uuid");
        let db = &db;
        async move {
            events::Entity::find_by_id(id)
                .one(db)
                .await
                .expect("read")
                .expect("row")
        }
    };
    let late_row = stored(&late).await;
    assert_eq!(late_row.end.to_rfc3339(), "9999-12-31T23:59:59.999+00:00");
    assert_eq!(late_row.start.to_rfc3339(), "2026-07-23T09:00:00+00:00");
    assert_eq!(late_row.revision, 2);
    let early_row = stored(&early).await;
    assert_eq!(early_row.start.to_rfc3339(), "0001-01-01T00:00:00+00:00");
    assert_eq!(early_row.revision, 2);
    assert!(early_row.updated_at > early_row.created_at);
    assert_eq!(
        stored(&fine).await.revision,
        1,
        "rows in range are untouched"
    );
}
