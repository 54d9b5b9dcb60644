//! Conditional reads: the routes clients poll answer with an `ETag` built from what their
//! answer depends on, and a client that sends it back in `If-None-Match` gets `304 Not
//! Modified` without a body until that changes.

use reqwest::header::{CACHE_CONTROL, ETAG, IF_NONE_MATCH};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::{TestApp, TestUser, event_body, spawn_app};

/// GETs `path` as `user` (or anonymously), with `If-None-Match: tag` when given; returns
/// the status, the tag answered and the body.
async fn get(
    app: &TestApp,
    user: Option<&TestUser>,
    path: &str,
    tag: Option<&str>,
) -> (StatusCode, String, String) {
    let mut request = match user {
        Some(user) => app.as_user(Method::GET, path, user),
        None => app.client.get(app.url(path)),
    };
    if let Some(tag) = tag {
        request = request.header(IF_NONE_MATCH, tag);
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    let etag = response
        .headers()
        .get(ETAG)
        .map(|v| v.to_str().expect("ascii").to_owned())
        .unwrap_or_default();
    if status == StatusCode::OK || status == StatusCode::NOT_MODIFIED {
        assert_eq!(
            response
                .headers()
                .get(CACHE_CONTROL)
                .map(|v| v.to_str().expect("ascii")),
            Some("private, no-cache"),
            "{path}"
        );
    }
    let body = response.text().await.expect("body");
    (status, etag, body)
}

/// Reads `path`, then asks again with the tag: 304 with the same tag and no body. Returns
/// the tag.
async fn tag_holds(app: &TestApp, user: Option<&TestUser>, path: &str) -> String {
    let (status, tag, _) = get(app, user, path, None).await;
    assert_eq!(status, StatusCode::OK, "{path}");
    assert!(tag.starts_with("W/\""), "{path}: a weak tag, not {tag:?}");
    let (status, again, body) = get(app, user, path, Some(&tag)).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED, "{path}");
    assert_eq!(again, tag, "{path}");
    assert!(body.is_empty(), "{path}: a 304 has no body");
    tag
}

/// After a change, the old tag gets the new answer (200) with a new tag.
async fn tag_moved(app: &TestApp, user: &TestUser, path: &str, old: &str) -> String {
    let (status, tag, body) = get(app, Some(user), path, Some(old)).await;
    assert_eq!(status, StatusCode::OK, "{path} changed: {body}");
    assert_ne!(tag, old, "{path}: a change gives a new tag");
    assert!(!body.is_empty());
    tag
}

#[tokio::test]
async fn events_reads_answer_304_until_what_the_reader_sees_changes() {
    let app = spawn_app().await;
    let owner = app.sign_up("etag-owner@example.com").await;
    let other = app.sign_up("etag-other@example.com").await;
    let calendar = app.create_calendar(&owner, "Tagged").await;
    let calendar = calendar["id"].as_str().expect("id").to_owned();
    let event = event_body(&[&calendar], "First", 9);
    app.create_event(&owner, &event).await;

    let tag = tag_holds(&app, Some(&owner), "/api/v1/events").await;
    // Another user's tag is not this user's, even for the same versions of nothing.
    let (status, _, _) = get(&app, Some(&other), "/api/v1/events", Some(&tag)).await;
    assert_eq!(status, StatusCode::OK);

    // A change to an event the reader sees moves the tag.
    let mut changed = event.clone();
    changed["title"] = json!("Renamed");
    let response = app
        .as_user(Method::PUT, "/api/v1/events", &owner)
        .json(&changed)
        .send()
        .await
        .expect("update");
    assert_eq!(response.status(), StatusCode::OK);
    let tag = tag_moved(&app, &owner, "/api/v1/events", &tag).await;
    let (_, _, body) = get(&app, Some(&owner), "/api/v1/events", None).await;
    assert!(body.contains("Renamed"));

    // So does a change elsewhere that the reader gains sight of: joining a calendar.
    let theirs = app.create_calendar(&other, "Theirs").await;
    let theirs = theirs["id"].as_str().expect("id").to_owned();
    app.create_event(&other, &event_body(&[&theirs], "Theirs", 11))
        .await;
    let unchanged = tag_holds(&app, Some(&owner), "/api/v1/events").await;
    assert_eq!(
        unchanged, tag,
        "another user's calendar is not the reader's"
    );
    app.join_with_invite(&other, &theirs, &owner).await;
    tag_moved(&app, &owner, "/api/v1/events", &tag).await;
}

#[tokio::test]
async fn calendars_settings_pages_reminders_and_server_answer_304_until_changed() {
    let app = spawn_app().await;
    let user = app.sign_up("etag-reader@example.com").await;
    let calendar = app.create_calendar(&user, "Mine").await;
    let calendar = calendar["id"].as_str().expect("id").to_owned();

    let tag = tag_holds(&app, Some(&user), "/api/v1/calendars").await;
    let response = app
        .as_user(Method::PUT, "/api/v1/calendars", &user)
        .json(&json!({ "id": calendar, "name": "Renamed", "color": "#7A8BA3" }))
        .send()
        .await
        .expect("rename");
    assert_eq!(response.status(), StatusCode::OK);
    tag_moved(&app, &user, "/api/v1/calendars", &tag).await;

    for (path, week_start) in [
        ("/api/v1/users/settings", "sunday"),
        ("/api/v1/users/settings/document", "monday"),
    ] {
        let tag = tag_holds(&app, Some(&user), path).await;
        let (status, current, _) = get(&app, Some(&user), path, None).await;
        assert_eq!((status, current.as_str()), (StatusCode::OK, tag.as_str()));
        let revision = {
            let (_, _, body) =
                get(&app, Some(&user), "/api/v1/users/settings/document", None).await;
            serde_json::from_str::<serde_json::Value>(&body).expect("JSON")["revision"].clone()
        };
        let (status, _) = app
            .call(
                Method::PATCH,
                "/api/v1/users/me/settings",
                &user,
                Some(&json!({ "baseRevision": revision, "patch": { "weekStartsOn": week_start } })),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{path}");
        tag_moved(&app, &user, path, &tag).await;
    }

    let tag = tag_holds(&app, Some(&user), "/api/v1/pages").await;
    crate::pages::create(&app, &user, "Focus").await;
    tag_moved(&app, &user, "/api/v1/pages", &tag).await;

    let tag = tag_holds(&app, Some(&user), "/api/v1/reminders").await;
    let (status, _) = app
        .call(
            Method::PUT,
            &format!("/api/v1/reminders/calendars/{calendar}"),
            &user,
            Some(&json!({ "rule": { "minutesBefore": 15, "allDay": null } })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    tag_moved(&app, &user, "/api/v1/reminders", &tag).await;

    tag_holds(&app, None, "/api/v1/server").await;
}
