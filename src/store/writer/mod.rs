//! SQLite's writer: the one connection every write transaction runs on, held by the server
//! rather than by a pool ([`super::WriteTxn`] is the transaction of either backend).
//!
//! SQLite has a single writer. With every write transaction on one connection, writers wait
//! their turn on its lock, first come first served, instead of in SQLite's busy handler,
//! which sleeps in growing steps (up to 100 ms) while another connection holds the lock.
//!
//! Every statement is a hand-off to the connection's thread and back, which on two busy
//! cores costs a few hundred microseconds however small the statement, so the writer saves
//! the ones that carry nothing:
//! - A pool of one connection would ping it on a task of its own each time it is given
//!   back, before the next transaction may have it (sqlx does that to every connection it
//!   takes back). The held connection goes from one transaction to the next directly.
//! - `BEGIN IMMEDIATE` is not sent alone: it goes in front of the transaction's first
//!   statement, in the same text (a statement whose count of changed rows is read is
//!   answered its own count, not the text's); and a caller that knows its last statement
//!   sends `COMMIT` after it in the same text ([`super::WriteTxn::commit_after`]).
//! - A write whose outcome nobody reads waits ([`super::WriteTxn::defer`]) and goes in the
//!   text of the transaction's next statement, or of its `COMMIT`: an edit batch's writes
//!   reach SQLite's thread together, with its commit.
//!
//! A transaction dropped before its commit (an error, a refusal, a cancelled request) is
//! rolled back at once on a task that holds the connection until it is done, so no other
//! write starts inside it; where no runtime is left to run that task, the next transaction
//! rolls it back before it starts.
//!
//! Writes waiting for the writer share a commit (group commit). With `synchronous = FULL`
//! every commit waits for the disk to sync the log: well under a millisecond on an idle
//! local disk, several when other writes share the disk, and all that time the writer
//! holds every other write back. A write that finishes while others wait to begin leaves
//! its transaction open instead of committing, gives the connection to the next, and
//! waits for the commit: the next joins the transaction under a savepoint (so its rollback
//! undoes only its own statements), and the last of them, when none waits, commits for
//! all in the text of its own last statements. A task queued behind the writes waiting
//! when the transaction was left open commits it if they did not (they were cancelled, or
//! failed). Nobody is answered before the commit that holds their write; if it fails, or
//! the transaction ends rolled back, each write sharing it fails with that error, nothing
//! of them written.
//!
//! Each hold of the connection (`svc_db_write_hold_seconds`) and each commit, with the
//! writes it carried (`svc_db_commit_writes`), is recorded once metrics are attached.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use sea_orm::sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sea_orm::sqlx::{self, Connection, Executor};
use sea_orm::{DbErr, QueryResult, RuntimeErr, Statement, Values};
use tokio::sync::{Mutex, OwnedMutexGuard, watch};

use crate::metrics::Metrics;

mod texts;

use texts::{Deferred, Held};
pub(crate) use texts::{Locked, sections_of};

/// The statement that opens a write transaction: it takes SQLite's write lock at once, so
/// a transaction that reads before it writes never finds the database changed under it.
const BEGIN: &str = "BEGIN IMMEDIATE";
/// SQLite's plain `SQLITE_ERROR` result code, as sqlx reports it.
const SQLITE_ERROR: &str = "1";
/// The statement that ends one.
const COMMIT: &str = "COMMIT";
/// What a write joining a transaction left open writes under, and how it ends.
const JOIN: &str = "SAVEPOINT joined";
const RELEASE: &str = "RELEASE joined";
const RELEASE_AND_COMMIT: &str = "RELEASE joined;\nCOMMIT";
const UNDO_JOINED: &str = "ROLLBACK TO joined;\nRELEASE joined";

/// SQLite's writer connection.
#[derive(Debug, Clone)]
pub(crate) struct SqliteWriter {
    slot: Arc<Mutex<Slot>>,
    /// Write transactions waiting for the connection to begin: a write that finishes while
    /// one waits leaves its transaction open for it.
    opening: Arc<AtomicUsize>,
    /// Where each hold of the connection and each commit are recorded, once attached.
    metrics: Arc<OnceLock<Arc<Metrics>>>,
}

/// The writer's lock, held; how long is recorded when it is let go
/// (`svc_db_write_hold_seconds`).
#[derive(Debug)]
struct HeldSlot {
    guard: OwnedMutexGuard<Slot>,
    since: Instant,
    metrics: Arc<OnceLock<Arc<Metrics>>>,
}

impl HeldSlot {
    async fn take(slot: Arc<Mutex<Slot>>, metrics: Arc<OnceLock<Arc<Metrics>>>) -> Self {
        Self::held(slot.lock_owned().await, metrics)
    }

