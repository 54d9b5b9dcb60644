//! Email and password sign-in on the better-auth wire: sign-up (with its signup effects),
//! sign-in, sessions by bearer (raw and signed) and cookie, sign-out, session listing and
//! revocation, password change, profile update, accounts.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{spawn_app, spawn_app_with};

fn set_cookies(response: &reqwest::Response) -> Vec<String> {
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
    assert_eq!(membership.user_id, user.id);
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
async fn get_session_by_raw_bearer_signed_bearer_and_cookie() {
    let app = spawn_app().await;
    let user = app.sign_up("s@example.com").await;
    let (raw, signed) = (user.token.clone(), user.signed.clone());
    let encoded = signed
        .replace('+', "%2B")
        .replace('/', "%2F")
        .replace('=', "%3D");

    for bearer in [&raw, &signed, &encoded] {
        let session = app.session(bearer).await;
        assert_eq!(session["user"]["email"], "s@example.com", "{bearer}");
        assert_eq!(session["session"]["token"], raw.as_str());
    }
    // The Expo client replays the cookie unencoded.
    let cookie_session = app
        .client
        .get(app.url("/api/auth/get-session"))
        .header("cookie", format!("better-auth.session_token={signed}"))
        .send()
        .await
        .expect("request");
    assert_eq!(cookie_session.headers()["cache-control"], "no-store");
    let cookie_session: Value = cookie_session.json().await.expect("JSON");
    assert_eq!(cookie_session["user"]["email"], "s@example.com");

    // Anonymous, forged signature, unsigned cookie: all `null`.
    let forged = format!("{raw}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    for request in [
        app.client.get(app.url("/api/auth/get-session")),
        app.client
            .get(app.url("/api/auth/get-session"))
            .bearer_auth(&forged),
        app.client
            .get(app.url("/api/auth/get-session"))
            .header("cookie", format!("better-auth.session_token={raw}")),
    ] {
        let response = request.send().await.expect("request");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.text().await.expect("body"), "null");
    }
}

#[tokio::test]
async fn sign_out_ends_the_session_and_clears_cookies() {
    let app = spawn_app().await;
    let user = app.sign_up("out@example.com").await;
    let response = app
        .as_user(Method::POST, "/api/auth/sign-out", &user)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    let cleared = set_cookies(&response);
    assert!(
        cleared
            .iter()
            .any(|c| c.starts_with("better-auth.session_token=;") && c.contains("Max-Age=0"))
    );
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body, json!({ "success": true }));
    let after = app
        .as_user(Method::GET, "/api/auth/get-session", &user)
        .send()
        .await
        .expect("request");
    assert_eq!(after.text().await.expect("body"), "null");
    // Signing out anonymously still succeeds.
    let anonymous = app
        .client
        .post(app.url("/api/auth/sign-out"))
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), StatusCode::OK);
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
async fn sessions_are_listed_and_revoked() {
    let app = spawn_app().await;
    let first = app.sign_up("multi@example.com").await;
    let second_token = {
        let body: Value = app
            .sign_in("multi@example.com", &first.password)
            .await
            .json()
            .await
            .expect("JSON");
        body["token"].as_str().expect("token").to_owned()
    };
    let listed: Value = app
        .as_user(Method::GET, "/api/auth/list-sessions", &first)
        .header("user-agent", "bowline-test")
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    let sessions = listed.as_array().expect("array");
    assert_eq!(sessions.len(), 2);
    let own = sessions
        .iter()
        .find(|s| s["token"] == first.token.as_str())
        .expect("own session");
    assert!(own["expiresAt"].as_str().is_some());
    let other = sessions
        .iter()
        .find(|s| s["token"] != first.token.as_str())
        .expect("other");
    assert_ne!(
        other["token"],
        second_token.as_str(),
        "other sessions' tokens are never shown"
    );

    // Revoking the other session by its handle ends it.
    let revoked = app
        .as_user(Method::POST, "/api/auth/revoke-session", &first)
        .json(&json!({ "token": other["token"] }))
        .send()
        .await
        .expect("request");
    assert_eq!(
        revoked.json::<Value>().await.expect("JSON"),
        json!({ "status": true })
    );
    let gone = app
        .client
        .get(app.url("/api/auth/get-session"))
        .bearer_auth(&second_token)
        .send()
        .await
        .expect("request");
    assert_eq!(gone.text().await.expect("body"), "null");

    // revoke-sessions ends all, including the caller's.
    let all = app
        .as_user(Method::POST, "/api/auth/revoke-sessions", &first)
        .send()
        .await
        .expect("request");
    assert_eq!(all.status(), StatusCode::OK);
    let after = app
        .as_user(Method::GET, "/api/auth/get-session", &first)
        .send()
        .await
        .expect("request");
    assert_eq!(after.text().await.expect("body"), "null");
}

