//! A calendar actor authorizes a batch of creations with the roles it read for an earlier
//! batch where it can (checked in the batch's own inserts), so creations must follow every
//! change of those memberships, wherever it is made: a role changed, a member added or
//! removed, a linked calendar deleted — through the linked calendar's own actor or through
//! another server on the same database — and refusals must follow them too. On PostgreSQL
//! such a batch is one statement that takes its calendars' locks after its timestamp, so a
//! lock held past the write's time bound must refuse it whole; and those locks share the
//! calendar with its other writes of events, while a change of its memberships waits.

use std::time::Duration;

use bowline::store::Backend;
use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, TransactionTrait};
use serde_json::json;

use crate::calendars::{Shared, share_new_calendar, shared};
use crate::event_frames::drain;
use crate::helpers::{
    TestApp, TestUser, WAIT, event_body, spawn_app, spawn_app_sharing_database, spawn_app_with,
};

/// The status of a creation by `user` in `calendars` (the first is home).
async fn create(app: &TestApp, user: &TestUser, calendars: &[&str], title: &str) -> StatusCode {
    app.event_request(Method::POST, user, &event_body(calendars, title, 9))
        .await
        .status()
}

async fn set_role(app: &TestApp, owner: &TestUser, calendar: &str, user: &TestUser, role: &str) {
    let status = app.set_role(owner, calendar, &user.id, role).await.status();
    assert_eq!(status, StatusCode::OK, "set {role}");
}

async fn remove_member(app: &TestApp, owner: &TestUser, calendar: &str, user: &TestUser) {
    let path = format!("/api/v1/calendars/{calendar}/members/{}", user.id);
    let (status, _) = app.call(Method::DELETE, &path, owner, None).await;
    assert_eq!(status, StatusCode::OK, "remove {}", user.email);
}

/// A server, a shared calendar and a second one with the same members (its memberships
/// change through its own actor), and the editor's first creation linked to both, after
/// which the first calendar's actor knows the roles of both.
async fn two_shared_calendars(tag: &str) -> (TestApp, Shared, String) {
    let app = spawn_app().await;
    let s = shared(&app, tag).await;
    let other = share_new_calendar(&app, &s.owner, &s.editor, &s.viewer).await;
    let both = [s.calendar.as_str(), other.as_str()];
    assert_eq!(
        create(&app, &s.editor, &both, "first").await,
        StatusCode::CREATED
    );
    (app, s, other)
}

#[tokio::test]
async fn creations_follow_every_membership_change_of_their_linked_calendars() {
    let (app, s, other) = two_shared_calendars("batch-roles").await;
    let both = [s.calendar.as_str(), other.as_str()];

    // Demoted in the linked calendar: refused there, still allowed at home.
    set_role(&app, &s.owner, &other, &s.editor, "viewer").await;
    assert_eq!(
        create(&app, &s.editor, &both, "demoted").await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        create(&app, &s.editor, &both[..1], "home").await,
        StatusCode::CREATED
    );
    // Promoted again: allowed, though the home calendar's actor last read a viewer.
    set_role(&app, &s.owner, &other, &s.editor, "editor").await;
    assert_eq!(
        create(&app, &s.editor, &both, "promoted").await,
        StatusCode::CREATED
    );

    // A member who joins the linked calendar receives the next creation there.
    app.join_with_invite(&s.owner, &other, &s.outsider).await;
    let mut stream = app.stream(&s.outsider).await;
    let body = event_body(&both, "joined", 10);
    assert_eq!(
        app.event_request(Method::POST, &s.editor, &body)
            .await
            .status(),
        StatusCode::CREATED
    );
    let frames = drain(&app, &s.outsider, &mut stream).await;
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0]["type"], "event_created");
    assert_eq!(frames[0]["payload"]["id"], body["id"]);
    assert_eq!(frames[0]["payload"]["calendars"], json!([other]));

    // A member removed from the linked calendar receives no more creations there.
    remove_member(&app, &s.owner, &other, &s.outsider).await;
    let _ = drain(&app, &s.outsider, &mut stream).await;
    assert_eq!(
        create(&app, &s.editor, &both, "after removal").await,
        StatusCode::CREATED
    );
    assert!(drain(&app, &s.outsider, &mut stream).await.is_empty());
    // An editor removed from it may no longer create there.
    remove_member(&app, &s.owner, &other, &s.editor).await;
    assert_eq!(
        create(&app, &s.editor, &both, "removed").await,
        StatusCode::FORBIDDEN
    );

    // The linked calendar deleted: refused for its owner too.
    assert_eq!(
        create(&app, &s.owner, &both, "owner").await,
        StatusCode::CREATED
    );
    let (status, _) = app
        .call(
            Method::DELETE,
            "/api/v1/calendars",
            &s.owner,
            Some(&json!({ "id": other })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        create(&app, &s.owner, &both, "deleted").await,
        StatusCode::FORBIDDEN
    );

    // Exactly the acknowledged creations were written.
    assert_eq!(
        app.read_titles(&s.owner).await,
        [
            "after removal",
            "first",
            "home",
            "joined",
            "owner",
            "promoted"
        ]
    );
}

#[tokio::test]
async fn a_role_changed_through_another_server_is_followed() {
    let (app, s, other) = two_shared_calendars("batch-roles-servers").await;
    let both = [s.calendar.as_str(), other.as_str()];
    let second = spawn_app_sharing_database(&app).await;
    set_role(&second, &s.owner, &other, &s.editor, "viewer").await;
    assert_eq!(
        create(&app, &s.editor, &both, "demoted").await,
        StatusCode::FORBIDDEN
    );
    set_role(&second, &s.owner, &s.calendar, &s.editor, "viewer").await;
    assert_eq!(
        create(&app, &s.editor, &both[..1], "home").await,
        StatusCode::FORBIDDEN
    );
    set_role(&second, &s.owner, &s.calendar, &s.editor, "editor").await;
    assert_eq!(
        create(&app, &s.editor, &both[..1], "again").await,
        StatusCode::CREATED
    );
    assert_eq!(app.read_titles(&s.owner).await, ["again", "first"]);
}

