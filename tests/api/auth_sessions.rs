//! Sessions and accounts beyond the basics in `auth_email`: better-auth's rate limits keyed
//! by address and path (sign-up and sign-in are separate budgets), `revoke-other-sessions`,
//! the fresh-session rule of `list-sessions` and `unlink-account` (`403 SESSION_NOT_FRESH`),
//! a successful unlink, and the session cache following this server's changes at once.

use bowline::actors::scheduler::{RunOutcome, SchedulerMsg};
use bowline::actors::{ActorKind, ask_slot};
use reqwest::{Method, StatusCode};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, EntityTrait};
use serde_json::{Value, json};

use crate::auth_social::{APPLE_BUNDLE, app_with};
use crate::helpers::{TestApp, TestUser, WAIT, spawn_app, spawn_app_with};
use crate::support::idp::{IdentityProvider, apple_claims};

/// A sign-up from `ip` (behind a proxy, as `x-forwarded-for` says).
async fn sign_up_from(app: &TestApp, ip: &str, email: &str) -> reqwest::Response {
    app.client
        .post(app.url("/api/auth/sign-up/email"))
        .header("origin", app.base.as_str())
        .header("x-forwarded-for", ip)
        .json(&json!({ "email": email, "password": "long enough password", "name": "Limit" }))
        .send()
        .await
        .expect("request")
}

/// A sign-in from `ip`.
async fn sign_in_from(app: &TestApp, ip: &str, email: &str) -> reqwest::Response {
    app.client
        .post(app.url("/api/auth/sign-in/email"))
        .header("origin", app.base.as_str())
        .header("x-forwarded-for", ip)
        .json(&json!({ "email": email, "password": "long enough password" }))
        .send()
        .await
        .expect("request")
}

#[tokio::test]
async fn sign_up_and_sign_in_have_separate_budgets_per_address() {
    // Behind a trusted proxy (loopback), which names each client in X-Forwarded-For.
    let app = spawn_app_with(|s| {
        s.auth.rate_limit = true;
        s.auth.trust_proxy_headers = true;
    })
    .await;
    let ip = "203.0.113.20";
    for n in 0..3 {
        let response = sign_up_from(&app, ip, &format!("limit{n}@example.com")).await;
        assert_eq!(response.status(), StatusCode::OK, "sign-up {n}");
    }
    let limited = sign_up_from(&app, ip, "limit3@example.com").await;
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers().contains_key("x-retry-after"));
    assert_eq!(
        limited.json::<Value>().await.expect("JSON"),
        json!({ "message": "Too many requests. Please try again later." })
    );
    // Three sign-ups used up the sign-up budget only: sign-in still has its three.
    for n in 0..3 {
        let response = sign_in_from(&app, ip, "limit0@example.com").await;
        assert_eq!(response.status(), StatusCode::OK, "sign-in {n}");
    }
    let limited = sign_in_from(&app, ip, "limit0@example.com").await;
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    // Another address has budgets of its own.
    let other = sign_up_from(&app, "203.0.113.21", "limit4@example.com").await;
    assert_eq!(other.status(), StatusCode::OK);

    // One window per address and path; the scheduler's pruning keeps windows still open.
    let ctx = app.ctx();
    assert_eq!(ctx.limits.tracked(), 3);
    let outcome = ask_slot(&ctx.actors.scheduler, ActorKind::Scheduler, WAIT, |reply| {
        SchedulerMsg::RunNow {
            task: "rate_limits".into(),
            reply,
        }
    })
    .await;
    assert_eq!(outcome.expect("the task runs"), RunOutcome::Completed);
    assert_eq!(ctx.limits.tracked(), 3);
}

/// A new session of `user` (a sign-in); its raw token.
async fn another_session(app: &TestApp, user: &TestUser) -> String {
    let body: Value = app
        .sign_in(&user.email, &user.password)
        .await
        .json()
        .await
        .expect("JSON");
    body["token"].as_str().expect("token").to_owned()
}

#[tokio::test]
async fn revoke_other_sessions_keeps_only_the_callers() {
    let app = spawn_app().await;
    let user = app.sign_up("others@example.com").await;
    let phone = another_session(&app, &user).await;
    let tablet = another_session(&app, &user).await;
    let other_user = app.sign_up("bystander@example.com").await;

    // No body and no content type, as better-auth's client sends it.
    let response = app
        .as_user(Method::POST, "/api/auth/revoke-other-sessions", &user)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.json::<Value>().await.expect("JSON"),
        json!({ "status": true })
    );
    assert_eq!(
        app.session(&user.token).await["user"]["id"],
        user.id.as_str()
    );
    for token in [&phone, &tablet] {
        assert_eq!(app.session(token).await, Value::Null, "other session ended");
    }
    assert_eq!(
        app.session(&other_user.token).await["user"]["id"],
        other_user.id.as_str(),
        "another user's sessions are untouched"
    );
    let unauthenticated = app
        .client
        .post(app.url("/api/auth/revoke-other-sessions"))
        .send()
        .await
        .expect("request");
    assert_eq!(unauthenticated.status(), StatusCode::UNAUTHORIZED);
}

