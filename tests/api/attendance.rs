//! Attendance: idempotent answers, who may answer, the attendee list without emails, and
//! `attendance_changed` to every reader.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{TestUser, event_body, spawn_app};

#[tokio::test]
async fn attendance_is_idempotent_and_reaches_every_reader() {
    let app = spawn_app().await;
    let s = shared(&app, "attend").await;
    let body = event_body(&[&s.calendar], "Party", 20);
    app.create_event(&s.owner, &body).await;
    let id = body["id"].as_str().expect("id");
    let mut editor_stream = app.stream(&s.editor).await;
    let answer = |user: &TestUser, body: Value| {
        app.as_user(
            Method::PUT,
            &format!("/api/v1/events/{id}/attendance"),
            user,
        )
        .json(&body)
        .send()
    };
    for _ in 0..2 {
        let response = answer(&s.viewer, json!({ "status": "maybe" }))
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::OK);
    }
    let frame = editor_stream.next_frame().await;
    assert_eq!(frame["type"], "attendance_changed");
    assert_eq!(frame["payload"]["eventID"], id);
    assert_eq!(
        frame["payload"]["attendees"],
        json!([
            { "id": s.owner.id, "name": "Test User", "image": null, "status": "going" },
            { "id": s.viewer.id, "name": "Test User", "image": null, "status": "maybe" }
        ])
    );
    let declined: Value = answer(&s.editor, json!({ "attending": false }))
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        declined.as_array().expect("array").len(),
        2,
        "none removes (there was no answer)"
    );
    let declined: Value = answer(&s.editor, json!({ "status": "declined" }))
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert_eq!(declined[2]["status"], "declined", "declined comes last");
    let none: Value = answer(&s.viewer, json!({ "status": "none" }))
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert!(
        none.as_array()
            .expect("array")
            .iter()
            .all(|a| a["id"] != s.viewer.id.as_str())
    );
    assert_eq!(
        answer(&s.viewer, json!({ "status": "perhaps" }))
            .await
            .expect("request")
            .status(),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        answer(&s.outsider, json!({ "status": "going" }))
            .await
            .expect("request")
            .status(),
        StatusCode::FORBIDDEN
    );
    let anonymous = app
        .client
        .get(app.url(&format!("/api/v1/events/{id}/attendees")))
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}
