//! Input the body stage refuses before any route: U+0000 anywhere in a JSON body (keys and
//! values, any route, any content type), `%00` in a path or query, and malformed JSON. Under
//! `/api/auth/*` these answers use better-auth's `{message, code}`; elsewhere the pipeline's
//! `{error, requestId}`. On PostgreSQL a NUL that reached the store would be a 500.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, event_body, spawn_app};

const NUL_ERROR: &str = "Request body must not contain NUL characters (\\u0000).";

/// Status and JSON body of `response`.
async fn answer(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let text = response.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON body: {text:?}")),
    )
}

/// Asserts the pipeline's 400 for a NUL.
fn assert_nul_refused((status, body): (StatusCode, Value), what: &str) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {body}");
    assert_eq!(body["error"], NUL_ERROR, "{what}");
    assert!(body["requestId"].is_string(), "{what}");
}

async fn event_count(app: &TestApp, user: &crate::helpers::TestUser) -> usize {
    app.read_events(user, "").await["events"]
        .as_array()
        .expect("events")
        .len()
}

#[tokio::test]
async fn a_nul_in_any_json_string_is_a_400_and_nothing_is_stored() {
    let app = spawn_app().await;
    let user = app.sign_up("nul@example.com").await;
    let calendar = app.create_calendar(&user, "Plans").await;
    let calendar_id = calendar["id"].as_str().expect("id");

    let mut event = event_body(&[calendar_id], "Stand\u{0}up", 9);
    let response = app.event_request(Method::POST, &user, &event).await;
    assert_nul_refused(answer(response).await, "event title");
    event["title"] = json!("Standup");
    event["location"] = json!("Room\u{0}1");
    let response = app.event_request(Method::POST, &user, &event).await;
    assert_nul_refused(answer(response).await, "event location");
    assert_eq!(event_count(&app, &user).await, 0, "no event was created");

    // Keys count too, and the content type does not matter: routes read JSON whatever it says.
    let response = app
        .as_user(Method::POST, "/api/v1/pages", &user)
        .header("content-type", "text/plain")
        .body(r#"{"name": "Week", "config": {"schemaVersion": 1, "x\u0000": 1}}"#)
        .send()
        .await
        .expect("request");
    assert_nul_refused(answer(response).await, "a key, sent as text/plain");

    let cases = [
        (
            Method::POST,
            "/api/v1/calendars",
            json!({ "id": "new", "creatorID": "", "name": "Ca\u{0}l", "color": "#7A8BA3", "members": [] }),
        ),
        (
            Method::POST,
            "/api/v1/pages",
            json!({ "name": "We\u{0}ek", "config": { "schemaVersion": 1, "view": { "id": "week", "configVersion": 1 } } }),
        ),
        (
            Method::PATCH,
            "/api/v1/users/me/settings",
            json!({ "baseRevision": 1, "patch": { "timezone": "Europe/Berlin\u{0}" } }),
        ),
    ];
    for (method, path, body) in cases {
        let (status, body) = app.call(method, path, &user, Some(&body)).await;
        assert_nul_refused((status, body), path);
    }
    let (_, settings) = app
        .call(Method::GET, "/api/v1/users/settings", &user, None)
        .await;
    assert_eq!(settings["revision"], 1, "settings unchanged");
}

#[tokio::test]
async fn a_nul_in_an_auth_body_is_a_better_auth_400() {
    let app = spawn_app().await;
    let response = app
        .post_json(
            "/api/auth/sign-up/email",
            &json!({ "email": "nul@example.com", "password": "long enough password", "name": "A\u{0}da" }),
        )
        .await;
    let (status, body) = answer(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body, json!({ "message": NUL_ERROR, "code": "BAD_REQUEST" }));

    // The same NUL in a form body.
    let response = app
        .client
        .post(app.url("/api/auth/sign-up/email"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("name=A%00da&email=form-nul%40example.com&password=long+enough+password")
        .send()
        .await
        .expect("request");
    let (status, body) = answer(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body, json!({ "message": NUL_ERROR, "code": "BAD_REQUEST" }));
    for email in ["nul@example.com", "form-nul@example.com"] {
        let signed_in = app.sign_in(email, "long enough password").await;
        assert_eq!(
            signed_in.status(),
            StatusCode::UNAUTHORIZED,
            "{email} was not created"
        );
    }
}

#[tokio::test]
async fn a_percent_encoded_nul_in_the_path_or_query_is_a_400() {
    let app = spawn_app().await;
    let user = app.sign_up("uri-nul@example.com").await;
    let response = app.get("/api/v1/users/abc%00def/avatar").await;
    assert_nul_refused(answer(response).await, "path");
    let response = app
        .as_user(Method::POST, "/api/v1/calendars/import?name=Wo%00rk", &user)
        .header("content-type", "text/calendar")
        .body("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n")
        .send()
        .await
        .expect("request");
    assert_nul_refused(answer(response).await, "query");
    let response = app
        .get("/api/auth/reset-password/abc%00?callbackURL=/x")
        .await;
    let (status, body) = answer(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body, json!({ "message": NUL_ERROR, "code": "BAD_REQUEST" }));
}

#[tokio::test]
async fn malformed_json_on_auth_routes_gets_better_auths_answer_and_elsewhere_the_pipelines() {
    let app = spawn_app().await;
    let response = app
        .client
        .post(app.url("/api/auth/sign-in/email"))
        .header("content-type", "application/json")
        .body("{\"email\": ")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        response.text().await.expect("body"),
        r#"{"message":"Invalid JSON in request body","code":"BAD_REQUEST"}"#
    );

    let response = app
        .client
        .post(app.url("/api/v1/calendars"))
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .expect("request");
    let (status, body) = answer(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("Request body is not valid JSON")),
        "{body}"
    );
    assert!(body["requestId"].is_string());

    // better-auth defines no 413, so an oversized auth body gets the pipeline's answer.
    let big = format!("{{\"name\":\"{}\"}}", "x".repeat(600 * 1024));
    let response = app
        .client
        .post(app.url("/api/auth/sign-up/email"))
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .expect("request");
    let (status, body) = answer(response).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(body["requestId"].is_string(), "{body}");
}

#[tokio::test]
async fn a_body_of_the_wrong_shape_is_named_by_field_and_expectation_never_by_value() {
    let app = spawn_app().await;
    let user = app.sign_up("shape@example.com").await;
    let calendar = app.create_calendar(&user, "Plans").await;
    let calendar_id = calendar["id"].as_str().expect("id");
    let secret = 987_654_321_012_u64;
    let mut wrong_calendars = event_body(&[calendar_id], "Standup", 9);
    wrong_calendars["calendars"] = json!([calendar_id, secret]);
    let cases = [
        (
            Method::POST,
            "/api/v1/events".to_owned(),
            json!({ "id": secret }),
            "id must be a string",
        ),
        (
            Method::POST,
            "/api/v1/events".to_owned(),
            wrong_calendars,
            "calendars[1] must be a string",
        ),
        (
            Method::POST,
            "/api/v1/calendars".to_owned(),
            json!({ "name": secret, "color": "#fff" }),
            "name must be a string",
        ),
        (
            Method::POST,
            format!("/api/v1/calendars/members/{calendar_id}"),
            json!({ "token": secret }),
            "token must be a string",
        ),
        (
            Method::PUT,
            format!("/api/v1/calendars/{calendar_id}/members/{}", user.id),
            json!({ "role": secret }),
            "role must be",
        ),
        (
            Method::POST,
            "/api/v1/pages".to_owned(),
            json!({ "name": secret, "config": {} }),
            "page data",
        ),
        (
            Method::POST,
            "/api/v1/users/avatar".to_owned(),
            json!({ "data": secret }),
            "data must be a string",
        ),
    ];
    for (method, path, body, expected) in cases {
        let (status, answer) = app.call(method, &path, &user, Some(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {answer}");
        let message = answer["error"].as_str().expect("message");
        assert!(message.contains(expected), "{path}: {message}");
        assert!(!message.contains(&secret.to_string()), "{path}: {message}");
    }
}