/// Makes `user`'s current session look `days` old, as if this server had changed it (a
/// change behind its back shows once its session cache lets go).
async fn age_session(app: &TestApp, user: &TestUser, days: i64) {
    let session = app.session(&user.token).await;
    let id = session["session"]["id"]
        .as_str()
        .expect("session id")
        .to_owned();
    let db = app.db_connection().await;
    let row = entities::sessions::Entity::find_by_id(id)
        .one(&db)
        .await
        .expect("read session")
        .expect("session row");
    let mut active: entities::sessions::ActiveModel = row.into();
    active.created_at = Set(chrono::Utc::now() - chrono::Duration::days(days));
    active.update(&db).await.expect("age the session");
    let user_id = session["user"]["id"].as_str().expect("user id");
    app.ctx()
        .db
        .credentials_changed(&bowline::domain::ids::UserId::from(user_id));
}

#[tokio::test]
async fn listing_sessions_and_unlinking_need_a_fresh_session() {
    let app = spawn_app().await;
    let user = app.sign_up("stale@example.com").await;
    let (_, accounts) = app
        .call(Method::GET, "/api/auth/list-accounts", &user, None)
        .await;
    age_session(&app, &user, 2).await;
    let not_fresh = json!({ "message": "Session is not fresh", "code": "SESSION_NOT_FRESH" });
    let (status, body) = app
        .call(Method::GET, "/api/auth/list-sessions", &user, None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body, not_fresh);
    let unlink = json!({ "accountId": accounts[0]["id"] });
    let (status, body) = app
        .call(
            Method::POST,
            "/api/auth/unlink-account",
            &user,
            Some(&unlink),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body, not_fresh);
    // The session itself still works where freshness is not required.
    let (status, _) = app
        .call(Method::GET, "/api/auth/list-accounts", &user, None)
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_linked_account_is_unlinked_by_its_row_id() {
    let idp = IdentityProvider::start().await;
    let app = app_with(&idp).await;
    let user = app.sign_up("unlink@example.com").await;
    let token = idp.sign(
        "key-a",
        &apple_claims(APPLE_BUNDLE, "a-unlink", "unlink@privaterelay.appleid.com"),
    );
    let link = json!({ "provider": "apple", "idToken": { "token": token } });
    let (status, _) = app
        .call(Method::POST, "/api/auth/link-social", &user, Some(&link))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, accounts) = app
        .call(Method::GET, "/api/auth/list-accounts", &user, None)
        .await;
    let apple = accounts
        .as_array()
        .expect("accounts")
        .iter()
        .find(|a| a["providerId"] == "apple")
        .expect("the Apple account")
        .clone();
    assert_eq!(apple["accountId"], "a-unlink");

    let unlink = json!({ "accountId": apple["id"] });
    let (status, body) = app
        .call(
            Method::POST,
            "/api/auth/unlink-account",
            &user,
            Some(&unlink),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({ "status": true }));
    let (_, accounts) = app
        .call(Method::GET, "/api/auth/list-accounts", &user, None)
        .await;
    let providers: Vec<&Value> = accounts
        .as_array()
        .expect("accounts")
        .iter()
        .map(|a| &a["providerId"])
        .collect();
    assert_eq!(providers, vec![&json!("credential")]);
    // The Apple identity no longer signs in as this user.
    let token = idp.sign(
        "key-a",
        &apple_claims(APPLE_BUNDLE, "a-unlink", "unlink@privaterelay.appleid.com"),
    );
    let response = app
        .client
        .post(app.url("/api/auth/sign-in/social"))
        .json(&json!({ "provider": "apple", "idToken": { "token": token } }))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.expect("JSON");
    assert_ne!(body["user"]["id"], user.id.as_str());
}

#[tokio::test]
async fn a_cached_session_follows_this_servers_changes_at_once() {
    let app = spawn_app().await;
    let user = app.sign_up("cached@example.com").await;
    let other = app.sign_up("other-cached@example.com").await;
    // Used once, each session is now in the server's session cache.
    for someone in [&user, &other] {
        let (status, _) = app
            .call(Method::GET, "/api/auth/get-session", someone, None)
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    let rename = json!({ "name": "Renamed" });
    let (status, _) = app
        .call(Method::POST, "/api/auth/update-user", &user, Some(&rename))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, session) = app
        .call(Method::GET, "/api/auth/get-session", &user, None)
        .await;
    assert_eq!(session["user"]["name"], "Renamed", "{session}");

    let (status, _) = app
        .call(Method::POST, "/api/auth/sign-out", &user, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app.call(Method::GET, "/api/v1/events", &user, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "signed out at once");
    let (status, _) = app.call(Method::GET, "/api/v1/events", &other, None).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "another user's session is untouched"
    );
}
