//! CalDAV mirrors against real servers (Radicale and Xandikos, started per test): connect
//! with discovery and a strict initial import, refusal of wrong credentials with nothing
//! stored, pulls that bring remote changes with exactly one `external_sync` frame, mirror
//! and account disconnection.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::caldav::{CALDAV_KEY, calendars, connect_caldav, with_caldav};
use crate::helpers::{TestApp, TestUser, spawn_app_with};
use crate::support::caldav_servers::{CaldavKind, CaldavServer};

const TIMED: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:timed-1\r\nDTSTAMP:20260101T000000Z\r\nDTSTART;TZID=Europe/Berlin:20261203T090000\r\nDTEND;TZID=Europe/Berlin:20261203T100000\r\nSUMMARY:Planning\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
const ALL_DAY: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:allday-1\r\nDTSTAMP:20260101T000000Z\r\nDTSTART;VALUE=DATE:20261210\r\nDTEND;VALUE=DATE:20261212\r\nSUMMARY:Offsite\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
const SERIES: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:series-1\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20261201T080000Z\r\nDTEND:20261201T083000Z\r\nRRULE:FREQ=DAILY;COUNT=5\r\nSUMMARY:Standup\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:series-1\r\nDTSTAMP:20260101T000000Z\r\nRECURRENCE-ID:20261203T080000Z\r\nDTSTART:20261203T100000Z\r\nDTEND:20261203T103000Z\r\nSUMMARY:Standup (moved)\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
const LATER: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:later-1\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20261215T120000Z\r\nDTEND:20261215T130000Z\r\nSUMMARY:Added on the server\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

async fn app() -> TestApp {
    spawn_app_with(with_caldav).await
}

async fn titles_in(app: &TestApp, user: &TestUser, calendar: &str) -> Vec<String> {
    let (status, body) = app.call(Method::GET, "/api/v1/events", user, None).await;
    assert_eq!(status, StatusCode::OK);
    let mut titles: Vec<String> = body["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|event| {
            event["calendars"]
                .as_array()
                .is_some_and(|c| c.contains(&json!(calendar)))
        })
        .map(|event| event["title"].as_str().unwrap_or_default().to_owned())
        .collect();
    titles.sort();
    titles
}

async fn sync_now(app: &TestApp, user: &TestUser) {
    let response = app
        .as_user(Method::GET, "/api/v1/calendars/google", user)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
}

