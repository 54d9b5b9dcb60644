//! The stream's frames match the OpenAPI document: a user's stream receives frames of many
//! kinds (events created, updated, answered and removed; calendars updated and removed;
//! settings, reminders and Pages), and each is validated against the schema the server's
//! own `GET /api/v1/openapi.json` names for its `type` (through `StreamFrame`'s
//! discriminator), and against `StreamFrame` itself — so the document and the frames the
//! server sends cannot drift apart.

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::{share_new_calendar, shared};
use crate::event_frames::drain;
use crate::helpers::{event_body, spawn_app};
use crate::pages::config;
use crate::support::openapi::{document, validator};

/// The schema the document gives for frames of `kind`, from `StreamFrame`'s discriminator.
fn frame_schema<'d>(document: &'d Value, kind: &str) -> &'d str {
    document["components"]["schemas"]["StreamFrame"]["discriminator"]["mapping"][kind]
        .as_str()
        .unwrap_or_else(|| panic!("the document maps frame type {kind}"))
}

/// Checks every frame against its type's schema and against `StreamFrame`; the types seen.
fn check(document: &Value, frames: &[Value]) -> BTreeSet<String> {
    let any = validator(document, "#/components/schemas/StreamFrame");
    let mut seen = BTreeSet::new();
    for frame in frames {
        let kind = frame["type"].as_str().expect("a frame has a type");
        let own = validator(document, frame_schema(document, kind));
        let errors: Vec<String> = own.iter_errors(frame).map(|e| e.to_string()).collect();
        assert!(
            errors.is_empty(),
            "{kind} frame {frame} breaks its schema: {errors:?}"
        );
        assert!(any.is_valid(frame), "{frame} is not a StreamFrame");
        seen.insert(kind.to_owned());
    }
    seen
}

#[tokio::test]
async fn the_frames_a_stream_receives_match_their_schemas_in_the_document() {
    let app = spawn_app().await;
    let document = document(&app).await;
    let s = shared(&app, "schema").await;
    let mut owner = app.stream(&s.owner).await;
    let mut viewer = app.stream(&s.viewer).await;

    // Events: created, updated, answered, removed.
    let body = event_body(&[&s.calendar], "Planning", 9);
    let id = body["id"].as_str().expect("id").to_owned();
    app.create_event(&s.owner, &body).await;
    let mut update = body.clone();
    update["title"] = json!("Planning, moved");
    update["description"] = json!("Bring the numbers");
    let response = app.event_request(Method::PUT, &s.owner, &update).await;
    assert_eq!(response.status(), StatusCode::OK);
    let (status, _) = app
        .call(
            Method::PUT,
            &format!("/api/v1/events/{id}/attendance"),
            &s.owner,
            Some(&json!({ "status": "going" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let response = app
        .event_request(Method::DELETE, &s.owner, &json!({ "id": id }))
        .await;
    assert!(response.status().is_success(), "{}", response.status());

    // Calendars: renamed; one deleted (the whole document); the viewer removed (the id).
    let response = app
        .as_user(Method::PUT, "/api/v1/calendars", &s.owner)
        .json(&json!({ "id": s.calendar, "name": "Renamed", "color": "#123456", "members": [] }))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    let second = share_new_calendar(&app, &s.owner, &s.editor, &s.viewer).await;
    let response = app
        .as_user(Method::DELETE, "/api/v1/calendars", &s.owner)
        .json(&json!({ "id": second, "name": "Team", "color": "#7A8BA3" }))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    let response = app
        .as_user(
            Method::DELETE,
            &format!("/api/v1/calendars/{}/members/{}", s.calendar, s.viewer.id),
            &s.owner,
        )
        .send()
        .await
        .expect("request");
    assert!(response.status().is_success(), "{}", response.status());

    // Settings, reminders, Pages.
    let (status, _) = app
        .call(
            Method::PATCH,
            "/api/v1/users/me/settings",
            &s.owner,
            Some(&json!({ "baseRevision": 1, "patch": { "onboarded": true } })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app
        .call(
            Method::PUT,
            &format!("/api/v1/reminders/calendars/{}", s.calendar),
            &s.owner,
            Some(&json!({ "rule": { "minutesBefore": 15, "allDay": null } })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, page) = app
        .call(
            Method::POST,
            "/api/v1/pages",
            &s.owner,
            Some(&json!({ "name": "Work", "config": config("week") })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{page}");
    let path = format!("/api/v1/pages/{}", page["id"].as_str().expect("id"));
    let save = json!({ "baseRevision": 1, "name": "Office", "config": config("day") });
    let (status, _) = app.call(Method::PATCH, &path, &s.owner, Some(&save)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app.call(Method::DELETE, &path, &s.owner, None).await;
    assert!(status.is_success(), "{status}");

    let mut seen = check(&document, &drain(&app, &s.owner, &mut owner).await);
    seen.extend(check(&document, &drain(&app, &s.viewer, &mut viewer).await));
    for kind in [
        "event_created",
        "event_updated",
        "attendance_changed",
        "event_removed",
        "calendar_updated",
        "calendar_removed",
        "settings_updated",
        "reminders_updated",
        "page_created",
        "page_updated",
        "page_removed",
    ] {
        assert!(seen.contains(kind), "no {kind} frame among {seen:?}");
    }
}

#[test]
fn a_frame_that_breaks_its_schema_is_refused() {
    // The check above can fail: the schemas refuse a wrong payload.
    let document = serde_json::to_value(bowline::http::openapi::document()).expect("JSON");
    let settings = validator(&document, frame_schema(&document, "settings_updated"));
    assert!(
        settings.is_valid(&json!({ "type": "settings_updated", "payload": { "revision": 2 } }))
    );
    assert!(
        !settings.is_valid(&json!({ "type": "settings_updated", "payload": { "revision": "2" } }))
    );
    assert!(!settings.is_valid(&json!({ "type": "page_removed", "payload": { "revision": 2 } })));
    let removed = validator(&document, frame_schema(&document, "event_removed"));
    assert!(!removed.is_valid(&json!({
        "type": "event_removed",
        "payload": { "id": "not-a-uuid", "calendars": [], "removed": true }
    })));
    // `error` is always written, `null` for a conflict.
    let delivery = validator(&document, frame_schema(&document, "provider_delivery"));
    let ids = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    let conflict = json!({
        "type": "provider_delivery",
        "payload": { "calendarID": ids.0, "eventID": ids.1, "state": "conflict", "error": null }
    });
    assert!(delivery.is_valid(&conflict));
    let mut without_error = conflict.clone();
    without_error["payload"]
        .as_object_mut()
        .expect("object")
        .remove("error");
    assert!(!delivery.is_valid(&without_error));
}
