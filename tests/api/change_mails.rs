//! Batched change mails beyond the happy path: the batch's due time is fixed by the first
//! change and never extended; a change arriving while its row's mail is in flight is not
//! lost; only attendees who can still see the event hear about it (when it changes and when
//! the batch is sent); a failed send is abandoned per row, once that row is 24 hours old.

use chrono::{Duration, Utc};
use reqwest::{Method, StatusCode};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

use crate::calendars::{Shared, shared};
use crate::helpers::{TestApp, TestUser, WAIT, event_body, spawn_app_with_mail_and};
use crate::support::smtp::SmtpSink;
use entities::pending_notifications::{self as pending, Column};

/// A server mailing `sink` with a batch delay of `delay_ms`.
async fn mailing(sink: &SmtpSink, delay_ms: u64) -> TestApp {
    spawn_app_with_mail_and(sink, |s| {
        s.mail.batch_delay_ms = delay_ms;
    })
    .await
}

/// Creates an event of the owner in the shared calendar that `attendees` go to.
pub(crate) async fn attended(
    app: &TestApp,
    s: &Shared,
    title: &str,
    attendees: &[&TestUser],
) -> Value {
    let body = event_body(&[&s.calendar], title, 9);
    assert_eq!(
        app.event_request(Method::POST, &s.owner, &body)
            .await
            .status(),
        StatusCode::CREATED
    );
    let id = body["id"].as_str().expect("id");
    for user in attendees {
        let (status, _) = app
            .call(
                Method::PUT,
                &format!("/api/v1/events/{id}/attendance"),
                user,
                Some(&json!({ "status": "going" })),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    body
}

/// Moves `body` to start at `hour` (as the owner).
pub(crate) async fn move_to(app: &TestApp, s: &Shared, body: &mut Value, hour: u32) {
    body["start"] = json!(format!("2026-07-23T{hour:02}:00:00.000Z"));
    body["end"] = json!(format!("2026-07-23T{hour:02}:30:00.000Z"));
    assert_eq!(
        app.event_request(Method::PUT, &s.owner, body)
            .await
            .status(),
        StatusCode::OK
    );
}

async fn rows(app: &TestApp) -> Vec<pending::Model> {
    let conn = app.db_connection().await;
    pending::Entity::find().all(&conn).await.expect("rows")
}

fn row_for<'a>(rows: &'a [pending::Model], user: &TestUser, event: &Value) -> &'a pending::Model {
    let event = uuid::Uuid::parse_str(event["id"].as_str().expect("id")).expect("uuid");
    rows.iter()
        .find(|row| row.user_id.as_str() == user.id && row.subject_id == event)
        .expect("a pending row")
}

#[tokio::test]
async fn the_first_change_fixes_the_due_time_and_later_ones_never_extend_it() {
    let sink = SmtpSink::start().await;
    let app = mailing(&sink, 60_000).await;
    let s = shared(&app, "never-extended").await;
    let mut standup = attended(&app, &s, "Standup", &[&s.viewer]).await;
    let mut party = attended(&app, &s, "Party", &[&s.viewer]).await;
    move_to(&app, &s, &mut standup, 10).await;
    let first = row_for(&rows(&app).await, &s.viewer, &standup).clone();
    assert_eq!(
        first.due_at - first.created_at,
        Duration::milliseconds(60_000)
    );
    move_to(&app, &s, &mut party, 20).await;
    move_to(&app, &s, &mut standup, 11).await;
    let now = rows(&app).await;
    let party_row = row_for(&now, &s.viewer, &party);
    assert!(party_row.created_at > first.created_at);
    assert_eq!(
        party_row.due_at, first.due_at,
        "a later change joins the batch"
    );
    let standup_row = row_for(&now, &s.viewer, &standup);
    assert_eq!(
        standup_row.due_at, first.due_at,
        "a repeated change does not move it"
    );
    assert_eq!(standup_row.revision, 2);
    assert_eq!(standup_row.payload["start"], "2026-07-23T11:00:00.000Z");
}

