//! What the CalDAV mirror tests share: a server configured for CalDAV, connecting an
//! account, and reading the caller's calendars.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::{TestApp, TestUser};
use crate::support::caldav_servers::CaldavServer;

/// The `CALDAV_ENC_KEY` of test servers.
pub const CALDAV_KEY: &str = "5f2b1c9d8e7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c";

/// Turns CalDAV on (the test key) with the pull timer off.
pub fn with_caldav(settings: &mut bowline::Settings) {
    settings.caldav.enc_key = Some(bowline::config::Secret::new(CALDAV_KEY));
    settings.caldav.sync_interval_ms = 0;
}

/// `POST /api/v1/users/connections/caldav` with `server`'s URL and user and `password`: the
/// status and the body (JSON, or the text as a JSON string).
pub async fn connect_caldav(
    app: &TestApp,
    user: &TestUser,
    server: &CaldavServer,
    password: &str,
) -> (StatusCode, Value) {
    let response = app
        .as_user(Method::POST, "/api/v1/users/connections/caldav", user)
        .json(&json!({
            "serverUrl": server.base_url,
            "username": server.username,
            "password": password,
        }))
        .send()
        .await
        .expect("request");
    let status = response.status();
    let text = response.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// `GET /api/v1/calendars` as `user`.
pub async fn calendars(app: &TestApp, user: &TestUser) -> Vec<Value> {
    let (status, body) = app.call(Method::GET, "/api/v1/calendars", user, None).await;
    assert_eq!(status, StatusCode::OK);
    body.as_array().expect("calendars").clone()
}
