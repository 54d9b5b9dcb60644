//! Full events reads are cached per user and validated against the calendar versions the
//! database keeps: after every kind of change, on this server or another one sharing the
//! database, a full read equals a read the cache never serves (a delta from long ago), and
//! an unchanged read is served from the cache. On PostgreSQL the validation runs on
//! connections of its own, and losing one costs a read nothing.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, DbBackend};
use serde_json::{Value, json};

use crate::helpers::{
    TestApp, TestUser, WAIT, event_body, pg_value, sample, spawn_app, spawn_app_sharing_database,
};

const HITS: &str = "svc_event_read_cache_total{outcome=\"hit\"}";

/// Asserts that `user`'s full read (twice: the second is a hit) equals their uncached read.
async fn reads_agree(app: &TestApp, user: &TestUser, step: &str) -> Value {
    let hits_before = sample(&app.metrics_text().await, HITS).unwrap_or(0.0);
    let full = app.read_events(user, "").await;
    let uncached = app
        .read_events(user, "?since=2000-01-01T00:00:00.000Z")
        .await;
    assert_eq!(
        full["events"], uncached["events"],
        "{step}: the full read is what the database holds"
    );
    assert_eq!(full["deletedIds"], json!([]));
    let again = app.read_events(user, "").await;
    assert_eq!(again["events"], full["events"], "{step}: nothing changed");
    let hits_after = sample(&app.metrics_text().await, HITS).unwrap_or(0.0);
    assert!(
        hits_after > hits_before,
        "{step}: an unchanged read comes from the cache"
    );
    full["events"].clone()
}

fn ids(events: &Value) -> Vec<String> {
    let mut ids: Vec<String> = events
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["id"].as_str().expect("id").to_owned())
        .collect();
    ids.sort();
    ids
}

async fn ok(app: &TestApp, method: Method, path: &str, user: &TestUser, body: Option<&Value>) {
    let (status, answer) = app.call(method, path, user, body).await;
    assert!(status.is_success(), "{path}: {status} {answer}");
}

