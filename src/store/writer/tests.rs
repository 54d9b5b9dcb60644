//! The writer's shared commits, on a real SQLite file: a write that finishes while another
//! waits is committed with it, a joined write's failure undoes only its own statements, a
//! failed commit fails every write that shared it, and a transaction left open for a write
//! that gave up waiting is still committed; each commit records how many writes it carried.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use sea_orm::ConnectionTrait;
use sea_orm::sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sea_orm::sqlx::{Connection, SqliteConnection};
use tokio::sync::oneshot;

use super::{SqliteTxn, SqliteWriter};
use crate::metrics::Metrics;

/// Longest wait for a state the test waits for.
const PATIENCE: Duration = Duration::from_secs(10);

struct Fixture {
    _dir: tempfile::TempDir,
    options: SqliteConnectOptions,
    writer: SqliteWriter,
    metrics: Arc<Metrics>,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteConnectOptions::new()
        .filename(dir.path().join("writer.sqlite"))
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true);
    let writer = SqliteWriter::open(&options).await.unwrap();
    writer
        .lock()
        .await
        .unwrap()
        .execute_unprepared(
            "CREATE TABLE rows (id INTEGER PRIMARY KEY);
             CREATE TABLE parents (id INTEGER PRIMARY KEY);
             CREATE TABLE children (id INTEGER PRIMARY KEY,
               parent INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)",
        )
        .await
        .unwrap();
    let metrics = Arc::new(Metrics::new());
    writer.record_in(metrics.clone());
    Fixture {
        _dir: dir,
        options,
        writer,
        metrics,
    }
}

impl Fixture {
    /// The ids in `rows`, as a connection of its own sees them (what is committed).
    async fn committed(&self) -> Vec<i64> {
        let mut conn = SqliteConnection::connect_with(&self.options).await.unwrap();
        let ids: Vec<(i64,)> = sea_orm::sqlx::query_as("SELECT id FROM rows ORDER BY id")
            .fetch_all(&mut conn)
            .await
            .unwrap();
        ids.into_iter().map(|(id,)| id).collect()
    }

    /// The commits recorded so far, and the writes they carried in all.
    fn commits_recorded(&self) -> (f64, f64) {
        let text = self.metrics.render();
        let read = |name: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
                .unwrap_or(0.0)
        };
        (
            read("svc_db_commit_writes_count"),
            read("svc_db_commit_writes_sum"),
        )
    }

    /// Waits until `count` writes wait to begin.
    async fn waiting(&self, count: usize) {
        until(|| {
            self.writer
                .opening
                .load(std::sync::atomic::Ordering::SeqCst)
                == count
        })
        .await;
    }
}

