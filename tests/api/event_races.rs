//! Races and unknown ids that must not end in a 500 or linger: an event write racing the
//! deletion of another calendar it links into (a foreign-key failure) is a 403 with nothing
//! written; one the database aborts to break a deadlock runs again; commands naming a calendar that does not exist are refused without leaving its
//! actor alive.

use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, EntityTrait, TransactionTrait};
use serde_json::{Value, json};

use bowline::config::Secret;

use crate::helpers::{
    TestApp, TestUser, WAIT, event_body, sample, spawn_app, spawn_app_with, until_pg_count,
};

/// When the server's PostgreSQL sessions look for a deadlock after starting to wait.
const LINK_DEADLOCK_CHECK: &str = "5s";
/// When the test's own transaction does: well after the server's.
const TEST_DEADLOCK_CHECK: &str = "60s";

/// Runs `request` while another transaction deletes `calendar` and still holds its row:
/// the request gets past its checks (the membership is still committed), blocks on the
/// foreign key, and fails once the deletion commits. On SQLite, whose writers queue for
/// the whole database, the deletion simply commits first.
async fn racing_deletion(
    app: &TestApp,
    calendar: &str,
    request: reqwest::RequestBuilder,
) -> reqwest::Response {
    let conn = app.db_connection().await;
    if conn.get_database_backend() != sea_orm::DbBackend::Postgres {
        let uuid = uuid::Uuid::parse_str(calendar).expect("uuid");
        entities::calendars::Entity::delete_by_id(uuid)
            .exec(&conn)
            .await
            .expect("delete");
        return request.send().await.expect("request");
    }
    let deletion = conn.begin().await.expect("begin");
    deletion
        .execute_unprepared(&format!("DELETE FROM calendars WHERE id = '{calendar}'"))
        .await
        .expect("delete");
    let pending = tokio::spawn(async move { request.send().await.expect("request") });
    wait_for_a_lock_waiter(&conn, "the request waits for the deleted calendar's row").await;
    deletion.commit().await.expect("commit");
    pending.await.expect("request task")
}

/// Waits until a session of this test's PostgreSQL database waits for a row lock.
async fn wait_for_a_lock_waiter(conn: &sea_orm::DatabaseConnection, what: &str) {
    until_pg_count(
        conn,
        "SELECT count(*) AS n FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event_type = 'Lock'",
        |n| n > 0,
        what,
    )
    .await;
}

