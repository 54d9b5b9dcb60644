//! A stream ends with the credential it was opened with, on this server at once: sign-out
//! ends that session's streams (not the user's others), revoking sessions, changing or
//! resetting the password and deleting the account end them all, a session that expires ends
//! its streams when it does, and a member token's stream ends when the token is revoked.
//! Other users' streams go on.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser, spawn_app, spawn_app_with, spawn_app_with_mail};
use crate::support::smtp::SmtpSink;
use crate::support::sse::SseClient;

/// A second session of `user` (signed in again); a user value carrying its token.
async fn second_session(app: &TestApp, user: &TestUser) -> TestUser {
    let response = app.sign_in(&user.email, &user.password).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.expect("JSON");
    TestUser {
        token: body["token"].as_str().expect("token").to_owned(),
        ..user.clone()
    }
}

/// The stream still delivers: a change of the user's reminder rules reaches it.
async fn still_delivers(app: &TestApp, user: &TestUser, stream: &mut SseClient) {
    let calendars = app.get_json_as(user, "/api/v1/calendars").await;
    let calendar = calendars[0]["id"].as_str().expect("id");
    let (status, _) = app
        .call(
            Method::PUT,
            &format!("/api/v1/reminders/calendars/{calendar}"),
            user,
            Some(&json!({ "rule": null })),
        )
        .await;
    assert!(status.is_success(), "{status}");
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "reminders_updated");
}

#[tokio::test]
async fn sign_out_ends_that_sessions_streams_and_revoking_ends_them_all() {
    let app = spawn_app().await;
    let user = app.sign_up("streams@example.com").await;
    let other = app.sign_up("bystander@example.com").await;
    let second = second_session(&app, &user).await;
    let mut first_stream = app.stream(&user).await;
    let mut second_stream = app.stream(&second).await;
    let mut bystander = app.stream(&other).await;

    let signed_out = app
        .as_user(Method::POST, "/api/auth/sign-out", &user)
        .send()
        .await
        .expect("request");
    assert_eq!(signed_out.status(), StatusCode::OK);
    first_stream.expect_end().await;
    still_delivers(&app, &second, &mut second_stream).await;

    let revoked = app
        .as_user(Method::POST, "/api/auth/revoke-sessions", &second)
        .json(&json!({}))
        .send()
        .await
        .expect("request");
    assert_eq!(revoked.status(), StatusCode::OK);
    second_stream.expect_end().await;
    let (status, _) = app
        .call(Method::GET, "/api/v1/calendars", &second, None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    still_delivers(&app, &other, &mut bystander).await;
}

#[tokio::test]
async fn a_password_change_or_reset_and_an_account_deletion_end_every_stream() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;

    let changer = app.sign_up("change@example.com").await;
    let mut stream = app.stream(&changer).await;
    let changed = app
        .as_user(Method::POST, "/api/auth/change-password", &changer)
        .json(&json!({ "currentPassword": changer.password, "newPassword": "brand new password", "revokeOtherSessions": true }))
        .send()
        .await
        .expect("request");
    assert_eq!(changed.status(), StatusCode::OK);
    stream.expect_end().await;

    let resetter = app.sign_up("reset@example.com").await;
    let mut stream = app.stream(&resetter).await;
    let asked = app
        .post_json(
            "/api/auth/request-password-reset",
            &json!({ "email": resetter.email }),
        )
        .await;
    assert_eq!(asked.status(), StatusCode::OK);
    let mail = sink.next_mail().await;
    let link = mail.link_starting_with(&format!("{}/reset-password?token=", app.base));
    let token = link.split("token=").nth(1).expect("token").to_owned();
    let reset = app
        .post_json(
            "/api/auth/reset-password",
            &json!({ "token": token, "newPassword": "a new password" }),
        )
        .await;
    assert_eq!(reset.status(), StatusCode::OK);
    stream.expect_end().await;

    let leaver = app.sign_up("leaver@example.com").await;
    let mut stream = app.stream(&leaver).await;
    let deleted = app
        .as_user(Method::POST, "/api/auth/delete-user", &leaver)
        .json(&json!({ "password": leaver.password }))
        .send()
        .await
        .expect("request");
    assert_eq!(deleted.status(), StatusCode::OK);
    stream.expect_end().await;
}

#[tokio::test]
async fn a_session_that_expires_ends_its_stream_when_it_does() {
    use entities::sessions;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, sea_query::Expr};

    let app = spawn_app_with(|s| s.storage.session_cache_ms = 0).await;
    let user = app.sign_up("expiring@example.com").await;
    let db = app.db_connection().await;
    let soon = chrono::Utc::now() + chrono::Duration::milliseconds(1_500);
    sessions::Entity::update_many()
        .col_expr(sessions::Column::ExpiresAt, Expr::value(soon))
        .filter(sessions::Column::UserId.eq(user.id.as_str()))
        .exec(&db)
        .await
        .expect("expiring soon");
    let mut stream = app.stream(&user).await;
    stream.expect_end().await;
    assert!(chrono::Utc::now() >= soon, "not before it expired");
}

#[tokio::test]
async fn a_member_tokens_stream_ends_when_the_token_is_revoked() {
    let app = spawn_app().await;
    let owner = app.sign_up("origin@example.com").await;
    let calendar = app.create_calendar(&owner, "Shared far").await;
    let calendar_id = calendar["id"].as_str().expect("id");
    app.store_shadow_user("fed_stream", &[("mt1_stream", 0)])
        .await;
    app.store_membership(calendar_id, "fed_stream").await;
    let mut stream = SseClient::open(
        app.client
            .get(app.url("/api/stream"))
            .bearer_auth("mt1_stream"),
    )
    .await;
    // Removing the shadow's last membership revokes its member tokens.
    let removed = app
        .as_user(
            Method::DELETE,
            &format!("/api/v1/calendars/{calendar_id}/members/fed_stream"),
            &owner,
        )
        .send()
        .await
        .expect("request");
    assert_eq!(removed.status(), StatusCode::OK);
    // (The removal's own frame may come first.)
    stream.expect_end().await;
    let again = app
        .client
        .get(app.url("/api/stream"))
        .bearer_auth("mt1_stream")
        .send()
        .await
        .expect("request");
    assert_eq!(again.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_stream_opened_just_as_its_session_ends_does_not_outlive_it() {
    let app = spawn_app().await;
    let user = app.sign_up("race@example.com").await;
    // Many opens racing a revocation: whichever wins, no stream of the revoked session
    // stays open.
    let mut opens = Vec::new();
    for _ in 0..10 {
        let request = app.as_user(Method::GET, "/api/stream", &user);
        opens.push(tokio::spawn(async move { request.send().await }));
    }
    let revoked = app
        .as_user(Method::POST, "/api/auth/revoke-sessions", &user)
        .json(&json!({}))
        .send()
        .await
        .expect("request");
    assert_eq!(revoked.status(), StatusCode::OK);
    for open in opens {
        let response = open.await.expect("task").expect("request");
        if response.status() == StatusCode::OK {
            let mut stream = SseClient::from_response(response);
            stream.expect_end().await;
        } else {
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        }
    }
}
