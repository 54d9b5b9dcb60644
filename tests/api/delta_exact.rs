//! Exact delta reads: `GET /api/v1/events?since=<serverTime>` returns each change once, in
//! the first delta read whose `serverTime` is at or after it, never again, and never misses
//! one that committed late (a write in flight holds `serverTime` before its stamp).

use std::collections::{BTreeMap, BTreeSet};

use reqwest::{Method, StatusCode};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{TestApp, TestUser, WAIT, event_body, spawn_app, spawn_app_sharing_database};

/// One delta read: the events' `(id, revision, title)`, the deleted ids and `serverTime`.
struct Delta {
    events: Vec<(String, i64, String)>,
    deleted: Vec<String>,
    server_time: String,
}

async fn delta(app: &TestApp, user: &TestUser, since: &str) -> Delta {
    let encoded: String = url::form_urlencoded::byte_serialize(since.as_bytes()).collect();
    let read = app.read_events(user, &format!("?since={encoded}")).await;
    Delta {
        events: read["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|event| {
                (
                    event["id"].as_str().expect("id").to_owned(),
                    event["revision"].as_i64().expect("revision"),
                    event["title"].as_str().expect("title").to_owned(),
                )
            })
            .collect(),
        deleted: read["deletedIds"]
            .as_array()
            .expect("deletedIds")
            .iter()
            .map(|id| id.as_str().expect("id").to_owned())
            .collect(),
        server_time: read["serverTime"].as_str().expect("serverTime").to_owned(),
    }
}

async fn server_time_of_full_read(app: &TestApp, user: &TestUser) -> String {
    app.read_events(user, "").await["serverTime"]
        .as_str()
        .expect("serverTime")
        .to_owned()
}

async fn personal_calendar(app: &TestApp, user: &TestUser) -> String {
    let listed: Value = app.get_json_as(user, "/api/v1/calendars").await;
    listed[0]["id"].as_str().expect("id").to_owned()
}

/// Reads deltas from `since` until one returns `id` (a change that committed in the
/// millisecond of a read's `serverTime` comes with the next one), checking that nothing
/// else comes; the `serverTime` of that read.
async fn until_returned(app: &TestApp, user: &TestUser, since: &str, id: &str) -> (String, i64) {
    let mut since = since.to_owned();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let read = delta(app, user, &since).await;
        assert!(read.deleted.is_empty(), "nothing was deleted");
        since = read.server_time;
        match read.events.as_slice() {
            [] => {}
            [(returned, revision, _)] if returned == id => return (since, *revision),
            other => panic!("only {id} changed, got {:?}", other),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the change was never returned"
        );
    }
}

#[tokio::test]
async fn an_unchanged_event_is_never_returned_again() {
    let app = spawn_app().await;
    let ann = app.sign_up("ann-exact@example.com").await;
    let home = personal_calendar(&app, &ann).await;
    let before = server_time_of_full_read(&app, &ann).await;
    let body = event_body(&[&home], "once", 9);
    let id = body["id"].as_str().expect("id").to_owned();
    app.create_event(&ann, &body).await;
    let (mut since, revision) = until_returned(&app, &ann, &before, &id).await;
    assert_eq!(revision, 1);
    for _ in 0..5 {
        let read = delta(&app, &ann, &since).await;
        assert!(read.events.is_empty(), "returned again: {:?}", read.events);
        assert!(read.deleted.is_empty());
        since = read.server_time;
    }
    // A full read's serverTime is past the event as well.
    let since = server_time_of_full_read(&app, &ann).await;
    let read = delta(&app, &ann, &since).await;
    assert!(read.events.is_empty(), "returned again: {:?}", read.events);
}