async fn calendar(app: &TestApp, owner: &TestUser, name: &str) -> String {
    app.create_calendar(owner, name).await["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

#[tokio::test]
async fn writes_racing_a_calendar_deletion_are_refused_not_500() {
    let app = spawn_app().await;
    let owner = app.sign_up("race-owner@example.com").await;
    let home = calendar(&app, &owner, "Home").await;
    let body = event_body(&[&home], "Racer", 9);
    let id = body["id"].as_str().expect("id").to_owned();
    assert_eq!(
        app.event_request(Method::POST, &owner, &body)
            .await
            .status(),
        StatusCode::CREATED
    );

    // An update adding a calendar being deleted.
    let doomed = calendar(&app, &owner, "Doomed by update").await;
    let mut update = body.clone();
    update["calendars"] = json!([home, doomed]);
    let request = app
        .as_user(Method::PUT, "/api/v1/events", &owner)
        .json(&update);
    let response = racing_deletion(&app, &doomed, request).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    // A link into one.
    let doomed = calendar(&app, &owner, "Doomed by link").await;
    let request = app
        .as_user(Method::POST, &format!("/api/v1/events/{id}/link"), &owner)
        .json(&json!({ "calendarID": doomed }));
    let response = racing_deletion(&app, &doomed, request).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    // A creation linking into one.
    let doomed = calendar(&app, &owner, "Doomed by create").await;
    let created = event_body(&[&home, &doomed], "Never", 10);
    let request = app
        .as_user(Method::POST, "/api/v1/events", &owner)
        .json(&created);
    let response = racing_deletion(&app, &doomed, request).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let error: Value = response.json().await.expect("JSON");
    assert!(error["requestId"].is_string());

    let read = app.read_events(&owner, "").await;
    let events = read["events"].as_array().expect("events");
    assert_eq!(events.len(), 1, "the creation wrote nothing");
    assert_eq!(
        events[0]["revision"], 1,
        "the update and the link wrote nothing"
    );
    assert_eq!(events[0]["calendars"], json!([home]));
}

#[tokio::test]
async fn commands_for_unknown_calendars_leave_no_actor_behind() {
    let app = spawn_app().await;
    let user = app.sign_up("unknown-calendar@example.com").await;
    let own = calendar(&app, &user, "Own").await;
    let body = event_body(&[&own], "Source", 9);
    let id = body["id"].as_str().expect("id").to_owned();
    assert_eq!(
        app.event_request(Method::POST, &user, &body).await.status(),
        StatusCode::CREATED
    );
    let mut live = app.ctx().actors.calendars.live();
    let unknown = || uuid::Uuid::new_v4().to_string();
    let calls: Vec<(Method, String, Option<Value>, StatusCode)> = vec![
        (
            Method::DELETE,
            format!("/api/v1/calendars/members/{}", unknown()),
            None,
            StatusCode::FORBIDDEN,
        ),
        (
            Method::PUT,
            "/api/v1/calendars".into(),
            Some(json!({ "id": unknown(), "name": "x", "color": "#000" })),
            StatusCode::FORBIDDEN,
        ),
        (
            Method::POST,
            format!("/api/v1/events/{id}/fork"),
            Some(json!({ "calendarID": unknown() })),
            StatusCode::FORBIDDEN,
        ),
        (
            Method::POST,
            "/api/v1/events".into(),
            Some(event_body(&[&unknown()], "Nowhere", 9)),
            StatusCode::FORBIDDEN,
        ),
    ];
    let before = *live.borrow_and_update();
    for (method, path, body, expected) in calls {
        let (status, _) = app.call(method, &path, &user, body.as_ref()).await;
        assert_eq!(status, expected, "{path}");
    }
    tokio::time::timeout(WAIT, live.wait_for(|n| *n <= before))
        .await
        .expect("the unknown calendars' actors stop at once")
        .expect("supervisor running");
}

/// How a side transaction holding rows against a link takes its two locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SideOrder {
    /// The target calendar's row, then the event's: the order every write takes.
    CalendarThenEvent,
    /// The event's row, then the target calendar's: against it.
    EventThenCalendar,
}

/// Links an event into a second calendar while, on PostgreSQL, a side transaction takes the
/// target calendar's and the event's rows in `order`, taking its second lock once the link
/// waits for its first. Returns the link's status, the retries the server counted, and
/// whether the database was PostgreSQL.
async fn link_against_a_side_writer(order: SideOrder) -> (StatusCode, u64, bool) {
    // PostgreSQL aborts the transaction whose deadlock check, run once `deadlock_timeout`
    // after it starts to wait, finds the cycle. The server's sessions check after
    // LINK_DEADLOCK_CHECK, time enough for this test to close the cycle even on a loaded
    // machine; the test's own transaction checks much later, so the link is the victim.
    let app = spawn_app_with(|settings| {
        // The link may wait out the deadlock check, then run again: more than the test
        // settings' 5 s for an actor's answer on a loaded machine.
        settings.actors.call_timeout_ms = 60_000;
        if let Some(url) = settings.storage.database_url.as_mut() {
            let separator = if url.expose().contains('?') { '&' } else { '?' };
            *url = Secret::new(format!(
                "{}{separator}options[deadlock_timeout]={LINK_DEADLOCK_CHECK}",
                url.expose()
            ));
        }
    })
    .await;
    let owner = app.sign_up("deadlock-owner@example.com").await;
    let home = calendar(&app, &owner, "Home").await;
    let target = calendar(&app, &owner, "Target").await;
    let body = event_body(&[&home], "Contended", 9);
    let id = body["id"].as_str().expect("id").to_owned();
    app.create_event(&owner, &body).await;
    let request = app
        .as_user(Method::POST, &format!("/api/v1/events/{id}/link"), &owner)
        .json(&json!({ "calendarID": target }));
    let conn = app.db_connection().await;
    let postgres = conn.get_database_backend() == sea_orm::DbBackend::Postgres;
    let response = if postgres {
        let shown = conn
            .query_one_raw(sea_orm::Statement::from_string(
                sea_orm::DbBackend::Postgres,
                "SHOW deadlock_timeout",
            ))
            .await
            .expect("query")
            .expect("row");
        assert_eq!(
            shown
                .try_get::<String>("", "deadlock_timeout")
                .expect("setting"),
            LINK_DEADLOCK_CHECK,
            "sessions on the server's URL check late enough"
        );
        let lock_calendar = format!("SELECT id FROM calendars WHERE id = '{target}' FOR UPDATE");
        let lock_event = format!("SELECT id FROM events WHERE id = '{id}' FOR UPDATE");
        let (first, second) = match order {
            SideOrder::CalendarThenEvent => (lock_calendar, lock_event),
            SideOrder::EventThenCalendar => (lock_event, lock_calendar),
        };
        let side = conn.begin().await.expect("begin");
        side.execute_unprepared(&format!(
            "SET LOCAL deadlock_timeout = '{TEST_DEADLOCK_CHECK}'"
        ))
        .await
        .expect("the test's transaction checks for deadlocks late");
        side.execute_unprepared(&first).await.expect("first lock");
        let pending = tokio::spawn(async move { request.send().await.expect("request") });
        wait_for_a_lock_waiter(&conn, "the link waits for the side's first lock").await;
        side.execute_unprepared(&second)
            .await
            .expect("the link's transaction, not this one, is any deadlock's victim");
        side.rollback().await.expect("rollback");
        pending.await.expect("request task")
    } else {
        // SQLite's writers queue for the whole database: no deadlock to break.
        request.send().await.expect("request")
    };
    let status = response.status();
    if status == StatusCode::OK {
        let linked: Value = response.json().await.expect("JSON");
        assert_eq!(linked["revision"], 2, "linked once");
        let read = app.read_events(&owner, "").await;
        let events = read["events"].as_array().expect("events");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0]["calendars"], json!([home, target]));
        assert_eq!(events[0]["revision"], 2);
    }
    let retries = sample(
        &app.metrics_text().await,
        "svc_db_transaction_retries_total ",
    )
    .expect("the retry counter is exported");
    (status, retries as u64, postgres)
}

