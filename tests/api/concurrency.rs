//! Concurrent edits of one calendar: nothing is lost, revisions are gapless, and every
//! member receives every change's frame exactly once, in order.

use std::collections::BTreeMap;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{event_body, spawn_app};

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
        app.stream(&s.owner).await,
        app.stream(&s.editor).await,
        app.stream(&s.viewer).await,
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