    fn held(guard: OwnedMutexGuard<Slot>, metrics: Arc<OnceLock<Arc<Metrics>>>) -> Self {
        Self {
            guard,
            since: Instant::now(),
            metrics,
        }
    }

    /// Records that one `COMMIT` committed `writes` write transactions.
    fn committed(&self, writes: usize) {
        if let Some(metrics) = self.metrics.get() {
            metrics.db_committed(writes);
        }
    }

    /// Commits the transaction left open, if one is, and tells the writes that share it.
    async fn commit_open(&mut self) -> Result<(), DbErr> {
        let Some(group) = self.open.take() else {
            return Ok(());
        };
        let committed = self
            .conn()?
            .execute(COMMIT)
            .await
            .map(drop)
            .map_err(exec_err);
        if committed.is_ok() {
            self.committed(group.writes);
        } else {
            // A failed `COMMIT` leaves the transaction open: it ends here, written by none.
            self.rollback_owed = Some(Undo::Transaction);
            self.settle().await?;
        }
        group.tell(committed.clone());
        committed
    }
}

impl std::ops::Deref for HeldSlot {
    type Target = Slot;
    fn deref(&self) -> &Slot {
        &self.guard
    }
}

impl std::ops::DerefMut for HeldSlot {
    fn deref_mut(&mut self) -> &mut Slot {
        &mut self.guard
    }
}

impl Drop for HeldSlot {
    fn drop(&mut self) {
        if let Some(metrics) = self.metrics.get() {
            metrics.db_write_held(self.since.elapsed());
        }
    }
}

/// What the writer's lock guards.
#[derive(Debug)]
struct Slot {
    /// `None` once closed.
    conn: Option<SqliteConnection>,
    /// A transaction was dropped open and its rollback has not run yet.
    rollback_owed: Option<Undo>,
    /// The transaction left open by the writes before, whose commit they wait for.
    open: Option<Group>,
}

/// What a dropped transaction's rollback undoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Undo {
    /// The whole transaction: it began it.
    Transaction,
    /// Its own statements, under the savepoint it joined an open transaction with.
    Joined,
}

/// A transaction left open: where its commit's outcome is told to the writes that share it.
#[derive(Debug)]
struct Group {
    outcome: watch::Sender<Option<Result<(), DbErr>>>,
    /// The writes that left it open, waiting for its commit.
    writes: usize,
}

impl Group {
    /// Left open by one write.
    fn new() -> Self {
        Self {
            outcome: watch::Sender::new(None),
            writes: 1,
        }
    }

    fn tell(self, outcome: Result<(), DbErr>) {
        self.outcome.send_replace(Some(outcome));
    }
}

/// Waits for the commit of the transaction a write left open.
async fn outcome_of(mut commit: watch::Receiver<Option<Result<(), DbErr>>>) -> Result<(), DbErr> {
    match commit.wait_for(Option::is_some).await {
        Ok(outcome) => outcome.clone().unwrap_or(Ok(())),
        Err(_) => Err(DbErr::Conn(RuntimeErr::Internal(
            "the writer closed before the transaction committed".into(),
        ))),
    }
}

impl Slot {
    fn conn(&mut self) -> Result<&mut SqliteConnection, DbErr> {
        self.conn
            .as_mut()
            .ok_or_else(|| DbErr::Conn(RuntimeErr::Internal("the database is closed".into())))
    }

    /// Runs the rollback a dropped transaction owes. A transaction whose first statement
    /// failed may never have begun, so "no transaction is active" is no error here: the
    /// plain `SQLITE_ERROR` a `ROLLBACK` answers then (its other failures, busy or locked,
    /// have codes of their own). A write that joined an open transaction undoes its own
    /// statements; if its savepoint is gone (the text that released it failed at its
    /// `COMMIT`, or SQLite rolled the whole transaction back on an I/O error), the whole
    /// transaction rolls back and the writes sharing it are told so.
    async fn settle(&mut self) -> Result<(), DbErr> {
        let Some(undo) = self.rollback_owed else {
            return Ok(());
        };
        if undo == Undo::Joined {
            match self.conn()?.execute(UNDO_JOINED).await {
                Ok(_) => {
                    self.rollback_owed = None;
                    return Ok(());
                }
                Err(sqlx::Error::Database(err)) if err.code().as_deref() == Some(SQLITE_ERROR) => {}
                Err(err) => return Err(exec_err(err)),
            }
        }
        match self.conn()?.execute("ROLLBACK").await {
            Ok(_) => {}
            Err(sqlx::Error::Database(err)) if err.code().as_deref() == Some(SQLITE_ERROR) => {}
            Err(err) => return Err(exec_err(err)),
        }
        self.rollback_owed = None;
        if let Some(group) = self.open.take() {
            group.tell(Err(DbErr::Custom(
                "the transaction this write shared was rolled back".into(),
            )));
        }
        Ok(())
    }
}