#[tokio::test]
async fn a_link_waits_for_a_writer_that_locks_calendars_before_events_without_a_deadlock() {
    // The link takes its calendars first, as every write does, so it waits for the side's
    // calendar without holding the event the side asks for next.
    let (status, retries, _) = link_against_a_side_writer(SideOrder::CalendarThenEvent).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(retries, 0, "no deadlock, nothing run again");
}

#[tokio::test]
async fn a_link_the_database_aborts_to_break_a_deadlock_runs_again() {
    // A writer against the order (the event, then the calendar) closes a cycle with the
    // link, which holds its calendars and waits for the event: the database aborts the
    // link, which runs again once the side is done, and the retry is counted.
    let (status, retries, postgres) =
        link_against_a_side_writer(SideOrder::EventThenCalendar).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        retries,
        u64::from(postgres),
        "one deadlock on PostgreSQL, broken once"
    );
}

/// A batch of edits reads its calendars' members at its start under a lock that a change of
/// memberships taking the calendar `FOR NO KEY UPDATE` does not wait for, and confirms them
/// in its last statement: when they moved in between, the batch runs again on the new ones
/// (counted as a retry) rather than committing what the old ones allowed. On SQLite, whose
/// writers queue for the whole database, nothing can move in between.
#[tokio::test]
async fn a_batch_whose_members_moved_before_its_commit_runs_again() {
    let app = spawn_app_with(|settings| settings.actors.call_timeout_ms = 60_000).await;
    let owner = app.sign_up("moved-members@example.com").await;
    let home = calendar(&app, &owner, "Home").await;
    let mut body = event_body(&[&home], "Before", 9);
    app.create_event(&owner, &body).await;
    body["title"] = json!("After");
    let request = app
        .as_user(Method::PUT, "/api/v1/events", &owner)
        .json(&body);
    let conn = app.db_connection().await;
    let postgres = conn.get_database_backend() == sea_orm::DbBackend::Postgres;
    let response = if postgres {
        // What a membership change does to the calendar's row, held open until the update
        // waits for it in its last statement.
        let side = conn.begin().await.expect("begin");
        side.execute_unprepared(&format!(
            "UPDATE calendars SET members_version = members_version + 1 WHERE id = '{home}'"
        ))
        .await
        .expect("the members move");
        let pending = tokio::spawn(async move { request.send().await.expect("request") });
        wait_for_a_lock_waiter(&conn, "the update confirms its members").await;
        side.commit().await.expect("commit");
        pending.await.expect("request task")
    } else {
        request.send().await.expect("request")
    };
    assert_eq!(response.status(), StatusCode::OK);
    let updated: Value = response.json().await.expect("JSON");
    assert_eq!(
        (&updated["title"], &updated["revision"]),
        (&json!("After"), &json!(2)),
        "written once"
    );
    let retries = sample(
        &app.metrics_text().await,
        "svc_db_transaction_retries_total ",
    )
    .expect("the retry counter is exported");
    assert_eq!(
        retries as u64,
        u64::from(postgres),
        "run again on PostgreSQL"
    );
}

