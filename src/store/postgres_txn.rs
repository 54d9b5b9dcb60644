//! [`PgTxn`]: a PostgreSQL write transaction on a connection taken from the pool, which
//! sends its `BEGIN` with its first statement where the protocol allows.
//!
//! A statement with bound values travels alone (the extended protocol), so `BEGIN` goes in
//! a round trip of its own before one. A text without bound values may hold several
//! statements (the simple protocol): [`PgTxn::read_together`] sends `BEGIN` in front of the
//! reads a write starts with, so beginning, locking and reading are one round trip.
//!
//! Writes whose outcome nobody reads are deferred ([`PgTxn::defer`]): written out as text
//! ([`super::postgres_text`]), they wait for the transaction's next statement, or its
//! `COMMIT`, and travel in the same round trip, so a transaction's run of writes and its
//! commit cost one round trip. The writes waiting stay under [`DEFERRED_TEXT_LIMIT`]: a
//! much longer text (a batch of creations' inserts, 1 MiB: creations fell 15 %) costs
//! PostgreSQL more to parse and plan than the round trip it saves, the bound statement
//! running from the connection's cache of prepared ones. (Over TLS, a message of more than
//! one record, 16 KiB, no longer waits for PostgreSQL's delayed acknowledgement of its
//! first record: the connections set `TCP_NODELAY`, `vendor/sqlx-core`.)
//!
//! A transaction dropped before it ended (an error, a refusal, a cancelled request) is
//! rolled back on a task that holds the connection until it is done; where no runtime is
//! left, or the rollback fails, the connection is closed instead of going back to the pool.

use std::sync::Arc;
use std::time::Instant;

use futures::TryStreamExt;
use sea_orm::prelude::async_trait::async_trait;
use sea_orm::sqlx::pool::PoolConnection;
use sea_orm::sqlx::postgres::{PgConnection, PgPool};
use sea_orm::sqlx::{self, Either, Postgres};
use sea_orm::{
    ConnectionTrait, DbBackend, DbErr, ExecResult, QueryResult, RuntimeErr, Statement, Values,
};
use sea_query_sqlx::SqlxValues;
use tokio::sync::Mutex;

use super::row_updates::{RowRuns, RowUpdate};
use super::writer::{exec_err, query_err, sections_of};
use crate::metrics::Metrics;

/// A PostgreSQL write transaction.
#[derive(Debug)]
pub(crate) struct PgTxn {
    held: Mutex<Held>,
    /// Since the connection was obtained, and where its hold is recorded when it ends
    /// (`svc_db_write_hold_seconds`).
    since: Instant,
    metrics: Option<Arc<Metrics>>,
}

#[derive(Debug)]
struct Held {
    /// `None` once handed to a rollback.
    conn: Option<PoolConnection<Postgres>>,
    /// `BEGIN` is still to be sent.
    begin_owed: bool,
    /// `BEGIN` was sent, and neither `COMMIT` nor `ROLLBACK` has been.
    begun: bool,
    /// Deferred writes, as texts, to send before anything else.
    deferred: Vec<String>,
    /// Deferred updates of single rows, written after the other deferred writes, a
    /// statement per run of one shape ([`super::row_updates`]).
    rows: RowRuns,
    /// The length of the deferred writes and rows together.
    deferred_len: usize,
}

/// The most text of deferred writes sent in one message (bytes): a write longer runs bound
/// and at once, and one that would take the waiting ones past it sends them first. Against
/// 8 KiB, an edit batch's frames' notice (8 to 15 KiB with a dozen frames) goes with the
/// commit rather than alone: mixed edits ran 5–7 % faster, creations the same. (It was
/// chosen to fit one TLS record with its `COMMIT`, when a second record could wait 40 ms.)
const DEFERRED_TEXT_LIMIT: usize = 15 * 1024;

impl Held {
    fn conn(&mut self) -> Result<&mut PgConnection, DbErr> {
        self.conn
            .as_deref_mut()
            .ok_or_else(|| DbErr::Conn(RuntimeErr::Internal("the transaction has ended".into())))
    }

    /// The connection, with `BEGIN` (if it is owed) and the deferred writes sent first, in
    /// one round trip.
    async fn begun_conn(&mut self) -> Result<&mut PgConnection, DbErr> {
        let leading = self.leading_text();
        if !leading.is_empty() {
            sqlx::raw_sql(sqlx::AssertSqlSafe(leading))
                .execute(self.conn()?)
                .await
                .map_err(exec_err)?;
        }
        self.conn()
    }

    /// What goes in front of the next text sent: `BEGIN` if it is owed (the transaction is
    /// then begun) and the deferred writes (then no longer deferred), each ended by `;`.
    fn leading_text(&mut self) -> String {
        let mut text = String::new();
        if std::mem::take(&mut self.begin_owed) {
            self.begun = true;
            text.push_str("BEGIN;\n");
        }
        self.deferred_len = 0;
        for write in self.deferred.drain(..) {
            text.push_str(&write);
            text.push_str(";\n");
        }
        self.rows.take_text(&mut text);
        text
    }

