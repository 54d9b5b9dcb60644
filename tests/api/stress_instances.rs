//! `bowline-stress` spread over two bases: writers, streams and reads go through both, and
//! every check of the mixed run must hold across them (a stream held through one base
//! receives the frames of writes made through the other, each exactly once).

use serde_json::Value;

use crate::helpers::{TestApp, run_stress, spawn_app_sharing_database, stress_app};

/// Whether the suite runs on PostgreSQL (`TEST_DATABASE_URL`), where two instances may
/// share one database.
fn on_postgres() -> bool {
    std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty())
}

/// A server for the tool and the second base: on PostgreSQL, a second real instance on the
/// same database. An SQLite file serves one process (a second instance refuses to start), so
/// there it is `None` and the same server's URL is given twice: two bases, one instance; the
/// tool still spreads its work over the two bases.
async fn two_bases() -> (TestApp, Option<TestApp>) {
    let first = stress_app().await;
    let second = if on_postgres() {
        Some(spawn_app_sharing_database(&first).await)
    } else {
        None
    };
    (first, second)
}

#[tokio::test]
async fn mixed_writers_and_streams_over_two_bases_lose_nothing() {
    let (first, second) = two_bases().await;
    let other = second.as_ref().unwrap_or(&first).base.clone();
    let (code, report) = run_stress(
        &first.base,
        &[
            "--base",
            &other,
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
            "30",
        ],
    )
    .await
    .reported();
    assert_eq!(report["passed"], true, "{report:#}");
    assert_eq!(code, 0, "{report:#}");
    let bases = report["bases"].as_array().expect("bases");
    let urls: Vec<&str> = bases.iter().filter_map(|b| b["base"].as_str()).collect();
    assert_eq!(urls, [first.base.as_str(), other.as_str()], "{report:#}");
    for base in bases {
        let count = |field: &str| base[field].as_u64().unwrap_or(0);
        assert_eq!(count("workers"), 6, "{base:#}");
        assert_eq!(count("streams"), 3, "{base:#}");
        assert!(count("answers") > 0, "{base:#}");
        assert!(count("frames") > 0, "{base:#}");
    }
    let frames = &report["broadcast"]["frames"];
    assert!(frames["received"].as_u64().expect("received") > 0);
    assert_eq!(frames["received"], frames["expected"], "{report:#}");
    assert_eq!(frames["missing"], 0, "{report:#}");
    assert_eq!(frames["duplicate"], 0, "{report:#}");
    assert!(
        check(&report, "every member received every frame exactly once")["passed"] == true,
        "{report:#}"
    );
}

#[tokio::test]
async fn broadcasts_through_either_base_reach_every_stream_on_both() {
    let (first, second) = two_bases().await;
    let other = second.as_ref().unwrap_or(&first).base.clone();
    let bases = format!("{},{other}", first.base);
    let (code, report) = run_stress(
        &first.base,
        &[
            "--base",
            &bases,
            "--scenario",
            "fanout",
            "--users",
            "4",
            "--connections",
            "20",
            "--broadcasts",
            "6",
        ],
    )
    .await
    .reported();
    assert_eq!(report["passed"], true, "{report:#}");
    assert_eq!(code, 0, "{report:#}");
    let bases = report["bases"].as_array().expect("bases");
    // The first `--base` and the comma-separated list after it: three bases.
    assert_eq!(bases.len(), 3, "{report:#}");
    let streams: u64 = bases.iter().filter_map(|b| b["streams"].as_u64()).sum();
    let frames: u64 = bases.iter().filter_map(|b| b["frames"].as_u64()).sum();
    assert_eq!(streams, 20, "{report:#}");
    assert_eq!(
        frames,
        20 * 6,
        "every stream got every broadcast once: {report:#}"
    );
    assert!(
        bases.iter().all(|b| b["workers"] == 2),
        "broadcasts went through every base: {report:#}"
    );
}

#[tokio::test]
async fn every_base_must_be_an_http_url() {
    let run = run_stress(
        "http://127.0.0.1:9",
        &["--base", "http://127.0.0.1:9,ftp://x"],
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.output);
    assert!(run.report.is_none());
    assert!(run.output.contains("`ftp://x`"), "{}", run.output);
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no check `{name}`: {report:#}"))
}