async fn connects_imports_pulls_and_disconnects(kind: CaldavKind) {
    let server = CaldavServer::start(kind).await;
    let work = server.make_calendar("work", "Work").await;
    server.put_event(&work, "timed.ics", TIMED).await;
    server.put_event(&work, "allday.ics", ALL_DAY).await;
    server.put_event(&work, "series.ics", SERIES).await;

    let app = app().await;
    let info: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
    assert_eq!(info["syncProviders"], json!(["caldav"]));
    let ana = app.sign_up("ana@example.com").await;

    let (status, body) = connect_caldav(&app, &ana, &server, &server.password.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, accounts) = app
        .call(Method::GET, "/api/v1/users/connections/caldav", &ana, None)
        .await;
    let accounts = accounts["accounts"].as_array().expect("accounts").clone();
    assert_eq!(accounts.len(), 1);
    assert_eq!(accounts[0]["serverUrl"], json!(server.base_url));
    assert_eq!(accounts[0]["username"], json!(server.username));
    let account_id = accounts[0]["id"].as_str().expect("id").to_owned();

    let mirror = calendars(&app, &ana)
        .await
        .into_iter()
        .find(|calendar| calendar["name"] == "Work")
        .expect("the remote calendar is mirrored");
    let mirror_id = mirror["id"].as_str().expect("id").to_owned();
    assert_eq!(mirror["role"], "owner");
    assert_eq!(
        titles_in(&app, &ana, &mirror_id).await,
        ["Offsite", "Planning", "Standup", "Standup (moved)"],
        "timed, all-day, a series and its edited occurrence"
    );
    let (_, events) = app.call(Method::GET, "/api/v1/events", &ana, None).await;
    let events = events["events"].as_array().expect("events").clone();
    let planning = events
        .iter()
        .find(|e| e["title"] == "Planning")
        .expect("planning");
    assert_eq!(
        planning["start"], "2026-12-03T08:00:00.000Z",
        "Berlin 09:00 is 08:00 UTC"
    );
    let offsite = events
        .iter()
        .find(|e| e["title"] == "Offsite")
        .expect("offsite");
    assert_eq!(offsite["isAllDay"], true);
    let standup = events
        .iter()
        .find(|e| e["title"] == "Standup")
        .expect("series");
    assert!(
        standup["recurrence"]
            .as_str()
            .is_some_and(|r| r.contains("FREQ=DAILY") && r.contains("EXDATE")),
        "the moved occurrence is excluded from the series: {standup}"
    );

    // A change made on the server arrives with the next pull and one frame.
    let mut stream = app.stream(&ana).await;
    server.put_event(&work, "later.ics", LATER).await;
    sync_now(&app, &ana).await;
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "external_sync");
    assert_eq!(frame["payload"]["calendars"], json!([mirror_id]));
    assert!(
        titles_in(&app, &ana, &mirror_id)
            .await
            .contains(&"Added on the server".to_owned())
    );
    // A pull that changes nothing sends nothing: the next frame is the one a later change causes.
    sync_now(&app, &ana).await;
    server.delete(&format!("{work}later.ics")).await;
    sync_now(&app, &ana).await;
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "external_sync");
    assert!(
        !titles_in(&app, &ana, &mirror_id)
            .await
            .contains(&"Added on the server".to_owned())
    );

    // Disconnecting the mirror deletes it locally and it does not come back.
    let (status, body) = app
        .call(
            Method::POST,
            "/api/v1/users/connections/calendars/disconnect",
            &ana,
            Some(&json!({ "calendarId": mirror_id })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({ "id": mirror_id }));
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "calendar_removed");
    sync_now(&app, &ana).await;
    assert!(
        calendars(&app, &ana)
            .await
            .iter()
            .all(|c| c["id"] != json!(mirror_id) && c["name"] != "Work")
    );

    // Another user's disconnect of the account, or of no account at all, is a 404 and
    // changes nothing.
    let bob = app.sign_up("bob@example.com").await;
    for (user, account) in [
        (&bob, account_id.to_string()),
        (&ana, uuid::Uuid::new_v4().to_string()),
        (&ana, "not-an-id".to_owned()),
    ] {
        let (status, body) = app
            .call(
                Method::POST,
                "/api/v1/users/connections/disconnect",
                user,
                Some(&json!({ "provider": "caldav", "accountId": account })),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{account}: {body}");
        assert_eq!(body["error"], "Account not found...");
    }
    let (_, accounts) = app
        .call(Method::GET, "/api/v1/users/connections/caldav", &ana, None)
        .await;
    assert_eq!(accounts["accounts"].as_array().expect("accounts").len(), 1);

    // Removing the account removes its credentials and every mirror.
    let response = app
        .as_user(
            Method::DELETE,
            &format!("/api/v1/users/connections/caldav?accountId={account_id}"),
            &ana,
        )
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    let (_, accounts) = app
        .call(Method::GET, "/api/v1/users/connections/caldav", &ana, None)
        .await;
    assert_eq!(accounts, json!({ "accounts": [] }));
    assert!(
        calendars(&app, &ana)
            .await
            .iter()
            .all(|c| c["isDefault"] == true)
    );
    tokio::time::timeout(Duration::from_secs(10), app.stop())
        .await
        .ok();
}

#[tokio::test]
async fn radicale_connects_imports_pulls_and_disconnects() {
    connects_imports_pulls_and_disconnects(CaldavKind::Radicale).await;
}

#[tokio::test]
async fn xandikos_connects_imports_pulls_and_disconnects() {
    connects_imports_pulls_and_disconnects(CaldavKind::Xandikos).await;
}

