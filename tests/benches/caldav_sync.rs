//! Benchmark: pulling a CalDAV calendar of 1,000 events from a real Radicale.
//!
//! Starts Radicale (the test suite's harness, `tests/api/support/caldav_servers.rs`: the
//! pinned version from `.ci/needs.sh`, or `$BOWLINE_RADICALE`) and a Bowline server
//! in-process on port 0 with SQLite in a temporary directory, puts 1,000 plain timed events
//! (about 300 bytes each) into one Radicale calendar, and times, from request to answer:
//!
//! - the connect call (`POST /api/v1/users/connections/caldav`: discovery and the initial
//!   import of the 1,000 events), for three users (three accounts on the same calendar);
//! - a sync-now (`GET /api/v1/calendars/google`) after one event was changed on the server;
//! - a sync-now with nothing changed.
//!
//! Run in a release build:
//!
//! ```sh
//! cargo bench --bench caldav_sync
//! ```

#![allow(clippy::expect_used, clippy::unwrap_used)]

#[allow(dead_code)]
#[path = "../api/support/caldav_servers.rs"]
mod caldav_servers;

use std::time::{Duration, Instant};

use bowline::Application;
use bowline::config::{Secret, Settings, TEST_TOML};
use caldav_servers::{CaldavKind, CaldavServer};

const EVENTS: usize = 1_000;
const USERS: usize = 3;
const ROUNDS: usize = 7;
const KEY: &str = "5f2b1c9d8e7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c";

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

/// One plain timed event of about 300 bytes; `version` changes its summary.
fn event(i: usize, version: usize) -> String {
    let day = 1 + (i % 28);
    let month = 1 + (i / 28) % 12;
    let hour = 8 + (i % 9);
    format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Bowline//Benchmark//EN\r\nBEGIN:VEVENT\r\n\
         UID:bench-{i}@bowline.test\r\nDTSTAMP:20260101T000000Z\r\n\
         DTSTART:2026{month:02}{day:02}T{hour:02}0000Z\r\nDTEND:2026{month:02}{day:02}T{hour:02}4500Z\r\n\
         SUMMARY:Meeting {i} about the quarterly plan (v{version})\r\n\
         LOCATION:Conference room 4\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
}

fn median(mut timings: Vec<Duration>) -> Duration {
    timings.sort();
    timings[timings.len() / 2]
}

fn show(timings: &[Duration]) -> String {
    timings
        .iter()
        .map(|t| format!("{:.1}", t.as_secs_f64() * 1000.0))
        .collect::<Vec<_>>()
        .join(", ")
}