#[tokio::test]
async fn each_change_is_returned_exactly_once_across_consecutive_deltas() {
    let app = spawn_app().await;
    let ann = app.sign_up("ann-once@example.com").await;
    let home = personal_calendar(&app, &ann).await;
    let mut since = server_time_of_full_read(&app, &ann).await;
    let mut body = event_body(&[&home], "v1", 9);
    let id = body["id"].as_str().expect("id").to_owned();
    app.create_event(&ann, &body).await;
    let mut seen: Vec<i64> = Vec::new();
    for step in 2..=6 {
        body["title"] = json!(format!("v{step}"));
        let status = app.event_request(Method::PUT, &ann, &body).await.status();
        assert_eq!(status, StatusCode::OK);
        let read = delta(&app, &ann, &since).await;
        seen.extend(read.events.iter().map(|(_, revision, _)| *revision));
        since = read.server_time;
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    while seen.last() != Some(&6) {
        assert!(tokio::time::Instant::now() < deadline, "missed: {seen:?}");
        let read = delta(&app, &ann, &since).await;
        seen.extend(read.events.iter().map(|(_, revision, _)| *revision));
        since = read.server_time;
    }
    // Each revision returned at most once, in order, ending with the last.
    assert!(seen.windows(2).all(|pair| pair[0] < pair[1]), "{seen:?}");
    let read = delta(&app, &ann, &since).await;
    assert!(read.events.is_empty(), "{id} returned again");
}

#[tokio::test]
async fn a_write_held_open_across_a_delta_read_is_returned_by_the_next() {
    let app = spawn_app().await;
    let ann = app.sign_up("ann-held@example.com").await;
    let home = personal_calendar(&app, &ann).await;
    let before = server_time_of_full_read(&app, &ann).await;
    let body = event_body(&[&home], "before", 9);
    let id = body["id"].as_str().expect("id").to_owned();
    app.create_event(&ann, &body).await;
    let (since, _) = until_returned(&app, &ann, &before, &id).await;

    // A slow writer: a write transaction of the server's, stamped the server's way, that
    // changes the event and stays open across a delta read.
    let db = &app.ctx().db;
    let txn = db.begin_write().await.expect("begin");
    let stamp = txn.stamp().await.expect("stamp");
    let event_id = Uuid::parse_str(&id).expect("uuid");
    entities::events::Entity::update_many()
        .col_expr(entities::events::Column::Title, Expr::value("held"))
        .col_expr(entities::events::Column::UpdatedAt, Expr::value(stamp))
        .col_expr(
            entities::events::Column::Revision,
            Expr::col(entities::events::Column::Revision).add(1),
        )
        .filter(entities::events::Column::Id.eq(event_id))
        .exec(&txn)
        .await
        .expect("update");
    let during = delta(&app, &ann, &since).await;
    assert!(during.events.is_empty(), "uncommitted: {:?}", during.events);
    let during_time = chrono::DateTime::parse_from_rfc3339(&during.server_time)
        .expect("serverTime")
        .to_utc();
    assert!(during_time < stamp, "serverTime passed a write in flight");
    txn.commit().await.expect("commit");

    let after = delta(&app, &ann, &during.server_time).await;
    assert_eq!(
        after.events,
        vec![(id.clone(), 2, "held".to_owned())],
        "the late commit is returned"
    );
    let again = delta(&app, &ann, &after.server_time).await;
    assert!(again.events.is_empty(), "returned twice");
}

#[tokio::test]
async fn a_deletion_is_reported_exactly_once() {
    let app = spawn_app().await;
    let ann = app.sign_up("ann-gone@example.com").await;
    let home = personal_calendar(&app, &ann).await;
    let before = server_time_of_full_read(&app, &ann).await;
    let body = event_body(&[&home], "doomed", 9);
    let id = body["id"].as_str().expect("id").to_owned();
    app.create_event(&ann, &body).await;
    let (mut since, _) = until_returned(&app, &ann, &before, &id).await;
    let status = app
        .event_request(Method::DELETE, &ann, &json!({ "id": id }))
        .await
        .status();
    assert!(status.is_success(), "{status}");
    let mut reported = 0;
    let deadline = tokio::time::Instant::now() + WAIT;
    while reported == 0 {
        assert!(tokio::time::Instant::now() < deadline, "never reported");
        let read = delta(&app, &ann, &since).await;
        assert!(read.events.is_empty());
        reported += read.deleted.iter().filter(|gone| **gone == id).count();
        since = read.server_time;
    }
    assert_eq!(reported, 1);
    let read = delta(&app, &ann, &since).await;
    assert!(read.deleted.is_empty(), "reported twice");
}

/// What one reader took from its delta reads.
#[derive(Default)]
struct Taken {
    /// Every `(id, revision)` returned, once each.
    revisions: BTreeSet<(String, i64)>,
    /// The newest revision held of each event.
    held: BTreeMap<String, i64>,
}

/// Reads deltas on `app` until `done` and then until it holds `expected`, failing on any
/// `(id, revision)` returned twice.
async fn read_until_converged(
    app: &TestApp,
    user: &TestUser,
    since: String,
    writers_done: tokio::sync::watch::Receiver<Option<BTreeMap<String, i64>>>,
) -> Taken {
    let mut taken = Taken::default();
    let mut since = since;
    let deadline = tokio::time::Instant::now() + WAIT * 4;
    loop {
        let read = delta(app, user, &since).await;
        for (id, revision, _) in read.events {
            assert!(
                taken.revisions.insert((id.clone(), revision)),
                "({id}, {revision}) returned twice"
            );
            let held = taken.held.entry(id).or_default();
            assert!(revision > *held, "an older revision after a newer one");
            *held = revision;
        }
        since = read.server_time;
        let expected = writers_done.borrow().clone();
        if let Some(expected) = expected
            && taken.held == expected
        {
            return taken;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "delta reads did not converge"
        );
    }
}

#[tokio::test]
async fn instances_on_one_database_converge_with_no_miss_and_no_repeat() {
    // On PostgreSQL two instances; on SQLite two servers of one process on its one file.
    let a = spawn_app().await;
    let b = spawn_app_sharing_database(&a).await;
    let ann = a.sign_up("ann-instances@example.com").await;
    let home = personal_calendar(&a, &ann).await;
    let since = server_time_of_full_read(&a, &ann).await;
    let (done_tx, done_rx) = tokio::sync::watch::channel(None);

    let readers =
        [&a, &b].map(|app| read_until_converged(app, &ann, since.clone(), done_rx.clone()));
    let writers = async {
        let write_on = |app: &'static str, n: usize| {
            let server = if app == "a" { &a } else { &b };
            let ann = &ann;
            let home = home.clone();
            async move {
                let mut body = event_body(&[&home], &format!("{app}{n} v1"), 9);
                server.create_event(ann, &body).await;
                for version in 2..=4 {
                    body["title"] = json!(format!("{app}{n} v{version}"));
                    let status = server.event_request(Method::PUT, ann, &body).await.status();
                    assert_eq!(status, StatusCode::OK);
                }
                (body["id"].as_str().expect("id").to_owned(), 4_i64)
            }
        };
        let written =
            futures::future::join_all((0..6).flat_map(|n| [write_on("a", n), write_on("b", n)]))
                .await;
        done_tx
            .send(Some(written.into_iter().collect::<BTreeMap<_, _>>()))
            .expect("readers listen");
    };
    let (taken, ()) = tokio::join!(futures::future::join_all(readers), writers);
    for reader in taken {
        assert_eq!(reader.held.len(), 12);
    }
}
