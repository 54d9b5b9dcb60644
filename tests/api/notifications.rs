//! Batched change mails: a move or cancellation queues a mail for each attendee who has not
//! declined, except whoever made the change; one mail per person per batch, sent
//! `BATCH_DELAY_MS` after the first change; kept until the SMTP server accepts it; pending
//! across a restart.

use reqwest::{Method, StatusCode};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ConnectionTrait, EntityTrait};
use serde_json::{Value, json};

use crate::calendars::{Shared, shared};
use crate::helpers::{
    TestApp, TestUser, WAIT, event_body, spawn_app_sharing_database_with, spawn_app_with_mail,
    spawn_app_with_mail_and,
};
use crate::support::smtp::SmtpSink;

async fn answer(app: &TestApp, user: &TestUser, event: &str, status: &str) {
    let response = app
        .as_user(
            Method::PUT,
            &format!("/api/v1/events/{event}/attendance"),
            user,
        )
        .json(&json!({ "status": status }))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
}

async fn put(app: &TestApp, user: &TestUser, body: &Value) {
    assert_eq!(
        app.event_request(Method::PUT, user, body).await.status(),
        StatusCode::OK
    );
}

/// An event of the owner's in the shared calendar that the viewer goes to; its body.
async fn attended_event(app: &TestApp, s: &Shared, title: &str) -> Value {
    let body = event_body(&[&s.calendar], title, 9);
    assert_eq!(
        app.event_request(Method::POST, &s.owner, &body)
            .await
            .status(),
        StatusCode::CREATED
    );
    answer(app, &s.viewer, body["id"].as_str().expect("id"), "going").await;
    body
}

#[tokio::test]
async fn moves_and_cancellations_reach_attendees_in_one_mail_per_batch() {
    // The four edits below must land inside one batch window: the test settings' 200 ms is
    // shorter than four requests take on a loaded machine, so this server waits 3 s.
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail_and(&sink, |s| {
        s.mail.batch_delay_ms = 3_000;
    })
    .await;
    let s = shared(&app, "batch").await;
    let mut standup = event_body(&[&s.calendar], "Standup", 9);
    let mut party = event_body(&[&s.calendar], "Party", 20);
    for body in [&standup, &party] {
        assert_eq!(
            app.event_request(Method::POST, &s.owner, body)
                .await
                .status(),
            StatusCode::CREATED
        );
    }
    let standup_id = standup["id"].as_str().expect("id").to_owned();
    let party_id = party["id"].as_str().expect("id").to_owned();
    for event in [&standup_id, &party_id] {
        answer(&app, &s.viewer, event, "going").await;
        answer(&app, &s.editor, event, "declined").await;
    }

    // A title edit is not news; two moves and a cancellation are, in one batch.
    standup["title"] = json!("Daily standup");
    put(&app, &s.owner, &standup).await;
    standup["start"] = json!("2026-07-23T10:00:00.000Z");
    standup["end"] = json!("2026-07-23T10:15:00.000Z");
    put(&app, &s.owner, &standup).await;
    standup["start"] = json!("2026-07-23T11:00:00.000Z");
    standup["end"] = json!("2026-07-23T11:15:00.000Z");
    put(&app, &s.owner, &standup).await;
    party["isCanceled"] = json!(true);
    put(&app, &s.owner, &party).await;

    let mail = sink.next_mail().await;
    assert_eq!(
        mail.to,
        std::slice::from_ref(&s.viewer.email),
        "the declined editor and the acting owner get nothing"
    );
    assert_eq!(mail.subject(), "2 events changed");
    let text = mail.text();
    assert!(
        text.contains("Daily standup\u{201d} moved to Thursday 23 July 2026, 11:00"),
        "{text}"
    );
    assert!(text.contains("Party\u{201d} was cancelled"), "{text}");

    // The next change starts a new batch: the viewer's next mail holds only it.
    party["isCanceled"] = json!(false);
    put(&app, &s.owner, &party).await;
    standup["start"] = json!("2026-07-23T12:00:00.000Z");
    standup["end"] = json!("2026-07-23T12:15:00.000Z");
    put(&app, &s.editor, &standup).await;
    let second = sink.next_mail().await;
    let mut recipients: Vec<String> = second.to.clone();
    let third = sink.next_mail().await;
    recipients.extend(third.to.clone());
    recipients.sort();
    let mut expected = vec![s.viewer.email.clone(), s.owner.email.clone()];
    expected.sort();
    assert_eq!(
        recipients, expected,
        "the editor moved it: owner and viewer hear, the editor does not"
    );
    for mail in [second, third] {
        assert_eq!(mail.subject(), "An event moved");
        assert!(!mail.text().contains("Party"), "un-cancelling is silent");
    }
}

