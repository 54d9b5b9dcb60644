//! iCalendar helpers shared by the import, export and corpus tests: fixtures, import and
//! export over HTTP, the events of a calendar, and the importing user's time zone.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser};

/// A fixture of `tests/fixtures/ics`.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/ics/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// `POST /api/v1/calendars/import{query}` with `body` as `user`.
pub async fn import(
    app: &TestApp,
    user: &TestUser,
    query: &str,
    body: Vec<u8>,
) -> reqwest::Response {
    app.as_user(
        Method::POST,
        &format!("/api/v1/calendars/import{query}"),
        user,
    )
    .header("content-type", "text/calendar")
    .body(body)
    .send()
    .await
    .expect("request")
}

/// Imports `body`, expecting 201; the answer.
pub async fn imported(app: &TestApp, user: &TestUser, query: &str, body: Vec<u8>) -> Value {
    let response = import(app, user, query, body).await;
    let status = response.status();
    let answer: Value = response.json().await.expect("JSON");
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer
}

/// `GET /api/v1/calendars/{id}/export` as `user`.
pub async fn export(app: &TestApp, user: &TestUser, id: &str) -> reqwest::Response {
    app.as_user(Method::GET, &format!("/api/v1/calendars/{id}/export"), user)
        .send()
        .await
        .expect("request")
}

/// The export text, expecting 200.
pub async fn exported(app: &TestApp, user: &TestUser, id: &str) -> String {
    let response = export(app, user, id).await;
    assert_eq!(response.status(), StatusCode::OK);
    response.text().await.expect("text")
}

/// The events of calendar `id` as `user` reads them, ordered by start then title.
pub async fn events_in(app: &TestApp, user: &TestUser, id: &str) -> Vec<Value> {
    let listed = app.read_events(user, "").await;
    let mut events: Vec<Value> = listed["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| {
            e["calendars"]
                .as_array()
                .expect("calendars")
                .contains(&json!(id))
        })
        .cloned()
        .collect();
    events.sort_by_key(|e| (e["start"].to_string(), e["title"].to_string()));
    events
}

/// Sets `user`'s settings time zone through the settings route (a compare-and-swap patch
/// on the current revision).
pub async fn set_timezone(app: &TestApp, user: &TestUser, zone: &str) {
    let (status, document) = app
        .call(Method::GET, "/api/v1/users/settings/document", user, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{document}");
    let patch = json!({ "baseRevision": document["revision"], "patch": { "timezone": zone } });
    let (status, answer) = app
        .call(
            Method::PATCH,
            "/api/v1/users/me/settings",
            user,
            Some(&patch),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["value"]["timezone"], zone);
}