    /// How many statements [`Self::leading_text`] would send.
    fn leading(&self) -> usize {
        usize::from(self.begin_owed) + self.deferred.len() + self.rows.statements()
    }

    /// Whether no write is deferred.
    fn nothing_deferred(&self) -> bool {
        self.deferred.is_empty() && self.rows.is_empty()
    }
}

/// How a transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Commit,
    /// A commit that notifies. PostgreSQL serializes notifying commits across the whole
    /// cluster: each holds one lock from before its commit until it has ended, its WAL
    /// flush included (`PreCommit_Notify`), so the instances' writes queued for it one
    /// flush at a time (pgbench, 16 connections each committing an insert and a
    /// notification: 4,886 commits/s, 6,876 committed as here; FIGURES.md). So the commit
    /// does not wait for its flush (`synchronous_commit` off for it alone), and a
    /// transaction of its own sent in the same text right after it writes a WAL record (a
    /// logical decoding message, prefix `bowline.flush`) and waits for it as the session's
    /// `synchronous_commit` says (a synchronous standby's confirmation too), which covers
    /// the commit before it. The answer still comes once the commit is on disk, while the
    /// lock and the transaction's row locks are held for no flush, and concurrent commits
    /// share their flushes. Others may read the change, and streams get its frames, before
    /// it is on disk, as with any asynchronous commit: only a crash within that flush loses
    /// it, never once answered.
    CommitNotifying,
    Rollback,
}

impl Ending {
    /// What ends the transaction's text.
    fn text(self) -> &'static str {
        match self {
            Self::Commit => "COMMIT",
            Self::CommitNotifying => {
                "SET LOCAL synchronous_commit TO off;\nCOMMIT;\n\
                 SELECT pg_logical_emit_message(true, 'bowline.flush', '')"
            }
            Self::Rollback => "ROLLBACK",
        }
    }
}

/// Binds a statement's values the way sea-orm's own PostgreSQL driver does.
fn bound(sql: &str, values: Option<Values>) -> sqlx::query::Query<'_, Postgres, SqlxValues> {
    sqlx::query_with(
        sqlx::AssertSqlSafe(sql),
        SqlxValues(values.unwrap_or(Values(Vec::new()))),
    )
}

impl PgTxn {
    /// Takes a connection from `pool` for a transaction (its `BEGIN` goes with its first
    /// statement); how long the transaction holds it is recorded in `metrics`.
    pub(crate) async fn begin(pool: &PgPool, metrics: Option<Arc<Metrics>>) -> Result<Self, DbErr> {
        let conn = pool
            .acquire()
            .await
            .map_err(|err| DbErr::Conn(RuntimeErr::SqlxError(Arc::new(err))))?;
        Ok(Self {
            held: Mutex::new(Held {
                conn: Some(conn),
                begin_owed: true,
                begun: false,
                deferred: Vec::new(),
                rows: RowRuns::default(),
                deferred_len: 0,
            }),
            since: Instant::now(),
            metrics,
        })
    }

    /// Runs `statements` (texts without bound values; what they hold is the caller's to make
    /// safe) in one round trip, with `BEGIN` and the deferred writes in front: the rows of
    /// each, in order. Each runs on a snapshot of its own, so a read after a lock sees what
    /// committed while the lock was awaited.
    pub(crate) async fn read_together(
        &self,
        statements: &[String],
    ) -> Result<Vec<Vec<QueryResult>>, DbErr> {
        let mut held = self.held.lock().await;
        let leading = held.leading();
        let mut text = held.leading_text();
        text.push_str(&statements.join(";\n"));
        let results: Vec<Either<_, _>> = sqlx::raw_sql(sqlx::AssertSqlSafe(text))
            .fetch_many(held.conn()?)
            .try_collect()
            .await
            .map_err(query_err)?;
        sections_of(results, statements.len(), leading)
    }

    /// Runs the write `stmt`, whose outcome nobody reads, with the transaction's next
    /// statement or its commit, in the same round trip: written out as text
    /// ([`super::postgres_text::inline`]). If its values cannot be, or its text is longer
    /// than [`DEFERRED_TEXT_LIMIT`], it runs bound and now (after the writes deferred before
    /// it); if it would take the waiting writes past that limit, they are sent first. A
    /// deferred write that fails fails the text it goes in, as on SQLite
    /// ([`super::WriteTxn::defer`]).
    pub(crate) async fn defer(&self, stmt: Statement) -> Result<(), DbErr> {
        let mut held = self.held.lock().await;
        let text =
            super::postgres_text::inline(&stmt).filter(|text| text.len() <= DEFERRED_TEXT_LIMIT);
        match text {
            Some(text) => {
                if held.deferred_len + text.len() > DEFERRED_TEXT_LIMIT {
                    held.begun_conn().await?;
                }
                held.deferred_len += text.len();
                held.deferred.push(text);
                Ok(())
            }
            None => {
                let conn = held.begun_conn().await?;
                bound(&stmt.sql, stmt.values)
                    .execute(conn)
                    .await
                    .map(|_| ())
                    .map_err(exec_err)
            }
        }
    }