impl SqliteWriter {
    /// Opens the writer with the pool's `options` (the same file, pragmas and timeouts).
    pub(crate) async fn open(options: &SqliteConnectOptions) -> Result<Self, DbErr> {
        let conn = SqliteConnection::connect_with(options)
            .await
            .map_err(|err| DbErr::Conn(RuntimeErr::SqlxError(Arc::new(err))))?;
        Ok(Self {
            slot: Arc::new(Mutex::new(Slot {
                conn: Some(conn),
                rollback_owed: None,
                open: None,
            })),
            opening: Arc::new(AtomicUsize::new(0)),
            metrics: Arc::new(OnceLock::new()),
        })
    }

    /// Records each hold of the connection and each commit in `metrics` from now on.
    pub(crate) fn record_in(&self, metrics: Arc<Metrics>) {
        let _ = self.metrics.set(metrics);
    }

    async fn hold(&self) -> HeldSlot {
        HeldSlot::take(self.slot.clone(), self.metrics.clone()).await
    }

    /// The connection outside any transaction (for a checkpoint), once the transactions
    /// before have finished and committed.
    pub(crate) async fn lock(&self) -> Result<Locked, DbErr> {
        let mut slot = self.hold().await;
        slot.settle().await?;
        slot.commit_open().await?;
        slot.conn()?;
        Ok(self.held(slot, None))
    }

    fn held(&self, slot: HeldSlot, opening: Option<&'static str>) -> Locked {
        Locked {
            held: Mutex::new(Held {
                slot: Some(slot),
                opening,
                begun: false,
                joined: false,
                deferred: Deferred::default(),
                waiting: self.opening.clone(),
            }),
        }
    }

    /// Starts a write transaction (its `BEGIN` goes with its first statement), or joins the
    /// one the writes before left open.
    pub(crate) async fn begin(&self) -> Result<SqliteTxn, DbErr> {
        // Counted as waiting only once queued on the lock (its first poll queues it), so a
        // write that leaves its transaction open for it finds it ahead of the task that
        // would commit the transaction without it.
        let mut acquire = std::pin::pin!(self.slot.clone().lock_owned());
        let guard = match futures::poll!(acquire.as_mut()) {
            std::task::Poll::Ready(guard) => guard,
            std::task::Poll::Pending => {
                let _waiting = Waiting::new(self);
                acquire.await
            }
        };
        let mut slot = HeldSlot::held(guard, self.metrics.clone());
        slot.settle().await?;
        slot.conn()?;
        let opening = if slot.open.is_some() { JOIN } else { BEGIN };
        Ok(SqliteTxn {
            locked: self.held(slot, Some(opening)),
        })
    }

    /// Whether a transaction (or a checkpoint) holds the connection now.
    pub(crate) fn busy(&self) -> bool {
        self.slot.try_lock().is_err()
    }

    /// Closes the connection, waiting for the transaction in progress, if any.
    pub(crate) async fn close(&self) -> Result<(), DbErr> {
        let mut slot = self.hold().await;
        slot.settle().await?;
        slot.commit_open().await?;
        match slot.conn.take() {
            Some(conn) => conn
                .close()
                .await
                .map_err(|err| DbErr::Conn(RuntimeErr::SqlxError(Arc::new(err)))),
            None => Ok(()),
        }
    }
}

/// A write queued for the connection, counted in [`SqliteWriter::opening`] until it has it
/// (or gave up waiting).
struct Waiting(Arc<AtomicUsize>);

impl Waiting {
    fn new(writer: &SqliteWriter) -> Self {
        writer.opening.fetch_add(1, Ordering::SeqCst);
        Self(writer.opening.clone())
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Commits the transaction left open, if it still is, once the writes waiting now have had
/// the connection (each joins it, and the last commits it unless it was cancelled or failed).
fn commit_later(slot: Arc<Mutex<Slot>>, metrics: Arc<OnceLock<Arc<Metrics>>>) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            let mut slot = HeldSlot::take(slot, metrics).await;
            let settled = match slot.settle().await {
                Ok(()) => slot.commit_open().await,
                Err(err) => Err(err),
            };
            if let Err(err) = settled {
                tracing::warn!(error = %err, "store.writer_commit_failed");
            }
        });
    }
}

pub(super) fn exec_err(err: sqlx::Error) -> DbErr {
    DbErr::Exec(RuntimeErr::SqlxError(Arc::new(err)))
}

pub(super) fn query_err(err: sqlx::Error) -> DbErr {
    DbErr::Query(RuntimeErr::SqlxError(Arc::new(err)))
}

/// A write transaction on SQLite's writer connection.
#[derive(Debug)]
pub(crate) struct SqliteTxn {
    locked: Locked,
}