#[tokio::test]
async fn cached_full_reads_follow_every_kind_of_change() {
    let app = spawn_app().await;
    let owner = app.sign_up("cache-owner@example.com").await;
    let member = app.sign_up("cache-member@example.com").await;
    let a = app.create_calendar(&owner, "A").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let b = app.create_calendar(&owner, "B").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let both = async |step: &str| {
        reads_agree(&app, &owner, step).await;
        reads_agree(&app, &member, step).await
    };
    both("empty").await;

    let invite = app.create_invite(&owner, &b, None).await;
    let token = invite["id"].as_str().expect("token").to_owned();
    assert_eq!(app.join(&member, &b, &token).await.status(), StatusCode::OK);
    assert!(ids(&both("joined").await).is_empty());

    let mut first = event_body(&[&a], "First", 9);
    let first_id = first["id"].as_str().expect("id").to_owned();
    let created = app.event_request(Method::POST, &owner, &first).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    assert!(ids(&both("created in A").await).is_empty());

    let second = event_body(&[&b], "Second", 10);
    let second_id = second["id"].as_str().expect("id").to_owned();
    let created = app.event_request(Method::POST, &owner, &second).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    assert_eq!(ids(&both("created in B").await), vec![second_id.clone()]);

    first["title"] = json!("First, renamed");
    let updated = app.event_request(Method::PUT, &owner, &first).await;
    assert_eq!(updated.status(), StatusCode::OK);
    both("updated").await;

    let link = format!("/api/v1/events/{first_id}/link");
    ok(
        &app,
        Method::POST,
        &link,
        &owner,
        Some(&json!({ "calendarID": b })),
    )
    .await;
    assert_eq!(ids(&both("linked into B").await).len(), 2);

    let unlink = json!({ "id": first_id, "unlinkCalendarID": b });
    let unlinked = app.event_request(Method::DELETE, &owner, &unlink).await;
    assert_eq!(unlinked.status(), StatusCode::OK);
    assert_eq!(ids(&both("unlinked from B").await), vec![second_id.clone()]);

    let fork = format!("/api/v1/events/{second_id}/fork");
    ok(
        &app,
        Method::POST,
        &fork,
        &owner,
        Some(&json!({ "calendarID": a })),
    )
    .await;
    both("forked into A").await;

    let attendance = format!("/api/v1/events/{second_id}/attendance");
    ok(
        &app,
        Method::PUT,
        &attendance,
        &member,
        Some(&json!({ "status": "going" })),
    )
    .await;
    both("attendance").await;

    let leave = format!("/api/v1/calendars/members/{b}");
    ok(&app, Method::DELETE, &leave, &member, None).await;
    assert!(ids(&both("left B").await).is_empty());

    assert_eq!(app.join(&member, &b, &token).await.status(), StatusCode::OK);
    assert_eq!(ids(&both("joined again").await), vec![second_id.clone()]);

    let remove = format!("/api/v1/calendars/{b}/members/{}", member.id);
    ok(&app, Method::DELETE, &remove, &owner, None).await;
    assert!(ids(&both("removed from B").await).is_empty());

    assert_eq!(app.join(&member, &b, &token).await.status(), StatusCode::OK);
    let deleted = app
        .event_request(Method::DELETE, &owner, &json!({ "id": second_id }))
        .await;
    assert_eq!(deleted.status(), StatusCode::OK);
    assert!(ids(&both("deleted").await).is_empty());

    let third = event_body(&[&b], "Third", 11);
    let created = app.event_request(Method::POST, &owner, &third).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    assert_eq!(ids(&both("created again").await).len(), 1);
    let calendar = json!({ "id": b, "name": "B", "color": "#7A8BA3" });
    ok(
        &app,
        Method::DELETE,
        "/api/v1/calendars",
        &owner,
        Some(&calendar),
    )
    .await;
    assert!(ids(&both("calendar deleted").await).is_empty());

    let ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nBEGIN:VEVENT\r\n\
               UID:x@t\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20260723T090000Z\r\n\
               DTEND:20260723T100000Z\r\nSUMMARY:Imported\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let imported = app
        .as_user(
            Method::POST,
            "/api/v1/calendars/import?name=Imported",
            &owner,
        )
        .header("content-type", "text/calendar")
        .body(ics)
        .send()
        .await
        .expect("request");
    assert_eq!(imported.status(), StatusCode::CREATED);
    let owner_events = reads_agree(&app, &owner, "imported").await;
    assert!(
        owner_events
            .as_array()
            .expect("events")
            .iter()
            .any(|e| e["title"] == "Imported")
    );
}

#[tokio::test]
async fn a_change_through_another_server_invalidates_the_cache() {
    let first = spawn_app().await;
    let second = spawn_app_sharing_database(&first).await;
    let owner = first.sign_up("cache-two@example.com").await;
    let calendar = first.create_calendar(&owner, "Shared db").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert!(ids(&reads_agree(&first, &owner, "empty").await).is_empty());

    let mut event = event_body(&[&calendar], "Elsewhere", 9);
    let created = second.event_request(Method::POST, &owner, &event).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let seen = reads_agree(&first, &owner, "created on the other server").await;
    assert_eq!(seen[0]["title"], "Elsewhere");

    event["title"] = json!("Renamed elsewhere");
    let updated = second.event_request(Method::PUT, &owner, &event).await;
    assert_eq!(updated.status(), StatusCode::OK);
    let seen = reads_agree(&first, &owner, "updated on the other server").await;
    assert_eq!(seen[0]["title"], "Renamed elsewhere");
}

/// `application_name` of the PostgreSQL connections that validate cached reads.
const READ_CACHE_CONNECTION: &str = "bowline read cache";

/// How many of this test database's PostgreSQL sessions validate cached reads.
async fn read_cache_sessions(conn: &sea_orm::DatabaseConnection) -> i64 {
    pg_value(
        conn,
        &format!(
            "SELECT count(*) AS n FROM pg_stat_activity \
             WHERE datname = current_database() AND application_name = '{READ_CACHE_CONNECTION}'"
        ),
    )
    .await
}

