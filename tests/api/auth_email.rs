//! Email and password sign-in on the better-auth wire: sign-up (with its signup effects),
//! sign-in, origin rules for cookies, profile update, accounts, unknown paths and the
//! sign-in rate limit. Sessions once signed in are in `auth_session_lifecycle`.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{spawn_app, spawn_app_with};

pub(crate) fn set_cookies(response: &reqwest::Response) -> Vec<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().expect("text").to_owned())
        .collect()
}

#[tokio::test]
async fn sign_up_returns_token_user_and_session_transport() {
    let app = spawn_app().await;
    let response = app
        .post_json(
            "/api/auth/sign-up/email",
            &json!({ "email": "Ada@Example.COM", "password": "analytical engine", "name": "Ada" }),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let cookies = set_cookies(&response);
    let auth_token = response.headers()["set-auth-token"]
        .to_str()
        .expect("text")
        .to_owned();
    let body: Value = response.json().await.expect("JSON");
    let token = body["token"].as_str().expect("token");
    assert_eq!(token.len(), 32);
    assert_eq!(
        body["user"]["email"], "ada@example.com",
        "emails are stored lower-cased"
    );
    assert_eq!(body["user"]["name"], "Ada");
    assert_eq!(body["user"]["emailVerified"], false);
    assert_eq!(body["user"]["image"], Value::Null);
    let created = body["user"]["createdAt"].as_str().expect("timestamp");
    assert_eq!(created.len(), 24, "millisecond ISO timestamps: {created}");
    assert!(created.ends_with('Z'));

    assert!(auth_token.starts_with(&format!("{token}.")), "{auth_token}");
    let session_cookie = cookies
        .iter()
        .find(|c| c.starts_with("better-auth.session_token="))
        .expect("session cookie");
    assert!(session_cookie.contains("Max-Age=604800"));
    assert!(session_cookie.contains("HttpOnly"));
    assert!(session_cookie.contains("SameSite=Lax"));
}

#[tokio::test]
async fn sign_up_creates_the_personal_calendar_and_settings_in_the_same_step() {
    use entities::{calendar_members, calendars, user_settings};
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

    let app = spawn_app().await;
    let user = app.sign_up("grace@example.com").await;
    let conn = sea_orm::Database::connect(match app.ctx().settings.storage.database_url.as_ref() {
        Some(url) => url.expose().to_owned(),
        None => format!(
            "sqlite://{}",
            app.ctx()
                .settings
                .storage
                .data_dir
                .join("bowline.db")
                .display()
        ),
    })
    .await
    .expect("second connection");
    let owned = calendars::Entity::find()
        .filter(calendars::Column::CreatorId.eq(user.id.clone()))
        .all(&conn)
        .await
        .expect("query");
    assert_eq!(owned.len(), 1);
    assert!(owned[0].is_default);
    assert_eq!(owned[0].name, "Test User");
    let membership = calendar_members::Entity::find()
        .filter(calendar_members::Column::CalendarId.eq(owned[0].id))
        .one(&conn)
        .await
        .expect("query")
        .expect("owner membership");
    assert_eq!(membership.role, "owner");
    assert_eq!(membership.user_id.as_str(), user.id);
    let settings = user_settings::Entity::find_by_id(user.id.clone())
        .one(&conn)
        .await
        .expect("query")
        .expect("settings row");
    assert_eq!(settings.value["onboarded"], false);
}

#[tokio::test]
async fn duplicate_sign_up_and_bad_input_use_better_auth_codes() {
    let app = spawn_app().await;
    app.sign_up("dup@example.com").await;
    let again = app
        .post_json(
            "/api/auth/sign-up/email",
            &json!({ "email": "DUP@example.com", "password": "another password", "name": "X" }),
        )
        .await;
    assert_eq!(again.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = again.json().await.expect("JSON");
    assert_eq!(
        body,
        json!({ "message": "User already exists. Use another email.", "code": "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL" })
    );

    for (payload, status, code) in [
        (
            json!({ "email": "a@b.co", "password": "short", "name": "A" }),
            400,
            "PASSWORD_TOO_SHORT",
        ),
        (
            json!({ "email": "a@b.co", "password": "x".repeat(129), "name": "A" }),
            400,
            "PASSWORD_TOO_LONG",
        ),
        (
            json!({ "email": "not-an-email", "password": "long enough", "name": "A" }),
            400,
            "VALIDATION_ERROR",
        ),
        (
            json!({ "email": "a@b.co", "password": "long enough" }),
            400,
            "VALIDATION_ERROR",
        ),
    ] {
        let response = app.post_json("/api/auth/sign-up/email", &payload).await;
        assert_eq!(response.status().as_u16(), status, "{payload}");
        let body: Value = response.json().await.expect("JSON");
        assert_eq!(body["code"], code, "{payload}");
    }
    let missing_name = app
        .post_json(
            "/api/auth/sign-up/email",
            &json!({ "email": "a@b.co", "password": "long enough" }),
        )
        .await;
    let body: Value = missing_name.json().await.expect("JSON");
    assert_eq!(
        body["message"],
        "[body.name] Invalid input: expected string, received undefined"
    );

    let text = app
        .client
        .post(app.url("/api/auth/sign-up/email"))
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .expect("request");
    assert_eq!(text.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[tokio::test]
async fn sign_in_with_right_and_wrong_credentials() {
    let app = spawn_app().await;
    let user = app.sign_up("lin@example.com").await;
    let ok = app.sign_in("LIN@example.com", &user.password).await;
    assert_eq!(ok.status(), StatusCode::OK);
    let body: Value = ok.json().await.expect("JSON");
    assert_eq!(body["redirect"], false);
    assert!(body.get("url").is_none());
    assert_ne!(body["token"], user.token.as_str(), "a new session");

    for (email, password) in [
        ("lin@example.com", "wrong password"),
        ("nobody@example.com", "whatever1"),
    ] {
        let refused = app.sign_in(email, password).await;
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        let body: Value = refused.json().await.expect("JSON");
        assert_eq!(
            body,
            json!({ "message": "Invalid email or password", "code": "INVALID_EMAIL_OR_PASSWORD" })
        );
    }

    let with_callback = app
        .post_json(
            "/api/auth/sign-in/email",
            &json!({ "email": "lin@example.com", "password": user.password, "callbackURL": "/welcome" }),
        )
        .await;
    assert_eq!(with_callback.status(), StatusCode::OK);
    assert_eq!(with_callback.headers()["location"], "/welcome");
    let body: Value = with_callback.json().await.expect("JSON");
    assert_eq!(body["redirect"], true);
    assert_eq!(body["url"], "/welcome");

    let untrusted = app
        .post_json(
            "/api/auth/sign-in/email",
            &json!({ "email": "lin@example.com", "password": user.password, "callbackURL": "https://evil.example/x" }),
        )
        .await;
    assert_eq!(untrusted.status(), StatusCode::FORBIDDEN);
    let body: Value = untrusted.json().await.expect("JSON");
    assert_eq!(body["code"], "INVALID_CALLBACK_URL");
}

#[tokio::test]
async fn cookie_posts_need_a_trusted_origin_and_expo_origin_counts() {
    let app = spawn_app().await;
    let signed = app.sign_up("c@example.com").await.signed;
    let cookie = format!("better-auth.session_token={signed}");
    let no_origin = app
        .client
        .post(app.url("/api/auth/update-user"))
        .header("cookie", &cookie)
        .json(&json!({ "name": "C2" }))
        .send()
        .await
        .expect("request");
    assert_eq!(no_origin.status(), StatusCode::FORBIDDEN);
    let body: Value = no_origin.json().await.expect("JSON");
    assert_eq!(body["code"], "MISSING_OR_NULL_ORIGIN");

    let expo = app
        .client
        .post(app.url("/api/auth/update-user"))
        .header("cookie", &cookie)
        .header("expo-origin", "bowline://")
        .json(&json!({ "name": "C2" }))
        .send()
        .await
        .expect("request");
    assert_eq!(expo.status(), StatusCode::OK);
    assert!(expo.headers().contains_key("set-auth-token"));

    // Bearer-only requests are not subject to the origin check.
    let bearer = app
        .client
        .post(app.url("/api/auth/update-user"))
        .bearer_auth(&signed)
        .json(&json!({ "image": "https://example.com/c.png" }))
        .send()
        .await
        .expect("request");
    assert_eq!(bearer.status(), StatusCode::OK);
    let session = app.session(&signed).await;
    assert_eq!(session["user"]["name"], "C2");
    assert_eq!(session["user"]["image"], "https://example.com/c.png");
}

#[tokio::test]
async fn update_user_refuses_email_and_empty_updates() {
    let app = spawn_app().await;
    let user = app.sign_up("u@example.com").await;
    for (payload, status, expected) in [
        (
            json!({ "email": "x@example.com" }),
            400,
            json!({ "message": "Email can not be updated", "code": "EMAIL_CAN_NOT_BE_UPDATED" }),
        ),
        (
            json!({ "unknown": 1 }),
            400,
            json!({ "message": "No fields to update" }),
        ),
    ] {
        let response = app
            .as_user(Method::POST, "/api/auth/update-user", &user)
            .json(&payload)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status().as_u16(), status);
        assert_eq!(response.json::<Value>().await.expect("JSON"), expected);
    }
    let anonymous = app
        .client
        .post(app.url("/api/auth/update-user"))
        .json(&json!({ "name": "x" }))
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        anonymous.json::<Value>().await.expect("JSON"),
        json!({ "message": "Unauthorized", "code": "UNAUTHORIZED" })
    );
}

#[tokio::test]
async fn accounts_are_listed_without_secrets_and_the_last_cannot_be_unlinked() {
    let app = spawn_app().await;
    let user = app.sign_up("acc@example.com").await;
    let listed: Value = app.get_json_as(&user, "/api/auth/list-accounts").await;
    let accounts = listed.as_array().expect("array");
    assert_eq!(accounts.len(), 1);
    assert_eq!(accounts[0]["providerId"], "credential");
    assert_eq!(accounts[0]["accountId"], user.id.as_str());
    assert_eq!(accounts[0]["scopes"], json!([]));
    assert!(accounts[0].get("password").is_none() && accounts[0].get("passwordHash").is_none());
    let unlink = app
        .as_user(Method::POST, "/api/auth/unlink-account", &user)
        .json(&json!({ "accountId": accounts[0]["id"] }))
        .send()
        .await
        .expect("request");
    assert_eq!(unlink.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        unlink.json::<Value>().await.expect("JSON")["code"],
        "FAILED_TO_UNLINK_LAST_ACCOUNT"
    );
}

#[tokio::test]
async fn unknown_auth_paths_are_404_and_health_is_ok() {
    let app = spawn_app().await;
    assert_eq!(
        app.get("/api/auth/nope").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get("/api/auth/get-session/").await.status(),
        StatusCode::NOT_FOUND
    );
    let ok: Value = app.get("/api/auth/ok").await.json().await.expect("JSON");
    assert_eq!(ok, json!({ "ok": true }));
    let post_session = app
        .client
        .post(app.url("/api/auth/get-session"))
        .json(&json!({}))
        .send()
        .await
        .expect("request");
    assert_eq!(post_session.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn better_auth_rate_limits_sign_in_per_address() {
    // Behind a trusted proxy (loopback), which names each client in X-Forwarded-For.
    let app = spawn_app_with(|s| {
        s.auth.rate_limit = true;
        s.auth.trust_proxy_headers = true;
    })
    .await;
    let attempt = |ip: &'static str| {
        app.client
            .post(app.url("/api/auth/sign-in/email"))
            .header("x-forwarded-for", ip)
            .json(&json!({ "email": "nobody@example.com", "password": "whatever1" }))
            .send()
    };
    for _ in 0..3 {
        assert_eq!(
            attempt("203.0.113.7").await.expect("request").status(),
            StatusCode::UNAUTHORIZED
        );
    }
    let limited = attempt("203.0.113.7").await.expect("request");
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = limited.headers()["x-retry-after"]
        .to_str()
        .expect("text")
        .parse()
        .expect("seconds");
    assert!((1..=10).contains(&retry));
    assert_eq!(
        limited.json::<Value>().await.expect("JSON"),
        json!({ "message": "Too many requests. Please try again later." })
    );
    // Another address has its own budget.
    assert_eq!(
        attempt("203.0.113.8").await.expect("request").status(),
        StatusCode::UNAUTHORIZED
    );
}
