//! The operator's kit against a live server: after some work (sign-ups, a shared calendar,
//! events, an open stream, a pending change-mail batch), every `svc_` metric that the
//! Grafana dashboard (`config/grafana/bowline.json`) and the alert rules
//! (`config/prometheus/alerts.yml`) use is in a scrape, and the new metrics carry samples
//! (streams dropped for slowness are counted in `stream.rs`).

use std::collections::BTreeSet;

use crate::calendars::shared;
use crate::change_mails::{attended, move_to};
use crate::helpers::{TestApp, eventually, sample, spawn_app_with, spawn_app_with_mail_and};
use crate::support::smtp::SmtpSink;

/// Reads a file of the repository's `config/` directory.
fn config_file(path: &str) -> String {
    let full = format!("{}/config/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|err| panic!("{full}: {err}"))
}

/// A histogram's series name without its `_bucket`/`_sum`/`_count` suffix.
fn base_name(name: &str) -> &str {
    ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name)
}

/// Every `svc_[a-z0-9_]+` name in `text`, suffixes of histograms stripped.
fn svc_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("svc_") {
        let preceded_by_word = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        let tail = &rest[at..];
        let len = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        if !preceded_by_word {
            names.insert(base_name(&tail[..len]).to_owned());
        }
        rest = &tail[len..];
    }
    names
}

/// The names of the samples in a scrape (not its `# HELP`/`# TYPE` lines), suffixes of
/// histograms stripped.
fn exported(scrape: &str) -> BTreeSet<String> {
    scrape
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| line.split(['{', ' ']).next())
        .map(|name| base_name(name).to_owned())
        .collect()
}

fn value(text: &str, series: &str) -> f64 {
    sample(text, series).unwrap_or_else(|| panic!("{series} missing:\n{text}"))
}

/// Produces the work the kit watches; returns once the sampled gauges show it.
async fn busy_server() -> (TestApp, String) {
    // Change mails wait long enough to be seen pending by the metrics upkeep (every 5 s).
    let app = spawn_app_with(|s| s.mail.batch_delay_ms = 600_000).await;
    let team = shared(&app, "ops").await;
    let mut stream = app.stream(&team.owner).await;
    let mut event = attended(&app, &team, "Standup", &[&team.editor]).await;
    // The owner's stream gets the event's frames (through its session actor).
    let frame = stream.next_frame().await;
    assert!(frame["type"].is_string(), "{frame}");
    // Moving an attended event queues a change mail for the attendee.
    move_to(&app, &team, &mut event, 11).await;

    eventually("the upkeep samples the mail queue and the pool", || async {
        let text = app.metrics_text().await;
        sample(&text, "svc_mail_batches_pending").is_some_and(|n| n >= 1.0)
            && sample(
                &text,
                r#"svc_db_pool_connections{pool="main",state="idle"}"#,
            )
            .is_some()
    })
    .await;
    // The batch stays pending (due in ten minutes), so this scrape shows it too.
    let text = app.metrics_text().await;
    drop(stream);
    (app, text)
}

#[tokio::test]
async fn every_metric_of_the_dashboard_and_the_alerts_is_exported() {
    let dashboard = config_file("grafana/bowline.json");
    let alerts = config_file("prometheus/alerts.yml");
    let used: BTreeSet<String> = svc_names(&dashboard)
        .into_iter()
        .chain(svc_names(&alerts))
        .collect();
    // The kit covers what it promises (a guard against an extraction that finds nothing).
    for name in [
        "svc_actor_mailbox_wait_seconds",
        "svc_mail_batches_pending",
        "svc_mail_oldest_batch_age_seconds",
        "svc_db_pool_connections",
        "svc_db_pool_acquire_seconds",
        "svc_db_write_hold_seconds",
        "svc_db_commit_writes",
        "svc_sse_dropped_total",
        "svc_process_open_fds",
        "svc_process_max_fds",
    ] {
        assert!(used.contains(name), "the kit does not use {name}");
    }

    let (_app, text) = busy_server().await;
    let exported = exported(&text);
    let missing: Vec<&String> = used.difference(&exported).collect();
    assert!(
        missing.is_empty(),
        "used by the dashboard or the alerts but not exported: {missing:?}\n{text}"
    );
}

#[tokio::test]
async fn the_new_metrics_record_the_work_done() {
    let (app, text) = busy_server().await;
    // A command waited at the calendar supervisor and at the calendar actor, frames at the
    // stream's session, the batch notice at the mailer.
    for actor in ["calendar_supervisor", "calendar", "session", "mailer"] {
        let series = format!(r#"svc_actor_mailbox_wait_seconds_count{{actor="{actor}"}}"#);
        assert!(value(&text, &series) >= 1.0, "{series}\n{text}");
    }
    assert!(value(&text, r#"svc_db_pool_acquire_seconds_count{mode="write"}"#) >= 1.0);
    // Each write transaction's hold of its connection; on SQLite, its commits.
    let holds = value(&text, "svc_db_write_hold_seconds_count");
    assert!(holds >= 1.0, "{text}");
    let commits = value(&text, "svc_db_commit_writes_count");
    if app.ctx().db.backend() == bowline::store::Backend::Postgres {
        assert_eq!(commits, 0.0, "not recorded on PostgreSQL\n{text}");
    } else {
        let committed = value(&text, "svc_db_commit_writes_sum");
        assert!(commits >= 1.0 && committed >= commits, "{text}");
    }
    assert!(value(&text, "svc_mail_batches_pending") >= 1.0);
    // The batch is due in ten minutes: nothing is overdue.
    assert_eq!(value(&text, "svc_mail_oldest_batch_age_seconds"), 0.0);
    let idle = value(
        &text,
        r#"svc_db_pool_connections{pool="main",state="idle"}"#,
    );
    let in_use = value(
        &text,
        r#"svc_db_pool_connections{pool="main",state="in_use"}"#,
    );
    assert!(idle + in_use >= 1.0, "the pool keeps a connection\n{text}");
    assert_eq!(value(&text, r#"svc_sse_dropped_total{reason="slow"}"#), 0.0);
    let open = value(&text, "svc_process_open_fds");
    let max = value(&text, "svc_process_max_fds");
    assert!(open > 0.0 && max >= open, "open fds {open}, limit {max}");
    drop(app);
}

#[tokio::test]
async fn a_batch_the_mail_server_refuses_shows_as_overdue() {
    let sink = SmtpSink::start().await;
    // Batches are due 200 ms after the first change and retried every 200 ms.
    let app = spawn_app_with_mail_and(&sink, |s| {
        s.mail.batch_delay_ms = 200;
        s.mail.retry_ms = 200;
    })
    .await;
    let team = shared(&app, "overdue").await;
    let mut event = attended(&app, &team, "Retro", &[&team.editor]).await;
    sink.refuse_next(u32::MAX);
    move_to(&app, &team, &mut event, 14).await;
    eventually("the batch shows as overdue", || async {
        let text = app.metrics_text().await;
        sample(&text, "svc_mail_oldest_batch_age_seconds").is_some_and(|age| age > 0.0)
            && sample(&text, "svc_mail_batches_pending").is_some_and(|n| n >= 1.0)
    })
    .await;
}
