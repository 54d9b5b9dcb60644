//! Cases schemathesis found (`.ci/schemathesis/run`, seed 31), kept after their fix: each
//! request as the fuzzer sent it, and the answer held against the server's own OpenAPI
//! document.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::spawn_app;
use crate::support::openapi::{assert_documented, document};

/// A repeated query key on the import made the query unreadable; the answer was the 405
/// of a route with another method on a path that also matched, not the 400 of the route
/// that took the request.
#[tokio::test]
async fn an_unreadable_query_is_a_400_of_the_route_that_took_the_request() {
    let app = spawn_app().await;
    let user = app.sign_up("query@example.com").await;
    let doc = document(&app).await;
    let response = app
        .as_user(
            Method::POST,
            "/api/v1/calendars/import?color=null&color=null",
            &user,
        )
        .header("content-type", "text/calendar")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.expect("JSON");
    assert_documented(&doc, "POST", "/api/v1/calendars/import", 400, &body);
}

/// Settings name their default view `defaultCalendarView`, whose schema once shared its
/// name with the calendar document's and was described as a calendar.
#[tokio::test]
async fn settings_answers_match_their_documented_schemas() {
    let app = spawn_app().await;
    let user = app.sign_up("settings-doc@example.com").await;
    let doc = document(&app).await;
    let (status, body) = app
        .call(Method::GET, "/api/v1/users/settings", &user, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_documented(&doc, "GET", "/api/v1/users/settings", 200, &body);
    let (status, body) = app
        .call(Method::GET, "/api/v1/users/settings/document", &user, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_documented(&doc, "GET", "/api/v1/users/settings/document", 200, &body);
    let revision = body["revision"].clone();
    let (status, body) = app
        .call(
            Method::PATCH,
            "/api/v1/users/me/settings",
            &user,
            Some(&json!({ "baseRevision": revision, "patch": { "timeFormat": "12h" } })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_documented(&doc, "PATCH", "/api/v1/users/me/settings", 200, &body);
}

/// A callback for a provider Bowline does not know is no route: its 404 is the
/// application's `{error, requestId}`, which the document now allows beside better-auth's
/// body.
#[tokio::test]
async fn an_unknown_oauth_callback_is_a_documented_404() {
    let app = spawn_app().await;
    let user = app.sign_up("callback@example.com").await;
    let doc = document(&app).await;
    let (status, body) = app
        .call(
            Method::GET,
            "/api/auth/callback/0?code=&error=",
            &user,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_documented(&doc, "GET", "/api/auth/callback/{id}", 404, &body);
}
