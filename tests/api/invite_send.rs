//! Mailing an invite link: at most 20 per hour per account (the 21st is a 429 and sends
//! nothing); the limit is the sender's, not the invite's or the server's.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{TestApp, TestUser, spawn_app_with_mail};
use crate::support::smtp::SmtpSink;

async fn send(app: &TestApp, user: &TestUser, invite: &str, to: &str) -> (StatusCode, Value) {
    app.call(
        Method::POST,
        &format!("/api/v1/calendars/invites/{invite}/send"),
        user,
        Some(&json!({ "email": to })),
    )
    .await
}

#[tokio::test]
async fn twenty_invite_mails_per_hour_per_account() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let s = shared(&app, "invite-limit").await;
    let invite = app.create_invite(&s.owner, &s.calendar, None).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    for n in 0..20 {
        let (status, _) = send(&app, &s.owner, &invite, &format!("friend{n}@example.com")).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "mail {}", n + 1);
        assert_eq!(
            sink.next_mail().await.to,
            [format!("friend{n}@example.com")]
        );
    }
    let (status, body) = send(&app, &s.owner, &invite, "one-too-many@example.com").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(body["error"], "Too many requests. Try again later.");
    assert!(
        sink.try_next_mail().await.is_none(),
        "the 21st was not sent"
    );
    // Another member with the invite right still has their own allowance.
    let (status, _) = send(&app, &s.editor, &invite, "from-the-editor@example.com").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(sink.next_mail().await.to, ["from-the-editor@example.com"]);
}