/// Waits (yielding, with a time limit) until `done` holds.
async fn until(done: impl Fn() -> bool) {
    tokio::time::timeout(PATIENCE, async {
        while !done() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the state never came");
}

async fn insert(txn: &SqliteTxn, sql: &str) {
    txn.conn().execute_unprepared(sql).await.unwrap();
}

/// Two writes: the first has written row 1 and holds the connection; the second, on a task
/// of its own, waits to begin. Once it has the connection it runs `sql` and tells
/// `has_written`, then waits for `finish` to commit it (true) or drop it (false); its task
/// answers the commit's outcome.
struct TwoWrites {
    first: SqliteTxn,
    has_written: oneshot::Receiver<()>,
    finish: oneshot::Sender<bool>,
    second: tokio::task::JoinHandle<Option<Result<(), sea_orm::DbErr>>>,
}

async fn two_writes(db: &Fixture, sql: &'static str) -> TwoWrites {
    let first = db.writer.begin().await.unwrap();
    insert(&first, "INSERT INTO rows (id) VALUES (1)").await;
    let (wrote, has_written) = oneshot::channel();
    let (finish, finishing) = oneshot::channel();
    let writer = db.writer.clone();
    let second = tokio::spawn(async move {
        let txn = writer.begin().await.unwrap();
        insert(&txn, sql).await;
        wrote.send(()).unwrap();
        if finishing.await.unwrap() {
            Some(txn.commit().await)
        } else {
            None
        }
    });
    db.waiting(1).await;
    TwoWrites {
        first,
        has_written,
        finish,
        second,
    }
}

/// Whether `future` is still pending after the runtime has had its turn.
async fn still_pending<F: Future + Unpin>(future: &mut F) -> bool {
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    futures::poll!(future).is_pending()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_finishes_while_another_waits_commits_with_it() {
    let db = fixture().await;
    let TwoWrites {
        first,
        has_written,
        finish,
        second,
    } = two_writes(&db, "INSERT INTO rows (id) VALUES (2)").await;

    let mut first_commit = Box::pin(first.commit());
    assert!(still_pending(&mut first_commit).await);
    has_written.await.unwrap();
    // The first write left its transaction open for the second: nothing is committed, and
    // its commit has not answered.
    assert_eq!(db.committed().await, Vec::<i64>::new());
    assert!(still_pending(&mut first_commit).await);

    finish.send(true).unwrap();
    second.await.unwrap().unwrap().unwrap();
    first_commit.await.unwrap();
    assert_eq!(db.committed().await, vec![1, 2]);
    // One commit carried both writes.
    assert_eq!(db.commits_recorded(), (1.0, 2.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joined_write_that_fails_undoes_only_its_own_statements() {
    let db = fixture().await;
    let TwoWrites {
        first,
        has_written,
        finish,
        second,
    } = two_writes(&db, "INSERT INTO rows (id) VALUES (2)").await;

    let first_commit = tokio::spawn(first.commit());
    has_written.await.unwrap();
    finish.send(false).unwrap();
    assert!(second.await.unwrap().is_none());
    first_commit.await.unwrap().unwrap();
    assert_eq!(db.committed().await, vec![1]);

    // The writer goes on: a later write begins its own transaction.
    let third = db.writer.begin().await.unwrap();
    insert(&third, "INSERT INTO rows (id) VALUES (3)").await;
    third.commit().await.unwrap();
    assert_eq!(db.committed().await, vec![1, 3]);
    // The first write's commit carried it alone (the joined one undid its own), as did the
    // third's.
    assert_eq!(db.commits_recorded(), (2.0, 2.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_sharing_a_commit_that_fails_fails_and_none_is_written() {
    let db = fixture().await;
    // A child without its parent: refused only when the transaction commits.
    let TwoWrites {
        first,
        has_written,
        finish,
        second,
    } = two_writes(
        &db,
        "INSERT INTO rows (id) VALUES (2); INSERT INTO children (id, parent) VALUES (1, 99)",
    )
    .await;

    let first_commit = tokio::spawn(first.commit());
    has_written.await.unwrap();
    finish.send(true).unwrap();
    assert!(second.await.unwrap().unwrap().is_err());
    assert!(first_commit.await.unwrap().is_err());
    assert_eq!(db.committed().await, Vec::<i64>::new());

    let third = db.writer.begin().await.unwrap();
    insert(&third, "INSERT INTO rows (id) VALUES (3)").await;
    third.commit().await.unwrap();
    assert_eq!(db.committed().await, vec![3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_left_open_for_a_write_that_gave_up_is_committed() {
    let db = fixture().await;
    let first = db.writer.begin().await.unwrap();
    insert(&first, "INSERT INTO rows (id) VALUES (1)").await;
    let writer = db.writer.clone();
    let gives_up = tokio::spawn(async move {
        let _txn = writer.begin().await.unwrap();
        std::future::pending::<()>().await;
    });
    db.waiting(1).await;

    let first_commit = tokio::spawn(first.commit());
    // The second write has the connection once the first left its transaction open.
    db.waiting(0).await;
    gives_up.abort();
    assert!(gives_up.await.unwrap_err().is_cancelled());
    first_commit.await.unwrap().unwrap();
    assert_eq!(db.committed().await, vec![1]);
}