impl SqliteTxn {
    /// The connection, to run the transaction's statements on.
    pub(super) fn conn(&self) -> &Locked {
        &self.locked
    }

    /// Runs `sql`, several statements with their `values` in order, in one hand-off: the
    /// rows of each statement, in order.
    pub(super) async fn read_together(
        &self,
        sql: &str,
        values: Values,
        statements: usize,
    ) -> Result<Vec<Vec<QueryResult>>, DbErr> {
        self.locked.read_together(sql, values, statements).await
    }

    /// Commits, with whatever writes still wait; or, when another write waits to begin,
    /// leaves the transaction open for it and waits for the commit that ends it (see the
    /// module documentation).
    pub(super) async fn commit(mut self) -> Result<(), DbErr> {
        let held = self.locked.held.get_mut();
        if !held.begun && held.deferred.statements == 0 {
            // Nothing was sent or is waiting: this write has nothing to commit.
            held.opening = None;
            return Ok(());
        }
        held.end(None).await
    }

    /// Runs `stmt` and commits, in one text ([`super::WriteTxn::commit_after`]); or leaves
    /// the transaction open, as [`Self::commit`] does.
    pub(super) async fn commit_after(mut self, stmt: Statement) -> Result<(), DbErr> {
        self.locked.held.get_mut().end(Some(stmt)).await
    }

    /// Holds `stmt` back for the transaction's next text ([`super::WriteTxn::defer`]).
    pub(super) async fn defer(&self, stmt: Statement) {
        self.locked.held.lock().await.defer(stmt);
    }

    /// Rolls the transaction back, if it began (as dropping it does, but waiting until it
    /// is done).
    pub(super) async fn rollback(mut self) -> Result<(), DbErr> {
        let held = self.locked.held.get_mut();
        if held.begun {
            held.begun = false;
            let undo = held.undo();
            if let Some(slot) = held.slot.as_mut() {
                slot.rollback_owed = Some(undo);
                slot.settle().await?;
            }
        }
        Ok(())
    }
}

impl Held {
    /// What rolling this write back undoes.
    fn undo(&self) -> Undo {
        if self.joined {
            Undo::Joined
        } else {
            Undo::Transaction
        }
    }

    /// Ends the write: runs `last` and the deferred writes, then commits, in one text; or,
    /// when another write waits to begin, runs them (releasing the savepoint of a write
    /// that joined), leaves the transaction open, gives up the connection and waits for the
    /// commit. A failure leaves `begun` set: dropping the transaction rolls it back.
    async fn end(&mut self, last: Option<Statement>) -> Result<(), DbErr> {
        let leave_open = self.waiting.load(Ordering::SeqCst) > 0;
        let joins = self.joined || self.opening == Some(JOIN);
        let mut sql = String::new();
        let mut values = None;
        if let Some(stmt) = last {
            sql = stmt.sql;
            values = stmt.values;
        }
        let ending = match (joins, leave_open) {
            (false, false) => Some(COMMIT),
            (true, false) => Some(RELEASE_AND_COMMIT),
            (false, true) => None,
            (true, true) => Some(RELEASE),
        };
        if let Some(ending) = ending {
            if !sql.is_empty() {
                sql.push_str(";\n");
            }
            sql.push_str(ending);
        }
        if !sql.is_empty() || self.opening.is_some() || self.deferred.statements > 0 {
            let (conn, mut text) = self.prepare(&sql, values)?;
            text.query().execute(conn).await.map_err(exec_err)?;
        }
        self.begun = false;
        let slot = self
            .slot
            .as_mut()
            .ok_or_else(|| DbErr::Conn(RuntimeErr::Internal("the writer was released".into())))?;
        if !leave_open {
            let group = slot.open.take();
            slot.committed(1 + group.as_ref().map_or(0, |group| group.writes));
            if let Some(group) = group {
                group.tell(Ok(()));
            }
            return Ok(());
        }
        let commit = match &mut slot.open {
            Some(group) => {
                group.writes += 1;
                group.outcome.subscribe()
            }
            None => {
                let group = Group::new();
                let commit = group.outcome.subscribe();
                slot.open = Some(group);
                commit_later(
                    OwnedMutexGuard::mutex(&slot.guard).clone(),
                    slot.metrics.clone(),
                );
                commit
            }
        };
        drop(self.slot.take());
        outcome_of(commit).await
    }
}

impl Drop for SqliteTxn {
    fn drop(&mut self) {
        let held = self.locked.held.get_mut();
        if !held.begun {
            return;
        }
        let undo = held.undo();
        let Some(mut slot) = held.slot.take() else {
            return;
        };
        slot.rollback_owed = Some(undo);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(err) = slot.settle().await {
                    tracing::warn!(error = %err, "store.writer_rollback_failed");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests;
