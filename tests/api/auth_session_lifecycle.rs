//! Sessions once signed in, on the better-auth wire: reading one by raw or signed bearer
//! and by cookie, sign-out, listing and revocation, password change (optionally ending the
//! other sessions), the daily sliding refresh, and member tokens of federated shadows.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::auth_email::set_cookies;
use crate::helpers::spawn_app;

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
    let user_id = body["user"]["id"].as_str().expect("user id").to_owned();

    // Pretend the session was last extended two days ago.
    let now = chrono::Utc::now();
    bowline::store::sessions::extend(
        &app.ctx().db,
        &user_id.as_str().into(),
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
    let app = spawn_app().await;
    app.store_shadow_user("fed_shadow", &[("mt1_current", 1), ("mt1_expired", 91)])
        .await;
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