    /// Defers `row`, the update `stmt` of one row, as [`Self::defer`] does, to be written
    /// with the row updates of the same shape deferred right before or after it as one
    /// statement, after the other deferred writes ([`super::row_updates`]: only for a row
    /// no other deferred write depends on). A row whose values cannot be written as text
    /// is deferred as `stmt`.
    pub(crate) async fn defer_row(&self, stmt: Statement, row: &RowUpdate) -> Result<(), DbErr> {
        let written = row.written().filter(|row| row.len() <= DEFERRED_TEXT_LIMIT);
        let Some(written) = written else {
            return self.defer(stmt).await;
        };
        let mut held = self.held.lock().await;
        if held.deferred_len + written.len() > DEFERRED_TEXT_LIMIT {
            held.begun_conn().await?;
        }
        held.deferred_len += written.len();
        held.rows.push(written);
        Ok(())
    }

    /// Runs the read `stmt` as an unnamed statement, planned for this execution alone: for a
    /// read over tables that grow, whose cached plan, made while they were small (a new
    /// database's, before its first `ANALYZE`), would scan them whole once they have grown.
    pub(crate) async fn query_all_planned_now(
        &self,
        stmt: Statement,
    ) -> Result<Vec<QueryResult>, DbErr> {
        self.fetch_all(stmt, false).await
    }

    /// The rows of `stmt`, kept prepared on the connection or not (`persistent`).
    async fn fetch_all(
        &self,
        stmt: Statement,
        persistent: bool,
    ) -> Result<Vec<QueryResult>, DbErr> {
        let mut held = self.held.lock().await;
        let conn = held.begun_conn().await?;
        bound(&stmt.sql, stmt.values)
            .persistent(persistent)
            .fetch_all(conn)
            .await
            .map(|rows| rows.into_iter().map(Into::into).collect())
            .map_err(query_err)
    }

    /// Commits (nothing was sent: nothing to commit).
    pub(crate) async fn commit(self) -> Result<(), DbErr> {
        self.end(Ending::Commit).await
    }

    /// Commits a transaction that notifies (its frames, [`super::instance_bus`]), flushed
    /// apart from its commit ([`Ending::CommitNotifying`]).
    pub(crate) async fn commit_notifying(self) -> Result<(), DbErr> {
        self.end(Ending::CommitNotifying).await
    }

    /// Rolls back, waiting until it is done.
    pub(crate) async fn rollback(self) -> Result<(), DbErr> {
        self.end(Ending::Rollback).await
    }

    /// Commits (with the deferred writes in front) or rolls back (dropping them).
    async fn end(mut self, ending: Ending) -> Result<(), DbErr> {
        let held = self.held.get_mut();
        if ending == Ending::Rollback {
            held.deferred.clear();
            held.rows.clear();
            held.deferred_len = 0;
        }
        if held.nothing_deferred() {
            held.begin_owed = false;
        }
        if !held.begun && !held.begin_owed {
            return Ok(());
        }
        // The deferred writes go with the commit, `BEGIN` in front if nothing was sent yet.
        let mut text = held.leading_text();
        text.push_str(ending.text());
        sqlx::raw_sql(sqlx::AssertSqlSafe(text))
            .execute(held.conn()?)
            .await
            .map_err(exec_err)?;
        // A failed text leaves `begun` set: dropping the transaction rolls it back.
        held.begun = false;
        Ok(())
    }
}

impl Drop for PgTxn {
    fn drop(&mut self) {
        // Ended, or about to be rolled back (the rollback's round trip is not counted).
        if let Some(metrics) = &self.metrics {
            metrics.db_write_held(self.since.elapsed());
        }
        let held = self.held.get_mut();
        if !held.begun {
            return;
        }
        let Some(mut conn) = held.conn.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(err) = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await {
                        tracing::warn!(error = %err, "store.rollback_failed");
                        conn.close_on_drop();
                    }
                });
            }
            Err(_) => conn.close_on_drop(),
        }
    }
}

#[async_trait]
impl ConnectionTrait for PgTxn {
    fn get_database_backend(&self) -> DbBackend {
        DbBackend::Postgres
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        let mut held = self.held.lock().await;
        let conn = held.begun_conn().await?;
        bound(&stmt.sql, stmt.values)
            .execute(conn)
            .await
            .map(Into::into)
            .map_err(exec_err)
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        let mut held = self.held.lock().await;
        let conn = held.begun_conn().await?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(conn)
            .await
            .map(Into::into)
            .map_err(exec_err)
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        let mut held = self.held.lock().await;
        let conn = held.begun_conn().await?;
        bound(&stmt.sql, stmt.values)
            .fetch_optional(conn)
            .await
            .map(|row| row.map(Into::into))
            .map_err(query_err)
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        self.fetch_all(stmt, true).await
    }
}
