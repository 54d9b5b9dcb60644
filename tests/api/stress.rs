//! Smoke runs of the built `bowline-stress` binary against a real in-process server, so the
//! tool cannot rot: a few seconds of each scenario with a few users, and correctness only
//! (every check of the run passed, no 5xx), read from the report it writes with `--json`.
//! Never a timing assertion: these are benchmarks, not tests.

use serde_json::Value;

use sea_orm::ConnectionTrait;

use crate::helpers::until_pg_count;
use crate::helpers::{TestApp, run_stress, sample, spawn_app_with, stress_app};

/// Runs `bowline-stress` against `app` with `args` (quiet, reading the server's metrics)
/// and returns its exit code and its JSON report.
async fn run(app: &TestApp, args: &[&str]) -> (i32, Value) {
    let metrics = app
        .metrics_addr
        .map(|addr| format!("http://{addr}/metrics"));
    let metrics_args: Vec<&str> = metrics
        .as_deref()
        .map(|url| vec!["--metrics", url])
        .unwrap_or_default();
    run_stress(&app.base, &[args, &metrics_args[..]].concat())
        .await
        .reported()
}

fn assert_passed(code: i32, report: &Value) {
    assert_eq!(report["passed"], true, "{report:#}");
    assert_eq!(code, 0, "{report:#}");
    let statuses = report["statuses"].as_object().expect("statuses");
    assert!(
        statuses.keys().all(|code| !code.starts_with('5')),
        "{report:#}"
    );
    assert!(
        report["memory"].is_object(),
        "the metrics listener was read"
    );
}

fn check_names(report: &Value) -> Vec<&str> {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|check| check["name"].as_str())
        .collect()
}