#[tokio::test]
async fn change_password_checks_the_current_one_and_can_revoke_sessions() {
    let app = spawn_app().await;
    let user = app.sign_up("pw@example.com").await;
    let wrong = app
        .as_user(Method::POST, "/api/auth/change-password", &user)
        .json(&json!({ "currentPassword": "not it", "newPassword": "brand new password" }))
        .send()
        .await
        .expect("request");
    assert_eq!(wrong.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        wrong.json::<Value>().await.expect("JSON")["code"],
        "INVALID_PASSWORD"
    );

    let changed = app
        .as_user(Method::POST, "/api/auth/change-password", &user)
        .json(&json!({ "currentPassword": user.password, "newPassword": "brand new password", "revokeOtherSessions": true }))
        .send()
        .await
        .expect("request");
    assert_eq!(changed.status(), StatusCode::OK);
    assert!(changed.headers().contains_key("set-auth-token"));
    let body: Value = changed.json().await.expect("JSON");
    let new_token = body["token"].as_str().expect("new token").to_owned();
    let old = app
        .as_user(Method::GET, "/api/auth/get-session", &user)
        .send()
        .await
        .expect("request");
    assert_eq!(
        old.text().await.expect("body"),
        "null",
        "the old bearer stopped working"
    );
    let new = app.session(&new_token).await;
    assert_eq!(new["user"]["id"], user.id.as_str());

    let old_password = app.sign_in(&user.email, &user.password).await;
    assert_eq!(old_password.status(), StatusCode::UNAUTHORIZED);
    let new_password = app.sign_in(&user.email, "brand new password").await;
    assert_eq!(new_password.status(), StatusCode::OK);
}

#[tokio::test]
async fn accounts_are_listed_without_secrets_and_the_last_cannot_be_unlinked() {
    let app = spawn_app().await;
    let user = app.sign_up("acc@example.com").await;
    let listed: Value = app
        .as_user(Method::GET, "/api/auth/list-accounts", &user)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
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
    let app = spawn_app_with(|s| s.auth.rate_limit = true).await;
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

#[tokio::test]
async fn get_session_slides_a_day_old_session_and_hands_out_the_cookie_again() {
    let app = spawn_app().await;
    let user = app.sign_up("slide@example.com").await;
    let fresh = app
        .as_user(Method::GET, "/api/auth/get-session", &user)
        .send()
        .await
        .expect("request");
    assert!(
        !fresh.headers().contains_key("set-auth-token"),
        "a fresh session is not re-set"
    );
    let body: Value = fresh.json().await.expect("JSON");
    let session_id = body["session"]["id"].as_str().expect("id").to_owned();

    // Pretend the session was last extended two days ago.
    let now = chrono::Utc::now();
    bowline::store::sessions::extend(
        &app.ctx().db,
        &session_id,
        now + chrono::Duration::days(5),
        now,
    )
    .await
    .expect("age the session");
    let slid = app
        .as_user(Method::GET, "/api/auth/get-session", &user)
        .send()
        .await
        .expect("request");
    assert!(slid.headers().contains_key("set-auth-token"));
    let body: Value = slid.json().await.expect("JSON");
    let expires: chrono::DateTime<chrono::Utc> = body["session"]["expiresAt"]
        .as_str()
        .expect("expiry")
        .parse()
        .expect("timestamp");
    assert!(
        expires > now + chrono::Duration::days(6),
        "extended to seven days: {expires}"
    );

    let no_refresh = app
        .as_user(
            Method::GET,
            "/api/auth/get-session?disableRefresh=true",
            &user,
        )
        .send()
        .await
        .expect("request");
    assert!(!no_refresh.headers().contains_key("set-auth-token"));
}

#[tokio::test]
async fn a_member_token_authenticates_its_shadow_user_for_90_days() {
    use entities::{member_tokens, users};
    use sea_orm::{ActiveModelTrait, ActiveValue::Set};

    let app = spawn_app().await;
    let conn = app.db_connection().await;
    let now = chrono::Utc::now();
    users::ActiveModel {
        id: Set("fed_shadow".into()),
        name: Set("Remote Ruth".into()),
        email: Set("ruth@remote.example".into()),
        email_verified: Set(false),
        image: Set(None),
        is_external: Set(true),
        home_server: Set(Some("https://remote.example".into())),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&conn)
    .await
    .expect("shadow user");
    for (token, age_days) in [("mt1_current", 1), ("mt1_expired", 91)] {
        member_tokens::ActiveModel {
            id: Set(uuid::Uuid::new_v4()),
            user_id: Set("fed_shadow".into()),
            token_hash: Set(bowline::auth::tokens::sha256_hex(token)),
            created_at: Set(now - chrono::Duration::days(age_days)),
        }
        .insert(&conn)
        .await
        .expect("member token");
    }
    let stream = app
        .client
        .get(app.url("/api/stream"))
        .bearer_auth("mt1_current")
        .send()
        .await
        .expect("request");
    assert_eq!(stream.status(), StatusCode::OK, "identity by member token");
    drop(stream);
    let expired = app
        .client
        .get(app.url("/api/stream"))
        .bearer_auth("mt1_expired")
        .send()
        .await
        .expect("request");
    assert_eq!(expired.status(), StatusCode::UNAUTHORIZED);
    // A member token is not a better-auth session.
    let session = app
        .client
        .get(app.url("/api/auth/get-session"))
        .bearer_auth("mt1_current")
        .send()
        .await
        .expect("request");
    assert_eq!(session.text().await.expect("body"), "null");
    // Nor does it start account deletion, which needs a real account.
    let delete = app
        .client
        .delete(app.url("/api/v1/users"))
        .bearer_auth("mt1_current")
        .send()
        .await
        .expect("request");
    assert_eq!(delete.status(), StatusCode::FORBIDDEN);
}