#[tokio::test]
async fn a_due_batch_nobody_announced_is_found_by_the_rescan() {
    // The mailer is told of the batch as due in ten minutes; the row is then made due now,
    // as if the instance that committed it had stopped before announcing it. Only the
    // mailer's own rescan of the database can find it within the wait.
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail_and(&sink, |s| {
        s.mail.batch_delay_ms = 600_000;
        s.mail.rescan_ms = 300;
    })
    .await;
    let s = shared(&app, "rescan").await;
    let mut body = attended_event(&app, &s, "Unannounced").await;
    body["start"] = json!("2026-07-23T13:00:00.000Z");
    body["end"] = json!("2026-07-23T14:00:00.000Z");
    put(&app, &s.owner, &body).await;
    let conn = app.db_connection().await;
    let made_due = conn
        .execute_unprepared("UPDATE pending_notifications SET due_at = created_at")
        .await
        .expect("make the batch due");
    assert_eq!(made_due.rows_affected(), 1);
    let mail = sink.next_mail().await;
    assert_eq!(mail.to, std::slice::from_ref(&s.viewer.email));
    assert_eq!(mail.subject(), "An event moved");
}

#[tokio::test]
async fn people_who_turned_change_mails_off_get_none() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let s = shared(&app, "optout").await;
    let mut body = event_body(&[&s.calendar], "Quiet", 9);
    assert_eq!(
        app.event_request(Method::POST, &s.owner, &body)
            .await
            .status(),
        StatusCode::CREATED
    );
    let id = body["id"].as_str().expect("id").to_owned();
    answer(&app, &s.viewer, &id, "going").await;
    answer(&app, &s.editor, &id, "maybe").await;
    let conn = app.db_connection().await;
    let row = entities::user_settings::Entity::find_by_id(s.viewer.id.clone())
        .one(&conn)
        .await
        .expect("query")
        .expect("settings");
    let mut value = row.value.clone();
    value["notificationEmails"]["eventChanged"] = json!(false);
    let mut active: entities::user_settings::ActiveModel = row.into();
    active.value = Set(value);
    active.update(&conn).await.expect("opt out");

    body["start"] = json!("2026-07-23T15:00:00.000Z");
    body["end"] = json!("2026-07-23T16:00:00.000Z");
    put(&app, &s.owner, &body).await;
    let mail = sink.next_mail().await;
    assert_eq!(
        mail.to,
        std::slice::from_ref(&s.editor.email),
        "maybe counts; the opted-out viewer gets nothing"
    );
}

#[tokio::test]
async fn a_refused_batch_is_kept_and_sent_when_the_server_accepts() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let s = shared(&app, "refused").await;
    let mut body = attended_event(&app, &s, "Retry me").await;
    sink.refuse_next(2);
    body["isCanceled"] = json!(true);
    put(&app, &s.owner, &body).await;
    let mail = sink.next_mail().await;
    assert_eq!(mail.subject(), "An event was cancelled");
    assert_eq!(mail.to, std::slice::from_ref(&s.viewer.email));
    // The row is deleted right after the server accepted the mail.
    let conn = app.db_connection().await;
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(10));
    tokio::time::timeout(WAIT, async {
        loop {
            tick.tick().await;
            use sea_orm::PaginatorTrait;
            let pending = entities::pending_notifications::Entity::find()
                .count(&conn)
                .await
                .expect("count");
            if pending == 0 {
                return;
            }
        }
    })
    .await
    .expect("rows go once the mail is accepted");
}

#[tokio::test]
async fn pending_batches_survive_a_restart_with_their_due_time() {
    // The first server cannot deliver (the sink refuses it), so however slow the machine,
    // the batch is still pending when it stops; the second one delivers it, not before its
    // due time and not later than its own (much longer) batch delay would.
    let sink = SmtpSink::start().await;
    let mut first = spawn_app_with_mail_and(&sink, |s| {
        s.mail.batch_delay_ms = 2_000;
    })
    .await;
    sink.refuse_next(u32::MAX);
    let s = shared(&first, "restart").await;
    let mut body = attended_event(&first, &s, "Survivor").await;
    body["start"] = json!("2026-07-23T13:00:00.000Z");
    body["end"] = json!("2026-07-23T14:00:00.000Z");
    put(&first, &s.owner, &body).await;
    let conn = first.db_connection().await;
    let pending = || async {
        entities::pending_notifications::Entity::find()
            .all(&conn)
            .await
            .expect("query")
            .into_iter()
            .map(|row| row.due_at)
            .collect::<Vec<_>>()
    };
    let due_before = pending().await;
    assert_eq!(due_before.len(), 1);
    first.stop_in_place().await.expect("clean stop");
    assert_eq!(pending().await, due_before, "still pending, due as before");
    assert!(
        sink.try_next_mail().await.is_none(),
        "nothing was delivered"
    );

    sink.refuse_next(0);
    let second = spawn_app_sharing_database_with(&first, |s| s.mail.batch_delay_ms = 600_000).await;
    let mail = tokio::time::timeout(WAIT, sink.next_mail())
        .await
        .expect("sent after the restart");
    assert!(
        chrono::Utc::now() >= due_before[0],
        "not before its due time"
    );
    assert_eq!(mail.to, std::slice::from_ref(&s.viewer.email));
    drop(second);
}