#[tokio::test]
async fn mixed_writers_with_streams_lose_nothing() {
    let app = stress_app().await;
    let (code, report) = run(
        &app,
        &[
            "--users",
            "6",
            "--calendars",
            "3",
            "--writers",
            "12",
            "--duration",
            "3s",
            "--sse",
            "--seed",
            "8",
        ],
    )
    .await;
    assert_passed(code, &report);
    let ops: Vec<&str> = report["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .filter_map(|o| o["op"].as_str())
        .collect();
    for op in ["create", "update", "link", "attendance", "delete"] {
        assert!(ops.contains(&op), "{op} ran: {report:#}");
    }
    // The server's write holds over the load, read from its metrics; on SQLite, its commits.
    let writes = &report["writes"];
    let held = writes["held_per_second"].as_f64().expect("held per second");
    let hold_ms = writes["hold_ms"].as_f64().expect("hold per write");
    assert!(held > 0.0 && hold_ms > 0.0, "{report:#}");
    let per_commit = writes["writes_per_commit"].as_f64();
    if app.ctx().db.backend() == bowline::store::Backend::Postgres {
        assert!(per_commit.is_none(), "{report:#}");
    } else {
        assert!(per_commit.is_some_and(|n| n >= 1.0), "{report:#}");
    }
    let frames = &report["broadcast"]["frames"];
    assert!(frames["received"].as_u64().expect("received") > 0);
    assert_eq!(frames["received"], frames["expected"], "{report:#}");
    let checks = check_names(&report);
    assert!(checks.contains(&"every member received every frame exactly once"));
    assert!(checks.contains(&"delta reads (since before the run) equal the model"));
}

/// The deadlocks PostgreSQL has counted in the test's database.
async fn deadlocks(conn: &sea_orm::DatabaseConnection) -> i64 {
    conn.execute_unprepared("SELECT pg_stat_clear_snapshot()")
        .await
        .expect("a fresh statistics snapshot");
    let row = conn
        .query_one_raw(sea_orm::Statement::from_string(
            sea_orm::DbBackend::Postgres,
            "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()",
        ))
        .await
        .expect("query")
        .expect("row");
    row.try_get("", "deadlocks").expect("deadlocks")
}

/// Ends every other session on the test's database (a stopped server's pool) and waits
/// until they are gone: a session reports its statistics, deadlocks among them, as it ends.
async fn end_other_sessions(conn: &sea_orm::DatabaseConnection) {
    conn.execute_unprepared(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .await
    .expect("terminate the server's sessions");
    until_pg_count(
        conn,
        "SELECT count(*) AS n FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
        |n| n == 0,
        "the stopped server's sessions end",
    )
    .await;
}

#[tokio::test]
async fn fifty_mixed_writers_take_their_locks_in_one_order() {
    // Every write locks the calendars it touches by id before the event's row, so editing
    // load on PostgreSQL never deadlocks (before, about one write in a thousand did and
    // waited a second for the database to break it).
    let mut app = stress_app().await;
    // One session of the test's own, so that "every other session" is the server's.
    let conn = match app.ctx().settings.storage.database_url.as_ref() {
        Some(url) => {
            let mut options = sea_orm::ConnectOptions::new(url.expose().to_owned());
            options.max_connections(1).min_connections(1);
            sea_orm::Database::connect(options)
                .await
                .expect("a session of the test's own")
        }
        None => app.db_connection().await,
    };
    let postgres = conn.get_database_backend() == sea_orm::DbBackend::Postgres;
    let before = if postgres { deadlocks(&conn).await } else { 0 };
    let (code, report) = run(
        &app,
        &[
            "--users",
            "6",
            "--calendars",
            "2",
            "--writers",
            "50",
            "--duration",
            "4s",
            "--sse",
            "--mix",
            "update=50,link=50",
            "--seed",
            "26",
        ],
    )
    .await;
    assert_passed(code, &report);
    let retries = sample(
        &app.metrics_text().await,
        "svc_db_transaction_retries_total ",
    );
    assert_eq!(
        retries,
        Some(0.0),
        "no transaction was aborted and run again"
    );
    if postgres {
        app.stop_in_place().await.expect("stops cleanly");
        end_other_sessions(&conn).await;
        assert_eq!(
            deadlocks(&conn).await,
            before,
            "PostgreSQL counted no deadlock"
        );
    }
}

#[tokio::test]
async fn many_writers_on_one_calendar_lose_nothing() {
    let app = stress_app().await;
    let (code, report) = run(
        &app,
        &[
            "--users",
            "4",
            "--calendars",
            "1",
            "--writers",
            "24",
            "--duration",
            "2s",
            "--sse",
        ],
    )
    .await;
    assert_passed(code, &report);
}

#[tokio::test]
async fn throughput_scenarios_check_what_they_measure() {
    let app = stress_app().await;
    let (code, report) = run(
        &app,
        &[
            "--scenario",
            "create",
            "--connections",
            "4",
            "--duration",
            "1s",
        ],
    )
    .await;
    assert_passed(code, &report);
    assert!(report["operations"][0]["ok"].as_u64().expect("ok") > 0);

    let (code, report) = run(
        &app,
        &[
            "--scenario",
            "list",
            "--connections",
            "4",
            "--events",
            "20",
            "--duration",
            "1s",
        ],
    )
    .await;
    assert_passed(code, &report);
}

#[tokio::test]
async fn fanout_reaches_every_stream_once() {
    let app = stress_app().await;
    let (code, report) = run(
        &app,
        &[
            "--scenario",
            "fanout",
            "--users",
            "3",
            "--connections",
            "30",
            "--broadcasts",
            "5",
        ],
    )
    .await;
    assert_passed(code, &report);
    let broadcast = &report["broadcast"];
    assert_eq!(broadcast["frames"]["received"], 30 * 5, "{report:#}");
    assert_eq!(broadcast["last_connection"]["count"], 5, "{report:#}");
}

#[tokio::test]
async fn a_dropped_stream_is_reported_not_silently_missed() {
    // One frame of room per connection: the first burst of changes drops the streams.
    let app = spawn_app_with(|settings| {
        settings.auth.rate_limit = false;
        settings.stream.buffer = 1;
    })
    .await;
    let (code, report) = run(
        &app,
        &[
            "--users",
            "3",
            "--calendars",
            "1",
            "--writers",
            "12",
            "--duration",
            "2s",
            "--sse",
            "--frame-wait",
            "2s",
        ],
    )
    .await;
    if report["passed"] == true {
        // The client kept up with every frame; nothing to report then.
        assert_eq!(code, 0);
        return;
    }
    assert_eq!(code, 1, "a failed check is exit code 1: {report:#}");
    let dropped = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == "no stream was dropped")
        .expect("the check is made");
    assert_eq!(dropped["passed"], false, "{report:#}");
    let detail = dropped["detail"].as_str().expect("detail");
    assert!(detail.contains("ended"), "{detail}");
}

#[tokio::test]
async fn sign_up_waits_out_the_servers_rate_limit() {
    // better-auth's limit: 3 sign-ups per 10 s per address; the fourth user waits for
    // `X-Retry-After` and the run goes on.
    let app = spawn_app_with(|settings| settings.auth.rate_limit = true).await;
    let (code, report) = run(
        &app,
        &[
            "--scenario",
            "create",
            "--users",
            "4",
            "--connections",
            "4",
            "--duration",
            "500ms",
        ],
    )
    .await;
    assert_passed(code, &report);
    assert_eq!(report["users"], 4, "{report:#}");
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
