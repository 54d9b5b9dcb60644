//! Benchmark: importing 10,000 VEVENTs in a body of about 10 MiB over HTTP, and a hostile
//! file of the same size whose VTIMEZONE lists 400,000 RDATEs for the 9,000 events that use
//! it (the probe's CPU amplification: it must be answered within a second).
//!
//! Starts a Bowline server in-process on port 0 with SQLite in a temporary directory, signs
//! a user up, generates the file (Berlin times, folded descriptions, every tenth event a
//! weekly series with an EXDATE) and times `POST /api/v1/calendars/import` from request to
//! answer, three times; also times the parse alone; then the same for the hostile file.
//! Run in a release build:
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

/// The hostile file: one VTIMEZONE of a made-up TZID whose observance lists 400,000 RDATEs,
/// and 9,000 events in that zone (about 8.4 MB).
fn hostile_vtimezone_body() -> String {
    let mut out = String::from(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Bowline//Benchmark//EN\r\n\
         BEGIN:VTIMEZONE\r\nTZID:Hostile/Zone\r\nBEGIN:STANDARD\r\nDTSTART:19700101T000000\r\n\
         TZOFFSETFROM:+0100\r\nTZOFFSETTO:+0100\r\n",
    );
    for line in 0..400 {
        out.push_str("RDATE:");
        let values: Vec<String> = (0..1_000)
            .map(|n| {
                let index = line * 1_000 + n;
                format!(
                    "{:04}{:02}{:02}T000000",
                    1971 + index % 8_000,
                    1 + index % 12,
                    1 + index % 28
                )
            })
            .collect();
        out.push_str(&values.join(","));
        out.push_str("\r\n");
    }
    out.push_str("END:STANDARD\r\nEND:VTIMEZONE\r\n");
    for i in 0..HOSTILE_EVENTS {
        out.push_str(&format!(
            "BEGIN:VEVENT\r\nUID:hostile-{i}@bowline.test\r\n\
             DTSTART;TZID=Hostile/Zone:2026{:02}{:02}T090000\r\n\
             DTEND;TZID=Hostile/Zone:2026{:02}{:02}T100000\r\nSUMMARY:Event {i}\r\nEND:VEVENT\r\n",
            1 + i % 12,
            1 + i % 28,
            1 + i % 12,
            1 + i % 28
        ));
    }
    out.push_str("END:VCALENDAR\r\n");
    out
}

/// Events of the hostile file.
const HOSTILE_EVENTS: usize = 9_000;

/// Imports `body` as `token` (three times), printing each run; the median.
async fn time_imports(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    body: &str,
    name: &str,
    events: usize,
) -> Duration {
    let mut timings: Vec<Duration> = Vec::new();
    for run in 1..=3 {
        let started = Instant::now();
        let response = client
            .post(format!(
                "{base}/api/v1/calendars/import?name={name}%20{run}"
            ))
            .bearer_auth(token)
            .header("content-type", "text/calendar")
            .body(body.to_owned())
            .send()
            .await
            .expect("import");
        let status = response.status();
        let answer: serde_json::Value = response.json().await.expect("JSON");
        let elapsed = started.elapsed();
        assert_eq!(status, 201, "{answer}");
        assert_eq!(answer["imported"], events);
        println!("  {name}: import over HTTP, run {run}: {elapsed:?}");
        timings.push(elapsed);
    }
    timings.sort();
    timings[1]
}

/// Parses `body` alone, printing how long it took.
fn time_parse(body: &str, events: usize, name: &str) {
    let started = Instant::now();
    let parsed = bowline::ical::parse_calendar(
        body.as_bytes(),
        &bowline::ical::ImportOptions {
            user_zone: chrono_tz::Tz::UTC,
        },
    )
    .expect("parses");
    assert_eq!(parsed.events.len(), events);
    println!("  {name}: parse only: {:?}", started.elapsed());
}

async fn run() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let body = body();
    assert!(body.len() <= LIMIT, "body is {} bytes", body.len());
    println!(
        "ics_import: {EVENTS} VEVENTs, {:.2} MiB",
        body.len() as f64 / (1024.0 * 1024.0)
    );
    time_parse(&body, EVENTS, "Bench");
    let hostile = hostile_vtimezone_body();
    assert!(
        hostile.len() <= LIMIT,
        "hostile body is {} bytes",
        hostile.len()
    );
    time_parse(&hostile, HOSTILE_EVENTS, "Hostile");

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

    let median = time_imports(&client, &base, &token, &body, "Bench", EVENTS).await;
    println!(
        "ics_import: 10,000 events / {:.2} MiB imported in {:.2} s (median of 3, SQLite)",
        body.len() as f64 / (1024.0 * 1024.0),
        median.as_secs_f64()
    );
    let median = time_imports(&client, &base, &token, &hostile, "Hostile", HOSTILE_EVENTS).await;
    println!(
        "ics_import: a VTIMEZONE of 400,000 RDATEs for 9,000 events / {:.2} MiB answered in {:.2} s (median of 3, SQLite)",
        hostile.len() as f64 / (1024.0 * 1024.0),
        median.as_secs_f64()
    );
    ctx.shutdown.trigger();
    let _ = server.await;
}