/// Waits until a statement on this test's database has waited for a lock for longer than
/// `seconds`, by the database's clock (PostgreSQL).
async fn a_lock_waited_longer_than(db: &sea_orm::DatabaseConnection, seconds: f64) {
    let waited = sea_orm::Statement::from_sql_and_values(
        sea_orm::DbBackend::Postgres,
        "SELECT count(*) AS waiting FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event_type = 'Lock' \
           AND clock_timestamp() - query_start > make_interval(secs => $1)",
        [seconds.into()],
    );
    let mut every = tokio::time::interval(Duration::from_millis(50));
    loop {
        every.tick().await;
        let row = db
            .query_one_raw(waited.clone())
            .await
            .expect("pg_stat_activity")
            .expect("a count");
        if row.try_get::<i64>("", "waiting").expect("count") > 0 {
            return;
        }
    }
}

#[tokio::test]
async fn a_creation_held_by_a_lock_past_its_time_bound_is_refused_whole() {
    // Long enough that a 503 can only be the write's bound, not a call to the actor that
    // timed out.
    let app = spawn_app_with(|s| s.actors.call_timeout_ms = 120_000).await;
    if app.ctx().db.backend() != Backend::Postgres {
        // SQLite's writes all go through the server's one writer connection: no lock of
        // another's can hold a creation there.
        return;
    }
    let s = shared(&app, "batch-roles-bound").await;
    let home = [s.calendar.as_str()];
    // The calendar's actor now knows the roles: the next creation is one statement.
    assert_eq!(
        create(&app, &s.editor, &home, "first").await,
        StatusCode::CREATED
    );
    let db = app.db_connection().await;
    let holder = db.begin().await.expect("begin");
    holder
        .execute_unprepared(&format!(
            "SELECT 1 FROM calendars WHERE id = '{}' FOR UPDATE",
            s.calendar
        ))
        .await
        .expect("lock the calendar");
    // What is tested is a lock held past the bound (4 s in the database, 5 s in all).
    let release = async {
        tokio::time::timeout(WAIT, a_lock_waited_longer_than(&db, 4.2))
            .await
            .expect("the creation waits for the calendar's lock past the bound");
        holder.rollback().await.expect("release");
    };
    let (status, ()) = tokio::join!(create(&app, &s.editor, &home, "late"), release);
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(app.read_titles(&s.owner).await, ["first"]);
    assert_eq!(
        create(&app, &s.editor, &home, "after").await,
        StatusCode::CREATED
    );
    assert_eq!(app.read_titles(&s.owner).await, ["after", "first"]);
}

#[tokio::test]
async fn writes_of_a_calendars_events_go_on_beside_each_other_and_a_membership_change_waits() {
    let app = spawn_app().await;
    if app.ctx().db.backend() != Backend::Postgres {
        // SQLite's writes all go through the server's one writer connection: each holds the
        // whole database, so no write goes on beside another there.
        return;
    }
    let s = shared(&app, "batch-roles-beside").await;
    let home = [s.calendar.as_str()];
    assert_eq!(
        create(&app, &s.editor, &home, "first").await,
        StatusCode::CREATED
    );
    // The owner's full read, served from the cache until the calendar's events change.
    assert_eq!(app.read_titles(&s.owner).await, ["first"]);
    let db = app.db_connection().await;
    // Another write of the calendar's events holds its row as each batch's check of the
    // memberships holds it, to its commit.
    let holder = db.begin().await.expect("begin");
    holder
        .execute_unprepared(&format!(
            "SELECT 1 FROM calendars WHERE id = '{}' FOR SHARE",
            s.calendar
        ))
        .await
        .expect("share the calendar");

    // A batch of creations and a batch of edits commit beside it, without waiting for it
    // (a wait would outlast their time bound and refuse them), and the calendar's events
    // version still rises with each: the owner's next reads are not the cached one.
    let beside = tokio::time::timeout(WAIT, create(&app, &s.editor, &home, "beside"))
        .await
        .expect("a creation beside another write of the calendar");
    assert_eq!(beside, StatusCode::CREATED);
    assert_eq!(app.read_titles(&s.owner).await, ["beside", "first"]);
    let mut first = app.read_events(&s.editor, "").await["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|event| event["title"] == "first")
        .expect("first")
        .clone();
    first["title"] = json!("edited beside");
    let edited = tokio::time::timeout(WAIT, app.event_request(Method::PUT, &s.editor, &first))
        .await
        .expect("an edit beside another write of the calendar");
    assert_eq!(edited.status(), StatusCode::OK);
    assert_eq!(app.read_titles(&s.owner).await, ["beside", "edited beside"]);

    // A change of the calendar's memberships waits for the write that shares it.
    let release = async {
        tokio::time::timeout(WAIT, a_lock_waited_longer_than(&db, 0.3))
            .await
            .expect("the membership change waits for the write");
        holder.rollback().await.expect("release");
    };
    tokio::join!(
        remove_member(&app, &s.owner, &s.calendar, &s.editor),
        release
    );
    assert_eq!(
        create(&app, &s.editor, &home, "removed").await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(app.read_titles(&s.owner).await, ["beside", "edited beside"]);
}
