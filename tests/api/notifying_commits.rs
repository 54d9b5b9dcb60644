//! On PostgreSQL a write's commit notifies every instance of its frames, and PostgreSQL
//! holds one lock over all notifying commits until each has ended: the server does not
//! make that commit wait for its flush to disk, so it flushes apart. A change is still
//! answered only once its commit is on disk. SQLite notifies nothing; these tests read
//! PostgreSQL's write-ahead log (`pg_walinspect`).

use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend};
use serde_json::json;

use crate::helpers::{event_body, pg_value, spawn_app, spawn_app_sharing_database};

/// How many commit records of the transaction that last wrote event `id` the write-ahead
/// log holds from `from` up to `flushed`.
async fn commits_flushed(conn: &DatabaseConnection, id: &str, from: &str, flushed: &str) -> String {
    pg_value(
        conn,
        &format!(
            "SELECT count(*)::text AS n FROM pg_get_wal_records_info_till_end_of_wal('{from}') \
             WHERE resource_manager = 'Transaction' AND record_type = 'COMMIT' \
             AND end_lsn <= '{flushed}' AND xid = (SELECT xmin FROM events WHERE id = '{id}')"
        ),
    )
    .await
}

#[tokio::test]
async fn a_change_is_answered_once_its_notifying_commit_is_on_disk() {
    let first = spawn_app().await;
    let conn = first.db_connection().await;
    if conn.get_database_backend() != DbBackend::Postgres {
        return;
    }
    // Test databases do not wait for flushes (`synchronous_commit = off`): a server whose
    // sessions begin after this waits as a production database does.
    let name = pg_value::<String>(&conn, "SELECT current_database()::text AS n").await;
    conn.execute_unprepared(&format!(
        "ALTER DATABASE \"{name}\" SET synchronous_commit = on"
    ))
    .await
    .expect("synchronous commits");
    let app = spawn_app_sharing_database(&first).await;
    conn.execute_unprepared("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        .await
        .expect("pg_walinspect");
    let owner = app.sign_up("flushed@example.com").await;
    let calendar = app.create_calendar(&owner, "Flushed").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let mut stream = app.stream(&owner).await;

    let mut event = event_body(&[&calendar], "Created", 9);
    for (step, method, status, frame) in [
        (
            "created",
            Method::POST,
            StatusCode::CREATED,
            "event_created",
        ),
        ("updated", Method::PUT, StatusCode::OK, "event_updated"),
    ] {
        // Just before where the log is on disk (`pg_walinspect` starts before it).
        let from =
            pg_value::<String>(&conn, "SELECT (pg_current_wal_flush_lsn() - 1)::text AS n").await;
        event["title"] = json!(step);
        let response = app.event_request(method, &owner, &event).await;
        assert_eq!(response.status(), status, "{step}");
        // How far the log was on disk at once after the answer: past the change's commit.
        let flushed =
            pg_value::<String>(&conn, "SELECT pg_current_wal_flush_lsn()::text AS n").await;
        let id = event["id"].as_str().expect("id");
        assert_eq!(
            commits_flushed(&conn, id, &from, &flushed).await,
            "1",
            "{step}: the change's commit was flushed before it was answered"
        );
        // It was a commit that notified: its frame reached the stream through PostgreSQL.
        let got = stream.next_frame().await;
        assert_eq!(
            (got["type"].as_str(), &got["payload"]["title"]),
            (Some(frame), &json!(step))
        );
    }
}