#[tokio::test]
async fn wrong_credentials_and_wrong_urls_are_refused_with_nothing_stored() {
    let server = CaldavServer::start(CaldavKind::Radicale).await;
    server.make_calendar("work", "Work").await;
    let app = app().await;
    let ana = app.sign_up("ana@example.com").await;
    let before = calendars(&app, &ana).await.len();

    let (status, body) = connect_caldav(&app, &ana, &server, "not-the-password").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["error"],
        "Could not connect to CalDAV server — check URL and credentials. (iCloud requires an app-specific password.)"
    );
    let response = app
        .as_user(Method::POST, "/api/v1/users/connections/caldav", &ana)
        .json(
            &json!({"serverUrl": "http://127.0.0.1:9/nothing/", "username": "a", "password": "b"}),
        )
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let (status, _) = app
        .call(
            Method::POST,
            "/api/v1/users/connections/caldav",
            &ana,
            Some(&json!({"serverUrl": ""})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (_, accounts) = app
        .call(Method::GET, "/api/v1/users/connections/caldav", &ana, None)
        .await;
    assert_eq!(accounts, json!({ "accounts": [] }));
    assert_eq!(calendars(&app, &ana).await.len(), before);
    let metrics = app.metrics_text().await;
    assert!(
        metrics
            .contains("svc_external_sync_failures_total{provider=\"caldav\",stage=\"discovery\"}"),
        "discovery failures are counted"
    );
}

#[tokio::test]
async fn without_an_encryption_key_caldav_is_not_offered() {
    let app = spawn_app_with(|_| {}).await;
    let info: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
    assert_eq!(info["syncProviders"], json!([]));
    let ana = app.sign_up("ana@example.com").await;
    let (status, _) = app
        .call(
            Method::POST,
            "/api/v1/users/connections/caldav",
            &ana,
            Some(&json!({"serverUrl": "https://example.com/", "username": "a", "password": "b"})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_server_that_hangs_costs_counted_failures_and_skipped_ticks_not_local_answers() {
    const TIMEOUT: Duration = Duration::from_secs(3);
    let server = CaldavServer::start(CaldavKind::Radicale).await;
    let work = server.make_calendar("work", "Work").await;
    let app = spawn_app_with(|s| {
        s.caldav.enc_key = Some(bowline::config::Secret::new(CALDAV_KEY));
        s.caldav.sync_interval_ms = 100;
        // Long enough for Radicale to answer the connection's discovery on a loaded
        // machine (700 ms was not, under a parallel build), far longer than a local answer.
        s.caldav.request_timeout_ms = TIMEOUT.as_millis() as u64;
    })
    .await;
    let ana = app.sign_up("ana@example.com").await;
    let (status, body) = connect_caldav(&app, &ana, &server, &server.password.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    server.pause();
    // Every pull now waits for its timeout; ticks that fire meanwhile are skipped.
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let text = app.metrics_text().await;
            let skipped = crate::helpers::sample(
                &text,
                "svc_scheduled_task_skips_total{task=\"external_sync\"}",
            )
            .unwrap_or(0.0);
            let failed = crate::helpers::sample(
                &text,
                "svc_external_sync_failures_total{provider=\"caldav\",stage=\"account\"}",
            )
            .unwrap_or(0.0);
            if skipped >= 1.0 && failed >= 1.0 {
                break;
            }
            tick.tick().await;
        }
    })
    .await
    .expect("skipped ticks and failed pulls are counted");
    // Local requests do not wait for the server.
    let started = std::time::Instant::now();
    assert_eq!(
        calendars(&app, &ana)
            .await
            .iter()
            .filter(|c| c["name"] == "Work")
            .count(),
        1
    );
    assert!(
        started.elapsed() < TIMEOUT,
        "answered without waiting for the server"
    );
    let response = app
        .as_user(Method::GET, "/api/v1/calendars/google", &ana)
        .send()
        .await
        .expect("request");
    assert!(
        response.status().is_client_error(),
        "a failed sync is reported, not a 5xx"
    );

    // Back: the next pull brings what changed.
    server.resume();
    let mut stream = app.stream(&ana).await;
    server.put_event(&work, "later.ics", LATER).await;
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "external_sync");
}

#[tokio::test]
async fn without_private_hosts_allowed_a_loopback_server_is_refused() {
    let server = CaldavServer::start(CaldavKind::Radicale).await;
    server.make_calendar("work", "Work").await;
    let app = spawn_app_with(|s| {
        s.caldav.enc_key = Some(bowline::config::Secret::new(CALDAV_KEY));
        s.federation.allow_private_hosts = false;
    })
    .await;
    let ana = app.sign_up("ana@example.com").await;
    let (status, body) = connect_caldav(&app, &ana, &server, &server.password.clone()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("Could not connect to CalDAV server"))
    );
    let (_, accounts) = app
        .call(Method::GET, "/api/v1/users/connections/caldav", &ana, None)
        .await;
    assert_eq!(accounts, json!({ "accounts": [] }));
}

#[tokio::test]
async fn floating_times_are_read_in_the_account_owners_zone() {
    let server = CaldavServer::start(CaldavKind::Radicale).await;
    let work = server.make_calendar("work", "Work").await;
    let floating = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:floating-1\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20261203T090000\r\nDTEND:20261203T100000\r\nSUMMARY:Floating\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    server.put_event(&work, "floating.ics", floating).await;
    let app = app().await;
    let ana = app.sign_up("ana@example.com").await;
    crate::support::ics::set_timezone(&app, &ana, "Europe/Berlin").await;
    let (status, body) = connect_caldav(&app, &ana, &server, &server.password.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, events) = app.call(Method::GET, "/api/v1/events", &ana, None).await;
    let event = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["title"] == "Floating")
        .expect("imported")
        .clone();
    assert_eq!(
        event["start"], "2026-12-03T08:00:00.000Z",
        "09:00 in Berlin"
    );
}