async fn run() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = CaldavServer::start(CaldavKind::Radicale).await;
    let calendar = server.make_calendar("bench", "Bench").await;
    let started = Instant::now();
    let mut bytes = 0;
    for i in 0..EVENTS {
        let ics = event(i, 0);
        bytes += ics.len();
        server
            .put_event(&calendar, &format!("bench-{i}.ics"), &ics)
            .await;
    }
    println!(
        "caldav_sync: {EVENTS} events ({} bytes each on average) put into Radicale in {:.1} s",
        bytes / EVENTS,
        started.elapsed().as_secs_f64()
    );

    let dir = tempfile::tempdir().expect("temporary directory");
    let mut settings =
        Settings::load_with(&[("test.toml", TEST_TOML)], &|_| None).expect("settings");
    settings.storage.data_dir = dir.path().to_path_buf();
    settings.storage.database_url = None;
    settings.caldav.enc_key = Some(Secret::new(KEY));
    settings.caldav.sync_interval_ms = 0;
    let app = Application::builder(settings)
        .build()
        .await
        .expect("server starts");
    let base = format!("http://{}", app.http_addr());
    let ctx = app.ctx().clone();
    let bowline = tokio::spawn(app.run_until_stopped());
    let client = reqwest::Client::new();

    let mut tokens = Vec::new();
    for user in 0..USERS {
        let signed_up: serde_json::Value = client
            .post(format!("{base}/api/auth/sign-up/email"))
            .header("origin", &base)
            .json(&serde_json::json!({
                "email": format!("bench{user}@example.com"),
                "password": "correct horse battery staple",
                "name": "Bench"
            }))
            .send()
            .await
            .expect("sign up")
            .json()
            .await
            .expect("JSON");
        tokens.push(signed_up["token"].as_str().expect("token").to_owned());
    }

    // (a) Connect: discovery and the initial import of 1,000 events, one account per user.
    let mut connects = Vec::new();
    for token in &tokens {
        let started = Instant::now();
        let response = client
            .post(format!("{base}/api/v1/users/connections/caldav"))
            .bearer_auth(token)
            .json(&serde_json::json!({
                "serverUrl": server.base_url,
                "username": server.username,
                "password": server.password,
            }))
            .send()
            .await
            .expect("connect");
        let status = response.status();
        let text = response.text().await.expect("body");
        let elapsed = started.elapsed();
        assert_eq!(status, 200, "{text}");
        connects.push(elapsed);
    }
    let events: serde_json::Value = client
        .get(format!("{base}/api/v1/events"))
        .bearer_auth(&tokens[0])
        .send()
        .await
        .expect("events")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        events["events"].as_array().expect("events").len(),
        EVENTS,
        "every event imported"
    );

    let sync_now = |token: String| {
        let client = client.clone();
        let base = base.clone();
        async move {
            let started = Instant::now();
            let response = client
                .get(format!("{base}/api/v1/calendars/google"))
                .bearer_auth(&token)
                .send()
                .await
                .expect("sync now");
            let status = response.status();
            let text = response.text().await.expect("body");
            let elapsed = started.elapsed();
            assert_eq!(status, 200, "{text}");
            elapsed
        }
    };

    // (b) Sync-now after one remote change; (c) sync-now with nothing changed.
    let mut changed = Vec::new();
    let mut unchanged = Vec::new();
    for round in 0..ROUNDS {
        let i = (round * 137) % EVENTS;
        server
            .put_event(&calendar, &format!("bench-{i}.ics"), &event(i, round + 1))
            .await;
        changed.push(sync_now(tokens[0].clone()).await);
        unchanged.push(sync_now(tokens[0].clone()).await);
    }
    let events: serde_json::Value = client
        .get(format!("{base}/api/v1/events"))
        .bearer_auth(&tokens[0])
        .send()
        .await
        .expect("events")
        .json()
        .await
        .expect("JSON");
    let last = (ROUNDS - 1) * 137 % EVENTS;
    assert!(
        events["events"]
            .as_array()
            .expect("events")
            .iter()
            .any(|e| e["title"]
                == format!("Meeting {last} about the quarterly plan (v{ROUNDS})").as_str()),
        "the last change arrived"
    );

    // For attribution: Radicale alone answering the calendar listing every pull starts with
    // (PROPFIND Depth 1 of the calendar home with the sync token).
    let propfind = r#"<?xml version="1.0" encoding="utf-8"?>
<d:propfind xmlns:d="DAV:" xmlns:cs="http://calendarserver.org/ns/"><d:prop><d:resourcetype/><d:displayname/><d:sync-token/><cs:getctag/></d:prop></d:propfind>"#;
    let mut listings = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let response = client
            .request(
                reqwest::Method::from_bytes(b"PROPFIND").unwrap(),
                server.calendar_home(),
            )
            .basic_auth(&server.username, Some(&server.password))
            .header("Depth", "1")
            .header("Content-Type", "application/xml; charset=utf-8")
            .body(propfind)
            .send()
            .await
            .expect("PROPFIND");
        assert_eq!(response.status(), 207);
        response.text().await.expect("body");
        listings.push(started.elapsed());
    }

    println!(
        "  (a) connect, discovery + import of {EVENTS} events (ms): {}",
        show(&connects)
    );
    println!("  (b) sync-now, one remote change (ms): {}", show(&changed));
    println!("  (c) sync-now, nothing changed (ms): {}", show(&unchanged));
    println!(
        "  Radicale alone, PROPFIND of the calendar home with sync-token (ms): {}",
        show(&listings)
    );
    println!(
        "caldav_sync: connect + import of {EVENTS} events {:.0} ms (median of {USERS}); \
         sync-now with one change {:.1} ms, with none {:.1} ms (medians of {ROUNDS}; SQLite, Radicale)",
        median(connects).as_secs_f64() * 1000.0,
        median(changed).as_secs_f64() * 1000.0,
        median(unchanged).as_secs_f64() * 1000.0,
    );
    ctx.shutdown.trigger();
    let _ = bowline.await;
}