#[tokio::test]
async fn a_lost_validation_connection_costs_a_read_nothing_and_is_replaced() {
    let app = spawn_app().await;
    let owner = app.sign_up("cache-lane@example.com").await;
    let calendar = app.create_calendar(&owner, "Lane").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let before = event_body(&[&calendar], "Before", 9);
    let created = app.event_request(Method::POST, &owner, &before).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    assert_eq!(ids(&reads_agree(&app, &owner, "one event").await).len(), 1);

    let conn = app.db_connection().await;
    let postgres = conn.get_database_backend() == DbBackend::Postgres;
    if postgres {
        // The hit was validated on a connection of its own.
        assert_eq!(read_cache_sessions(&conn).await, 1);
        let terminate = format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND application_name = '{READ_CACHE_CONNECTION}'"
        );
        conn.execute_unprepared(&terminate)
            .await
            .expect("terminate");
        let mut tick = tokio::time::interval(Duration::from_millis(5));
        tokio::time::timeout(WAIT, async {
            while read_cache_sessions(&conn).await > 0 {
                tick.tick().await;
            }
        })
        .await
        .expect("the validating session ends");
    }

    let after = event_body(&[&calendar], "After", 10);
    let created = app.event_request(Method::POST, &owner, &after).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    // The first read meets the lost connection, validates on the pool, and sees the change.
    let events = reads_agree(&app, &owner, "after the connection was lost").await;
    assert_eq!(ids(&events).len(), 2);
    if postgres {
        assert_eq!(
            read_cache_sessions(&conn).await,
            1,
            "a new connection took the lost one's place"
        );
    }
}

/// The slot whose row a commit on this connection raises in `calendar_events_raised`
/// (migration `m20261201_000027`: the backend's process id modulo 16).
async fn raise_slot(txn: &sea_orm::DatabaseTransaction) -> i32 {
    pg_value(txn, "SELECT (pg_backend_pid() % 16)::int AS n").await
}

#[tokio::test]
async fn two_writes_of_one_calendar_raise_its_version_without_waiting_for_each_other() {
    use sea_orm::TransactionTrait;
    let app = spawn_app().await;
    let owner = app.sign_up("cache-slots@example.com").await;
    let calendar = app.create_calendar(&owner, "Slots").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let mut touched = Vec::new();
    for (title, hour) in [("First", 9), ("Second", 10)] {
        let created = app
            .create_event(&owner, &event_body(&[&calendar], title, hour))
            .await;
        touched.push(created["id"].as_str().expect("id").to_owned());
    }
    reads_agree(&app, &owner, "two events").await;

    let conn = app.db_connection().await;
    if conn.get_database_backend() == DbBackend::Postgres {
        // Two transactions on connections whose commits raise different slots.
        let first = conn.begin().await.expect("begin");
        let slot = raise_slot(&first).await;
        let mut spare = Vec::new();
        let second = loop {
            let txn = conn.begin().await.expect("begin");
            if raise_slot(&txn).await != slot {
                break txn;
            }
            assert!(spare.len() < 4, "no connection with another slot");
            spare.push(txn);
        };
        for (txn, event) in [(&first, &touched[0]), (&second, &touched[1])] {
            txn.execute_unprepared(&format!(
                "UPDATE events SET title = title || '.' WHERE id = '{event}'"
            ))
            .await
            .expect("update");
        }
        // The first raises the calendar's version now, as its commit would, and holds the
        // row it raised; the second's raise must not wait for it.
        first
            .execute_unprepared("SET CONSTRAINTS ALL IMMEDIATE")
            .await
            .expect("the first raise");
        second
            .execute_unprepared("SET LOCAL lock_timeout = '5s'")
            .await
            .expect("timeout");
        second
            .execute_unprepared("SET CONSTRAINTS ALL IMMEDIATE")
            .await
            .expect("the second raise waits for nothing the first holds");
        second.commit().await.expect("commit");
        first.commit().await.expect("commit");
        drop(spare);
        // Both changes count: the cached read is invalidated and a fresh read has them.
        let events = reads_agree(&app, &owner, "after both raises").await;
        let titles: Vec<&str> = events
            .as_array()
            .expect("events")
            .iter()
            .map(|event| event["title"].as_str().expect("title"))
            .collect();
        assert_eq!(titles.len(), 2);
        assert!(
            titles.iter().all(|title| title.ends_with('.')),
            "{titles:?}"
        );
    }
}
