//! Smoke runs of `bowline-stress` against a real in-process server, so the tool cannot rot:
//! a few seconds of each scenario with a few users, and correctness only (every check of
//! the run passed, no 5xx). Never a timing assertion: these are benchmarks, not tests.

use std::time::Duration;

use bowline::stress::{self, Options, Report, Scenario};

use crate::helpers::{TestApp, spawn_app_with};

async fn app() -> TestApp {
    spawn_app_with(|settings| settings.auth.rate_limit = false).await
}

fn options(app: &TestApp, scenario: Scenario) -> Options {
    let mut options = Options::new(&app.base);
    options.scenario = scenario;
    options.quiet = true;
    options.metrics = app
        .metrics_addr
        .map(|addr| format!("http://{addr}/metrics"));
    options
}

fn assert_passed(report: &Report) {
    assert!(report.passed, "{}", report.table());
    assert!(
        report.statuses.keys().all(|code| !code.starts_with('5')),
        "{}",
        report.table()
    );
    assert!(report.memory.is_some(), "the metrics listener was read");
}

#[tokio::test]
async fn mixed_writers_with_streams_lose_nothing() {
    let app = app().await;
    let mut options = options(&app, Scenario::Mixed);
    options.users = Some(6);
    options.calendars = Some(3);
    options.writers = 12;
    options.duration = Duration::from_secs(3);
    options.sse = true;
    options.seed = Some(8);
    let report = stress::run(&options).await.expect("the run starts");
    assert_passed(&report);
    let ops: Vec<&str> = report.operations.iter().map(|o| o.op.name()).collect();
    for op in ["create", "update", "link", "attendance", "delete"] {
        assert!(ops.contains(&op), "{op} ran: {}", report.table());
    }
    let frames = &report.broadcast.as_ref().expect("streams were open").frames;
    assert!(frames.received > 0);
    assert_eq!(frames.received, frames.expected, "{}", report.table());
    let checks: Vec<&str> = report.checks.iter().map(|c| c.name.as_str()).collect();
    assert!(checks.contains(&"every member received every frame exactly once"));
    assert!(checks.contains(&"delta reads (since before the run) equal the model"));
}

#[tokio::test]
async fn many_writers_on_one_calendar_lose_nothing() {
    let app = app().await;
    let mut options = options(&app, Scenario::Mixed);
    options.users = Some(4);
    options.calendars = Some(1);
    options.writers = 24;
    options.duration = Duration::from_secs(2);
    options.sse = true;
    let report = stress::run(&options).await.expect("the run starts");
    assert_passed(&report);
}

#[tokio::test]
async fn throughput_scenarios_check_what_they_measure() {
    let app = app().await;
    let mut create = options(&app, Scenario::Create);
    create.connections = Some(4);
    create.duration = Duration::from_secs(1);
    let report = stress::run(&create).await.expect("the run starts");
    assert_passed(&report);
    assert!(report.operations[0].ok > 0);

    let mut list = options(&app, Scenario::List);
    list.connections = Some(4);
    list.events = 20;
    list.duration = Duration::from_secs(1);
    let report = stress::run(&list).await.expect("the run starts");
    assert_passed(&report);
}

#[tokio::test]
async fn fanout_reaches_every_stream_once() {
    let app = app().await;
    let mut options = options(&app, Scenario::Fanout);
    options.users = Some(3);
    options.connections = Some(30);
    options.broadcasts = 5;
    let report = stress::run(&options).await.expect("the run starts");
    assert_passed(&report);
    let broadcast = report.broadcast.as_ref().expect("streams");
    assert_eq!(broadcast.frames.received, 30 * 5);
    assert_eq!(broadcast.last_connection.expect("timed").count, 5);
}

#[tokio::test]
async fn a_dropped_stream_is_reported_not_silently_missed() {
    // One frame of room per connection: the first burst of changes drops the streams.
    let app = spawn_app_with(|settings| {
        settings.auth.rate_limit = false;
        settings.stream.buffer = 1;
    })
    .await;
    let mut options = options(&app, Scenario::Mixed);
    options.users = Some(3);
    options.calendars = Some(1);
    options.writers = 12;
    options.duration = Duration::from_secs(2);
    options.sse = true;
    options.frame_wait = Duration::from_secs(2);
    let report = stress::run(&options).await.expect("the run starts");
    if report.passed {
        // The client kept up with every frame; nothing to report then.
        return;
    }
    let dropped = report
        .checks
        .iter()
        .find(|c| c.name == "no stream was dropped")
        .expect("the check is made");
    assert!(!dropped.passed, "{}", report.table());
    assert!(dropped.detail.contains("ended"), "{}", dropped.detail);
}

#[tokio::test]
async fn sign_up_waits_out_the_servers_rate_limit() {
    // better-auth's limit: 3 sign-ups per 10 s per address; the fourth user waits for
    // `X-Retry-After` and the run goes on.
    let app = spawn_app_with(|settings| settings.auth.rate_limit = true).await;
    let mut options = options(&app, Scenario::Create);
    options.users = Some(4);
    options.connections = Some(4);
    options.duration = Duration::from_millis(500);
    let report = stress::run(&options).await.expect("the run starts");
    assert_passed(&report);
    assert_eq!(report.users, 4);
}

#[test]
fn the_binary_explains_itself() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_bowline-stress"))
        .arg("--help")
        .output()
        .expect("run bowline-stress");
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for option in [
        "--scenario",
        "--writers",
        "--mix",
        "--sse",
        "--json",
        "--metrics",
        "--connections",
    ] {
        assert!(help.contains(option), "{option} in {help}");
    }
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_bowline-stress"))
        .args(["--writers", "0", "--base", "http://127.0.0.1:9"])
        .output()
        .expect("run bowline-stress");
    assert_eq!(refused.status.code(), Some(2));
}
