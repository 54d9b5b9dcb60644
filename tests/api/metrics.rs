//! The internal metrics listener and the labels the pipeline records.

use reqwest::{Method, StatusCode};

use crate::helpers::{sample, spawn_app};

#[tokio::test]
async fn requests_are_counted_by_route_pattern_with_unmatched_and_other() {
    let app = spawn_app().await;
    assert_eq!(app.get("/api/v1/server/ok").await.status(), StatusCode::OK);
    assert_eq!(app.get("/api/v1/server/ok").await.status(), StatusCode::OK);
    assert_eq!(
        app.get("/no/such/path/42").await.status(),
        StatusCode::NOT_FOUND
    );
    let purge = Method::from_bytes(b"PURGE").expect("method");
    let response = app
        .client
        .request(purge, app.url("/api/v1/server"))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);

    let text = app.metrics_text().await;
    assert_eq!(
        sample(
            &text,
            r#"svc_http_requests_total{method="GET",route="/api/v1/server/ok",status="200"}"#
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"svc_http_requests_total{method="GET",route="<unmatched>",status="404"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"svc_http_requests_total{method="OTHER",route="/api/v1/server",status="405"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        !text.contains("/no/such/path/42"),
        "concrete URLs never become labels"
    );
    assert!(
        sample(
            &text,
            r#"svc_http_request_duration_seconds_bucket{method="GET",route="/api/v1/server/ok",status="200",le="+Inf"}"#
        ) == Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"svc_http_requests_in_flight{method="GET"}"#),
        Some(0.0),
        "{text}"
    );
}

#[tokio::test]
async fn process_metrics_carry_the_svc_prefix() {
    let app = spawn_app().await;
    let text = app.metrics_text().await;
    for name in [
        "svc_process_cpu_seconds_total",
        "svc_process_resident_memory_bytes",
        "svc_process_open_fds",
        "svc_process_start_time_seconds",
    ] {
        let value = sample(&text, name).unwrap_or_else(|| panic!("{name} missing:\n{text}"));
        assert!(value >= 0.0, "{name} = {value}");
    }
    assert!(sample(&text, "svc_process_resident_memory_bytes").is_some_and(|rss| rss > 1e6));
    assert_eq!(
        sample(&text, r#"svc_actors{actor="root"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"svc_actors{actor="scheduler"}"#),
        Some(1.0),
        "{text}"
    );
}

#[tokio::test]
async fn the_metrics_listener_serves_only_get_metrics() {
    let app = spawn_app().await;
    let addr = app.metrics_addr.expect("metrics listener");
    let response = app
        .client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .expect("scrape");
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .expect("text")
            .starts_with("text/plain")
    );
    let other = app
        .client
        .get(format!("http://{addr}/api/v1/server/ok"))
        .send()
        .await
        .expect("request");
    assert_eq!(other.status(), StatusCode::NOT_FOUND);
    // And the public API has no /metrics route.
    assert_eq!(app.get("/metrics").await.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn metrics_port_zero_disables_the_listener() {
    // The harness hands a pre-bound metrics listener to its servers; build one without it.
    crate::helpers::init();
    let db = crate::helpers::TestDb::create().await;
    let mut settings = crate::helpers::test_settings_on(&db);
    settings.metrics.port = 0;
    let server = bowline::Application::build(settings)
        .await
        .expect("server starts");
    assert_eq!(server.metrics_addr(), None);
    let addr = server.http_addr();
    let shutdown = server.shutdown();
    let run = tokio::spawn(server.run_until_stopped());
    let response = reqwest::get(format!("http://{addr}/api/v1/server/ok"))
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    shutdown.trigger();
    run.await.expect("join").expect("clean stop");
}

#[tokio::test]
async fn the_counters_alerts_watch_exist_at_zero_from_start_up() {
    let app = spawn_app().await;
    let text = app.metrics_text().await;
    for actor in [
        "root",
        "scheduler",
        "mailer",
        "session_registry",
        "session",
        "calendar_supervisor",
        "calendar",
    ] {
        for name in ["svc_actor_restarts_total", "svc_actor_failures_total"] {
            let series = format!("{name}{{actor=\"{actor}\"}} 0");
            assert!(text.contains(&series), "{series} missing:\n{text}");
        }
    }
    for task in ["cleanup", "rate_limits", "wal_checkpoint", "metrics_upkeep"] {
        let series = format!("svc_scheduled_task_skips_total{{task=\"{task}\"}} 0");
        assert!(text.contains(&series), "{series} missing:\n{text}");
    }
    for provider in ["google", "microsoft", "caldav"] {
        let series = format!("svc_external_sync_failures_total{{provider=\"{provider}\"}} 0");
        assert!(text.contains(&series), "{series} missing:\n{text}");
    }
}
