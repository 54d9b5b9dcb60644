//! The origin rule for cookie-authenticated changes on `/api/v1`: a request that
//! authenticates with the session cookie and changes state needs a trusted origin (its
//! `Origin`, else Expo's `expo-origin`, else `Referer`); bearer requests and reads do not.
//! An untrusted `Origin` header is refused earlier still, by CORS, whatever the credential.

use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser, spawn_app};

const EVIL: &str = "https://evil.example";

fn calendar() -> Value {
    json!({ "id": "new", "creatorID": "", "name": "Origin", "color": "#7A8BA3", "members": [] })
}

/// `POST /api/v1/calendars` with `user`'s session cookie and no other credential.
fn with_cookie(app: &TestApp, user: &TestUser) -> RequestBuilder {
    app.client
        .post(app.url("/api/v1/calendars"))
        .header(
            "cookie",
            format!("better-auth.session_token={}", user.signed),
        )
        .json(&calendar())
}

/// The same request with `user`'s bearer token.
fn with_bearer(app: &TestApp, user: &TestUser) -> RequestBuilder {
    app.as_user(Method::POST, "/api/v1/calendars", user)
        .json(&calendar())
}

async fn send(request: RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.expect("request");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn cookie_changes_need_a_trusted_origin_and_bearer_changes_do_not() {
    let app = spawn_app().await;
    let user = app.sign_up("origin@example.com").await;
    let refused = "Cookie-authenticated changes need a trusted Origin.";

    // Cookie: no origin at all, or an untrusted one in the headers CORS does not judge.
    for (what, request) in [
        ("no origin", with_cookie(&app, &user)),
        (
            "untrusted Referer",
            with_cookie(&app, &user).header("referer", format!("{EVIL}/page")),
        ),
        (
            "untrusted expo-origin",
            with_cookie(&app, &user).header("expo-origin", "evilapp://"),
        ),
        (
            "expo-origin: null",
            with_cookie(&app, &user).header("expo-origin", "null"),
        ),
    ] {
        let (status, body) = send(request).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {body}");
        assert_eq!(body["error"], refused, "{what}");
    }
    // Cookie with a trusted origin: the server's own, or the app's scheme from Expo.
    let (status, body) = send(with_cookie(&app, &user).header("origin", app.base.as_str())).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = send(with_cookie(&app, &user).header("expo-origin", "bowline://")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // Reading with the cookie needs no origin.
    let read = app
        .client
        .get(app.url("/api/v1/calendars"))
        .header(
            "cookie",
            format!("better-auth.session_token={}", user.signed),
        )
        .send()
        .await
        .expect("request");
    assert_eq!(read.status(), StatusCode::OK);

    // Bearer: no origin needed, and an untrusted Referer or expo-origin does not matter.
    for (what, request) in [
        ("no origin", with_bearer(&app, &user)),
        (
            "untrusted Referer",
            with_bearer(&app, &user).header("referer", format!("{EVIL}/page")),
        ),
        (
            "untrusted expo-origin",
            with_bearer(&app, &user).header("expo-origin", "evilapp://"),
        ),
    ] {
        let (status, body) = send(request).await;
        assert_eq!(status, StatusCode::CREATED, "{what}: {body}");
    }

    // An untrusted Origin header never reaches a route: CORS refuses it for both.
    for request in [
        with_cookie(&app, &user).header("origin", EVIL),
        with_bearer(&app, &user).header("origin", EVIL),
    ] {
        let (status, body) = send(request).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(body["error"], "Origin is not allowed to call this API.");
    }
}