#[tokio::test]
async fn a_change_while_the_mail_is_in_flight_is_sent_in_the_next_batch() {
    let sink = SmtpSink::start().await;
    let app = mailing(&sink, 60_000).await;
    let s = shared(&app, "in-flight").await;
    let mut standup = attended(&app, &s, "Standup", &[&s.viewer]).await;
    move_to(&app, &s, &mut standup, 10).await;
    // A sender claims the batch (as the mailer does when it is due) and starts sending…
    let db = &app.ctx().db;
    let claimed = bowline::store::notifications::claim_due(
        db,
        Utc::now() + Duration::minutes(5),
        Duration::minutes(2),
    )
    .await
    .expect("claim");
    assert_eq!(claimed.len(), 1);
    // …the event moves again meanwhile…
    move_to(&app, &s, &mut standup, 12).await;
    // …and the first mail is accepted: the newer change must stay, ready to be sent.
    bowline::store::notifications::finish(db, &claimed)
        .await
        .expect("finish");
    let left = rows(&app).await;
    assert_eq!(left.len(), 1, "the newer change was not lost");
    assert_eq!(left[0].payload["start"], "2026-07-23T12:00:00.000Z");
    assert_eq!(left[0].claimed_until, None, "released for the next batch");
    assert!(left[0].due_at > claimed[0].due_at, "a new batch, due later");
}

#[tokio::test]
async fn only_attendees_who_still_see_the_event_hear_about_it() {
    let sink = SmtpSink::start().await;
    let app = mailing(&sink, 60_000).await;
    let s = shared(&app, "still-see").await;
    let mut standup = attended(&app, &s, "Standup", &[&s.viewer, &s.editor]).await;
    // The viewer leaves before the change: nothing is queued for them.
    let leave = format!("/api/v1/calendars/members/{}", s.calendar);
    let (status, _) = app.call(Method::DELETE, &leave, &s.viewer, None).await;
    assert_eq!(status, StatusCode::OK);
    move_to(&app, &s, &mut standup, 10).await;
    let queued: Vec<String> = rows(&app)
        .await
        .into_iter()
        .map(|r| r.user_id.into_string())
        .collect();
    assert_eq!(queued, std::slice::from_ref(&s.editor.id));

    // The editor is removed after the change, before the batch is sent: no mail either.
    let remove = format!("/api/v1/calendars/{}/members/{}", s.calendar, s.editor.id);
    let (status, _) = app.call(Method::DELETE, &remove, &s.owner, None).await;
    assert_eq!(status, StatusCode::OK);
    let conn = app.db_connection().await;
    let row = rows(&app).await.remove(0);
    let mut due: pending::ActiveModel = row.into();
    due.due_at = Set(Utc::now());
    due.update(&conn).await.expect("make the batch due");
    app.ctx().actors.notify_batch(Utc::now());
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(10));
    tokio::time::timeout(WAIT, async {
        while !rows(&app).await.is_empty() {
            tick.tick().await;
        }
    })
    .await
    .expect("the batch was handled");
    assert!(sink.try_next_mail().await.is_none(), "nobody was mailed");
}

#[tokio::test]
async fn a_failed_send_abandons_only_the_rows_older_than_a_day() {
    let sink = SmtpSink::start().await;
    let app = mailing(&sink, 60_000).await;
    let s = shared(&app, "abandon").await;
    let old = attended(&app, &s, "Old news", &[&s.viewer]).await;
    let fresh = attended(&app, &s, "Fresh news", &[&s.viewer]).await;
    // No route can make a day-old row: insert the batch as a day of failed sends left it.
    let conn = app.db_connection().await;
    let now = Utc::now();
    for (event, created_at) in [(&old, now - Duration::hours(25)), (&fresh, now)] {
        pending::ActiveModel {
            id: Set(uuid::Uuid::new_v4()),
            user_id: Set(s.viewer.id.as_str().into()),
            kind: Set("moved".into()),
            subject_id: Set(uuid::Uuid::parse_str(event["id"].as_str().expect("id")).expect("id")),
            payload: Set(json!({
                "title": event["title"],
                "start": "2026-07-23T15:00:00.000Z",
                "end": "2026-07-23T16:00:00.000Z",
                "isAllDay": false,
                "wasStart": event["start"],
            })),
            due_at: Set(now),
            claimed_until: Set(None),
            created_at: Set(created_at),
            revision: Set(1),
        }
        .insert(&conn)
        .await
        .expect("insert");
    }
    sink.refuse_next(1);
    app.ctx().actors.notify_batch(now);
    let mail = sink.next_mail().await;
    assert_eq!(mail.to, std::slice::from_ref(&s.viewer.email));
    let text = mail.text();
    assert!(text.contains("Fresh news"), "{text}");
    assert!(!text.contains("Old news"), "abandoned: {text}");
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(10));
    tokio::time::timeout(WAIT, async {
        loop {
            let left = pending::Entity::find()
                .filter(Column::UserId.eq(s.viewer.id.as_str()))
                .all(&conn)
                .await
                .expect("rows");
            if left.is_empty() {
                return;
            }
            tick.tick().await;
        }
    })
    .await
    .expect("both rows are gone: one abandoned, one sent");
}
