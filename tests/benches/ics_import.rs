//! Benchmark: importing 10,000 VEVENTs in a body of about 10 MiB over HTTP.
//!
//! Starts a Bowline server in-process on port 0 with SQLite in a temporary directory, signs
//! a user up, generates the file (Berlin times, folded descriptions, every tenth event a
//! weekly series with an EXDATE) and times `POST /api/v1/calendars/import` from request to
//! answer, three times; also times the parse alone. Run in a release build:
//!
//! ```sh
//! cargo bench --bench ics_import
//! ```

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use bowline::Application;
use bowline::config::{Settings, TEST_TOML};

const EVENTS: usize = 10_000;
const LIMIT: usize = 10 * 1024 * 1024;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

/// The benchmark file: just under 10 MiB with 10,000 VEVENTs.
fn body() -> String {
    let mut out = String::from(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Bowline//Benchmark//EN\r\nX-WR-CALNAME:Benchmark\r\n",
    );
    let filler = format!(
        "{}Follow-up notes go to the team channel.",
        "Agenda: review the numbers, agree the plan, note the actions. ".repeat(11)
    );
    for i in 0..EVENTS {
        let day = 1 + (i % 28);
        let month = 1 + (i / 28) % 12;
        let hour = 8 + (i % 9);
        out.push_str("BEGIN:VEVENT\r\n");
        out.push_str(&format!(
            "UID:bench-{i}@bowline.test\r\nDTSTAMP:20260101T000000Z\r\n"
        ));
        out.push_str(&format!(
            "DTSTART;TZID=Europe/Berlin:2026{month:02}{day:02}T{hour:02}0000\r\n\
             DTEND;TZID=Europe/Berlin:2026{month:02}{day:02}T{hour:02}4500\r\n"
        ));
        if i % 10 == 0 {
            out.push_str(&format!(
                "RRULE:FREQ=WEEKLY;COUNT=20\r\nEXDATE;TZID=Europe/Berlin:2026{month:02}{day:02}T{hour:02}0000\r\n"
            ));
        }
        out.push_str(&format!(
            "SUMMARY:Meeting number {i} about the quarterly plan\r\n"
        ));
        out.push_str("LOCATION:Conference room 4\\, second floor\r\n");
        let description = format!("DESCRIPTION:{filler}");
        let mut rest = description.as_str();
        let mut first = true;
        while !rest.is_empty() {
            let take = rest.len().min(if first { 75 } else { 74 });
            if !first {
                out.push(' ');
            }
            out.push_str(&rest[..take]);
            out.push_str("\r\n");
            rest = &rest[take..];
            first = false;
        }
        out.push_str("END:VEVENT\r\n");
    }
    out.push_str("END:VCALENDAR\r\n");
    out
}

async fn run() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let body = body();
    assert!(body.len() <= LIMIT, "body is {} bytes", body.len());
    println!(
        "ics_import: {EVENTS} VEVENTs, {:.2} MiB",
        body.len() as f64 / (1024.0 * 1024.0)
    );

    let started = Instant::now();
    let parsed = bowline::ical::parse_calendar(
        body.as_bytes(),
        &bowline::ical::ImportOptions {
            user_zone: chrono_tz::Tz::UTC,
        },
    )
    .expect("parses");
    assert_eq!(parsed.events.len(), EVENTS);
    println!("  parse only: {:?}", started.elapsed());

    let dir = tempfile::tempdir().expect("temporary directory");
    let mut settings =
        Settings::load_with(&[("test.toml", TEST_TOML)], &|_| None).expect("settings");
    settings.storage.data_dir = dir.path().to_path_buf();
    settings.storage.database_url = None;
    let app = Application::builder(settings)
        .build()
        .await
        .expect("server starts");
    let base = format!("http://{}", app.http_addr());
    let ctx = app.ctx().clone();
    let server = tokio::spawn(app.run_until_stopped());
    let client = reqwest::Client::new();

    let signed_up: serde_json::Value = client
        .post(format!("{base}/api/auth/sign-up/email"))
        .header("origin", &base)
        .json(&serde_json::json!({
            "email": "bench@example.com", "password": "correct horse battery staple", "name": "Bench"
        }))
        .send()
        .await
        .expect("sign up")
        .json()
        .await
        .expect("JSON");
    let token = signed_up["token"].as_str().expect("token").to_owned();

    let mut timings: Vec<Duration> = Vec::new();
    for run in 1..=3 {
        let started = Instant::now();
        let response = client
            .post(format!("{base}/api/v1/calendars/import?name=Bench%20{run}"))
            .bearer_auth(&token)
            .header("content-type", "text/calendar")
            .body(body.clone())
            .send()
            .await
            .expect("import");
        let status = response.status();
        let answer: serde_json::Value = response.json().await.expect("JSON");
        let elapsed = started.elapsed();
        assert_eq!(status, 201, "{answer}");
        assert_eq!(answer["imported"], EVENTS);
        println!("  import over HTTP, run {run}: {elapsed:?}");
        timings.push(elapsed);
    }
    timings.sort();
    println!(
        "ics_import: 10,000 events / {:.2} MiB imported in {:.2} s (median of 3, SQLite)",
        body.len() as f64 / (1024.0 * 1024.0),
        timings[1].as_secs_f64()
    );
    ctx.shutdown.trigger();
    let _ = server.await;
}
