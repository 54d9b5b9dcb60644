//! Several instances on one database: what one instance commits about a user's credentials
//! reaches the others at once (on PostgreSQL through the database's own notifications; two
//! servers in one process on one SQLite file share what the process knows), and an
//! instance that lost its listening connection closes its streams (their clients re-read),
//! listens again and trusts no cached session; an event another instance deleted is gone
//! for an instance that remembers where its edits go.

use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::json;

use crate::helpers::{
    event_body, eventually, spawn_app, spawn_app_sharing_database, spawn_app_with,
};

/// Sessions found by token are kept a minute: longer than any wait of these tests, so only
/// the other instance's notice can end them in time.
const LONG_CACHE_MS: u64 = 60_000;

#[tokio::test]
async fn a_sign_out_on_one_instance_ends_the_session_on_the_others_at_once() {
    let a = spawn_app_with(|s| s.storage.session_cache_ms = LONG_CACHE_MS).await;
    let b = spawn_app_sharing_database(&a).await;
    let user = a.sign_up("instances-out@example.com").await;
    let (status, _) = a.call(Method::GET, "/api/v1/calendars", &user, None).await;
    assert_eq!(status, StatusCode::OK, "A knows (and caches) the session");
    let mut stream = a.stream(&user).await;

    let (status, _) = b
        .call(Method::POST, "/api/auth/sign-out", &user, None)
        .await;
    assert_eq!(status, StatusCode::OK);

    eventually("A refuses the signed-out session", || async {
        a.call(Method::GET, "/api/v1/calendars", &user, None)
            .await
            .0
            == StatusCode::UNAUTHORIZED
    })
    .await;
    stream.expect_end().await;
}

#[tokio::test]
async fn an_instance_that_lost_its_listening_connection_listens_again() {
    let a = spawn_app_with(|s| s.storage.session_cache_ms = LONG_CACHE_MS).await;
    let conn = a.db_connection().await;
    if conn.get_database_backend() != sea_orm::DbBackend::Postgres {
        // One process serves an SQLite file: there is no listening connection to lose.
        return;
    }
    let b = spawn_app_sharing_database(&a).await;
    let listeners = "SELECT count(*)::bigint AS n FROM pg_stat_activity \
                     WHERE datname = current_database() AND query LIKE 'LISTEN %'";
    let count = |sql: &'static str| {
        let conn = conn.clone();
        async move {
            conn.query_one_raw(Statement::from_string(sea_orm::DbBackend::Postgres, sql))
                .await
                .expect("query")
                .and_then(|row| row.try_get::<i64>("", "n").ok())
                .unwrap_or(0)
        }
    };
    eventually("both instances listen", || async {
        count(listeners).await >= 2
    })
    .await;
    // A stream held on A while A cannot hear the others may miss frames: it is closed, so
    // its client reconnects and re-reads.
    let watcher = a.sign_up("instances-watcher@example.com").await;
    let mut stream = a.stream(&watcher).await;
    conn.execute_unprepared(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND query LIKE 'LISTEN %'",
    )
    .await
    .expect("cut the listening connections");
    stream.expect_end().await;

    let user = a.sign_up("instances-lost@example.com").await;
    let (status, _) = a.call(Method::GET, "/api/v1/calendars", &user, None).await;
    assert_eq!(status, StatusCode::OK);
    eventually("both instances listen again", || async {
        count(listeners).await >= 2
    })
    .await;
    let (status, _) = b
        .call(Method::POST, "/api/auth/sign-out", &user, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    eventually("A refuses the signed-out session", || async {
        a.call(Method::GET, "/api/v1/calendars", &user, None)
            .await
            .0
            == StatusCode::UNAUTHORIZED
    })
    .await;
    // A reopened stream hears the others again: a change made through B reaches it.
    let mut reopened = a.stream(&watcher).await;
    let calendar = b.create_calendar(&watcher, "Heard again").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let created = b
        .create_event(&watcher, &event_body(&[&calendar], "Heard", 9))
        .await;
    let frame = reopened.next_frame().await;
    assert_eq!(frame["type"], "event_created");
    assert_eq!(frame["payload"]["id"], created["id"]);
}

#[tokio::test]
async fn an_event_deleted_on_another_instance_is_gone_for_the_instance_that_created_it() {
    let a = spawn_app().await;
    let b = spawn_app_sharing_database(&a).await;
    let owner = a.sign_up("instances-homes@example.com").await;
    let calendar = a.create_calendar(&owner, "Shared").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let mut body = a
        .create_event(&owner, &event_body(&[&calendar], "Planning", 9))
        .await;
    let id = body["id"].as_str().expect("id").to_owned();
    // A created the event and edits it: it knows where the event's edits go.
    body["title"] = json!("Edited");
    let (status, answer) = a
        .call(Method::PUT, "/api/v1/events", &owner, Some(&body))
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["revision"], 2);

    let (status, answer) = b
        .call(
            Method::DELETE,
            "/api/v1/events",
            &owner,
            Some(&json!({ "id": id })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["removed"], true);

    // On A every command about it is refused as for any deleted event, and writes nothing.
    body["title"] = json!("Too late");
    body["revision"] = json!(3);
    let refusals = [
        (Method::PUT, "/api/v1/events".to_owned(), body.clone()),
        (
            Method::PUT,
            format!("/api/v1/events/{id}/attendance"),
            json!({ "status": "going" }),
        ),
        (
            Method::DELETE,
            "/api/v1/events".to_owned(),
            json!({ "id": id }),
        ),
    ];
    for (method, path, request) in refusals {
        let (status, answer) = a.call(method.clone(), &path, &owner, Some(&request)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {answer}");
        assert_eq!(answer["error"], "Event not found...");
    }
    let read = a.read_events(&owner, "").await;
    assert_eq!(read["events"], json!([]), "{read}");
}