/// What the store says a refused event write lost its race to, read from the key the
/// database reports broken (by the constraint's name on PostgreSQL, by SQLite's result code
/// there), never from the message's text: a link into a calendar that is gone, a link of an
/// event that is gone, an answer by a user who is gone, a row written twice; an error that is
/// no such race is not explained as one.
#[tokio::test]
async fn a_refused_rows_broken_key_names_the_race_it_lost() {
    use bowline::store::events::{RaceLost, race_lost};
    use entities::{calendar_events, event_attendees};
    use sea_orm::{ActiveModelTrait, ActiveValue::Set};

    let app = spawn_app().await;
    let owner = app.sign_up("racer@example.com").await;
    let home = calendar(&app, &owner, "Home").await;
    let event = app
        .create_event(&owner, &event_body(&[&home], "Raced", 9))
        .await;
    let event = uuid::Uuid::parse_str(event["id"].as_str().expect("id")).expect("uuid");
    let home = uuid::Uuid::parse_str(&home).expect("uuid");
    let conn = app.db_connection().await;
    let postgres = conn.get_database_backend() == sea_orm::DbBackend::Postgres;
    let now = chrono::Utc::now();
    let link = |event_id: uuid::Uuid, calendar_id: uuid::Uuid| calendar_events::ActiveModel {
        event_id: Set(event_id.into()),
        calendar_id: Set(calendar_id.into()),
        created_at: Set(now),
        linked_by: Set(None),
    };

    let err = link(event, uuid::Uuid::new_v4())
        .insert(&conn)
        .await
        .expect_err("a link into no calendar");
    assert_eq!(race_lost(&err), Some(RaceLost::CalendarGone), "{err}");

    let err = link(event, home)
        .insert(&conn)
        .await
        .expect_err("the home link twice");
    assert_eq!(race_lost(&err), Some(RaceLost::KeyTaken), "{err}");

    // SQLite names no constraint, and serializes event writes so that only a link's
    // calendar can go meanwhile: there every foreign key reads as that.
    let err = link(uuid::Uuid::new_v4(), home)
        .insert(&conn)
        .await
        .expect_err("a link of no event");
    let expected = if postgres {
        RaceLost::EventGone
    } else {
        RaceLost::CalendarGone
    };
    assert_eq!(race_lost(&err), Some(expected), "{err}");

    let err = event_attendees::ActiveModel {
        event_id: Set(event.into()),
        user_id: Set("no-such-user".into()),
        status: Set("going".into()),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&conn)
    .await
    .expect_err("an answer by no user");
    let expected = if postgres {
        RaceLost::UserGone
    } else {
        RaceLost::CalendarGone
    };
    assert_eq!(race_lost(&err), Some(expected), "{err}");

    let err = conn
        .execute_unprepared("INSERT INTO calendar_events (event_id) VALUES (NULL)")
        .await
        .expect_err("a null key");
    assert_eq!(race_lost(&err), None, "{err}");
}
