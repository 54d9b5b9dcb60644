//! Concurrent edits of one calendar: nothing is lost, revisions are gapless, and every
//! member receives every change's frame exactly once, in order.

use std::collections::BTreeMap;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{TestApp, TestUser, event_body, spawn_app};
use crate::support::sse::SseClient;

async fn stream(app: &TestApp, user: &TestUser) -> SseClient {
    SseClient::open(app.as_user(Method::GET, "/api/stream", user)).await
}

#[tokio::test]
async fn fifty_concurrent_updates_lose_nothing_and_every_member_gets_every_frame_once() {
    let app = spawn_app().await;
    let s = shared(&app, "concurrent").await;
    let mut bodies = Vec::new();
    for i in 0..5 {
        let body = event_body(&[&s.calendar], &format!("event {i}"), 8 + i);
        assert_eq!(
            app.event_request(Method::POST, &s.owner, &body)
                .await
                .status(),
            StatusCode::CREATED
        );
        bodies.push(body);
    }
    let mut streams = vec![
        stream(&app, &s.owner).await,
        stream(&app, &s.editor).await,
        stream(&app, &s.viewer).await,
    ];
    let writers = [&s.owner, &s.editor];
    let updates = (0..50).map(|i| {
        let mut body: Value = bodies[i % bodies.len()].clone();
        body["title"] = json!(format!("update {i}"));
        let writer = writers[i % writers.len()];
        let app = &app;
        async move { app.event_request(Method::PUT, writer, &body).await }
    });
    let responses = futures::future::join_all(updates).await;
    let mut acknowledged: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for response in responses {
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.expect("JSON");
        acknowledged
            .entry(body["id"].as_str().expect("id").to_owned())
            .or_default()
            .push(body["revision"].as_i64().expect("revision"));
    }
    for revisions in acknowledged.values_mut() {
        revisions.sort_unstable();
        let expected: Vec<i64> = (2..2 + revisions.len() as i64).collect();
        assert_eq!(
            *revisions, expected,
            "gapless, no revision twice: no update lost"
        );
    }
    let finals = app.read_events(&s.viewer, "").await;
    for event in finals["events"].as_array().expect("events") {
        let id = event["id"].as_str().expect("id");
        assert_eq!(event["revision"].as_i64(), acknowledged[id].last().copied());
    }

    for stream in &mut streams {
        let mut seen: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for _ in 0..50 {
            let frame = stream.next_frame().await;
            assert_eq!(frame["type"], "event_updated");
            seen.entry(frame["payload"]["id"].as_str().expect("id").to_owned())
                .or_default()
                .push(frame["payload"]["revision"].as_i64().expect("revision"));
        }
        assert_eq!(
            seen, acknowledged,
            "every change once, in commit order per event"
        );
    }
}

#[tokio::test]
async fn an_update_based_on_a_stale_revision_is_a_conflict_with_the_current_event() {
    let app = spawn_app().await;
    let s = shared(&app, "stale").await;
    let body = event_body(&[&s.calendar], "Original", 9);
    assert_eq!(
        app.event_request(Method::POST, &s.owner, &body)
            .await
            .status(),
        StatusCode::CREATED
    );

    let mut first = body.clone();
    first["title"] = json!("First");
    first["revision"] = json!(1);
    let response = app.event_request(Method::PUT, &s.editor, &first).await;
    assert_eq!(response.status(), StatusCode::OK);
    let updated: Value = response.json().await.expect("JSON");
    assert_eq!(updated["revision"], 2);

    // The owner still holds revision 1: refused, nothing changes, `current` to merge with.
    let mut second = body.clone();
    second["title"] = json!("Second");
    second["revision"] = json!(1);
    let response = app.event_request(Method::PUT, &s.owner, &second).await;
    assert_eq!(response.status(), StatusCode::CONFLICT);
    let conflict: Value = response.json().await.expect("JSON");
    assert_eq!(conflict["error"], "EVENT_CONFLICT");
    assert_eq!(conflict["current"]["revision"], 2);
    assert_eq!(conflict["current"]["title"], "First");
    assert_eq!(conflict["current"]["calendars"], json!([s.calendar]));

    // Retried on the current revision, it applies; without a revision it always does.
    second["revision"] = json!(2);
    let response = app.event_request(Method::PUT, &s.owner, &second).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut blind = body.clone();
    blind["title"] = json!("Blind");
    let response = app.event_request(Method::PUT, &s.owner, &blind).await;
    assert_eq!(response.status(), StatusCode::OK);
    let stored = app.read_events(&s.viewer, "").await;
    assert_eq!(stored["events"][0]["title"], "Blind");
    assert_eq!(stored["events"][0]["revision"], 4);

    let mut malformed = body.clone();
    malformed["revision"] = json!("two");
    let response = app.event_request(Method::PUT, &s.owner, &malformed).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}
