//! SQLite's writer: the one connection every write transaction runs on, held by the server
//! rather than by a pool, and [`WriteTxn`], the write transaction of either backend.
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
//!   answered its own count, not the text's); and a caller that knows its last statement sends
//!   `COMMIT` after it in the same text ([`WriteTxn::commit_after`]).
//! - A write whose outcome nobody reads waits ([`WriteTxn::defer`]) and goes in the text of
//!   the transaction's next statement, or of its `COMMIT`: an edit batch's writes reach
//!   SQLite's thread together, with its commit.
//!
//! A transaction dropped before its commit (an error, a refusal, a cancelled request) is
//! rolled back at once on a task that holds the connection until it is done, so no other
//! write starts inside it; where no runtime is left to run that task, the next transaction
//! rolls it back before it starts.
//!
//! On PostgreSQL, a write transaction runs on a pool connection ([`PgTxn`]): every server
//! of a cluster writes, and the database orders them.

use std::borrow::Cow;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use sea_orm::prelude::async_trait::async_trait;
use sea_orm::sea_query::{
    InsertStatement, PostgresQueryBuilder, SelectStatement, SqliteQueryBuilder,
};
use sea_orm::sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sea_orm::sqlx::{self, Connection, Executor};
use sea_orm::{
    ConnectionTrait, DbBackend, DbErr, ExecResult, QueryResult, RuntimeErr, Statement,
    StatementBuilder, Values,
};
use sea_query_sqlx::SqlxValues;
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::horizon::{InFlight, STAMP_POSTGRES, WriteHorizon, stamp_of};
use super::instance_bus::OwnNotice;
use super::outgoing::TxnOutgoing;
use super::postgres_txn::PgTxn;
use crate::domain::ids::UserId;

/// The statement that opens a write transaction: it takes SQLite's write lock at once, so
/// a transaction that reads before it writes never finds the database changed under it.
const BEGIN: &str = "BEGIN IMMEDIATE";
/// SQLite's plain `SQLITE_ERROR` result code, as sqlx reports it.
const SQLITE_ERROR: &str = "1";
/// The statement that ends one.
const COMMIT: &str = "COMMIT";

/// SQLite's writer connection.
#[derive(Debug, Clone)]
pub(crate) struct SqliteWriter {
    slot: Arc<Mutex<Slot>>,
}

/// What the writer's lock guards.
#[derive(Debug)]
struct Slot {
    /// `None` once closed.
    conn: Option<SqliteConnection>,
    /// A transaction was dropped open and its rollback has not run yet.
    rollback_owed: bool,
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
    /// have codes of their own).
    async fn settle(&mut self) -> Result<(), DbErr> {
        if !self.rollback_owed {
            return Ok(());
        }
        match self.conn()?.execute("ROLLBACK").await {
            Ok(_) => {}
            Err(sqlx::Error::Database(err)) if err.code().as_deref() == Some(SQLITE_ERROR) => {}
            Err(err) => return Err(exec_err(err)),
        }
        self.rollback_owed = false;
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
                rollback_owed: false,
            })),
        })
    }

    /// The connection outside any transaction (for a checkpoint), once the transaction
    /// before has finished.
    pub(crate) async fn lock(&self) -> Result<Locked, DbErr> {
        let mut slot = self.slot.clone().lock_owned().await;
        slot.settle().await?;
        slot.conn()?;
        Ok(Locked {
            held: Mutex::new(Held {
                slot: Some(slot),
                begin_owed: false,
                begun: false,
                deferred: Deferred::default(),
            }),
        })
    }

    /// Starts a write transaction (its `BEGIN` goes with its first statement).
    pub(crate) async fn begin(&self) -> Result<Txn, DbErr> {
        let mut locked = self.lock().await?;
        locked.held.get_mut().begin_owed = true;
        Ok(Txn::Sqlite(SqliteTxn { locked }))
    }

    /// Whether a transaction (or a checkpoint) holds the connection now.
    pub(crate) fn busy(&self) -> bool {
        self.slot.try_lock().is_err()
    }

    /// Closes the connection, waiting for the transaction in progress, if any.
    pub(crate) async fn close(&self) -> Result<(), DbErr> {
        let mut slot = self.slot.lock().await;
        slot.settle().await?;
        match slot.conn.take() {
            Some(conn) => conn
                .close()
                .await
                .map_err(|err| DbErr::Conn(RuntimeErr::SqlxError(Arc::new(err)))),
            None => Ok(()),
        }
    }
}

pub(super) fn exec_err(err: sqlx::Error) -> DbErr {
    DbErr::Exec(RuntimeErr::SqlxError(Arc::new(err)))
}

pub(super) fn query_err(err: sqlx::Error) -> DbErr {
    DbErr::Query(RuntimeErr::SqlxError(Arc::new(err)))
}

/// The writer connection, held: no other write can start until it is dropped.
#[derive(Debug)]
pub(crate) struct Locked {
    held: Mutex<Held>,
}

#[derive(Debug)]
struct Held {
    /// `Some` until a dropped transaction hands it to its rollback.
    slot: Option<OwnedMutexGuard<Slot>>,
    /// `BEGIN` is still to be sent, with the next statement.
    begin_owed: bool,
    /// `BEGIN` was sent (and may have run), and neither `COMMIT` nor `ROLLBACK` has.
    begun: bool,
    /// Writes waiting for the next statement's text ([`WriteTxn::defer`]).
    deferred: Deferred,
}

/// Statements held back to go in front of the transaction's next one, in one text.
#[derive(Debug, Default)]
struct Deferred {
    /// Each statement followed by `;`.
    sql: String,
    values: Vec<sea_orm::Value>,
    statements: usize,
}

/// A statement as it goes to SQLite's thread: with whatever must run before it in the
/// same text.
struct Prepared<'c, 's> {
    conn: &'c mut SqliteConnection,
    /// The caller's own text when nothing goes in front of it.
    sql: Cow<'s, str>,
    values: Option<Values>,
    /// How many statements come before the caller's (a `BEGIN`, deferred writes).
    leading: usize,
    /// Whether the text is kept prepared: not with deferred writes in front, whose mix
    /// rarely repeats (it would push texts that do out of sqlx's cache of prepared ones).
    persistent: bool,
}

impl Held {
    /// `sql` (with its `values`) with what must run before it in the same text: the
    /// transaction's `BEGIN` if it is owed (marking it sent: whether it ran or not, the
    /// transaction must now end in a rollback unless it commits), then the deferred writes,
    /// in the order they came.
    fn prepare<'s>(
        &mut self,
        sql: &'s str,
        values: Option<Values>,
    ) -> Result<Prepared<'_, 's>, DbErr> {
        let mut text = String::new();
        let mut leading = 0;
        if std::mem::take(&mut self.begin_owed) {
            self.begun = true;
            text.push_str(BEGIN);
            text.push_str(";\n");
            leading += 1;
        }
        let deferred = std::mem::take(&mut self.deferred);
        let values = if deferred.statements == 0 {
            values
        } else {
            text.push_str(&deferred.sql);
            leading += deferred.statements;
            let mut all = deferred.values;
            all.extend(values.map(|Values(more)| more).unwrap_or_default());
            Some(Values(all))
        };
        let sql = if text.is_empty() {
            Cow::Borrowed(sql)
        } else {
            text.push_str(sql);
            Cow::Owned(text)
        };
        Ok(Prepared {
            conn: self.conn()?,
            sql,
            values,
            leading,
            persistent: deferred.statements == 0,
        })
    }

    /// Holds `stmt` (one statement) back for the next text.
    fn defer(&mut self, stmt: Statement) {
        let deferred = &mut self.deferred;
        deferred.sql.push_str(&stmt.sql);
        deferred.sql.push_str(";\n");
        deferred
            .values
            .extend(stmt.values.map(|Values(values)| values).unwrap_or_default());
        deferred.statements += 1;
    }

    fn conn(&mut self) -> Result<&mut SqliteConnection, DbErr> {
        self.slot
            .as_mut()
            .ok_or_else(|| DbErr::Conn(RuntimeErr::Internal("the writer was released".into())))?
            .conn()
    }
}

impl Locked {
    /// Runs `sql`, several statements with their `values` in order, in one hand-off (with
    /// `BEGIN` in front if it is owed): the rows of each statement, in order.
    async fn read_together(
        &self,
        sql: &str,
        values: Values,
        statements: usize,
    ) -> Result<Vec<Vec<QueryResult>>, DbErr> {
        use futures::TryStreamExt;
        let mut held = self.held.lock().await;
        let prepared = held.prepare(sql, Some(values))?;
        #[expect(
            deprecated,
            reason = "SQLite's driver runs a text of several statements with their values bound \
                      in turn, as every multi-statement text of the writer does; fetch_many \
                      is what tells their rows apart"
        )]
        let results: Vec<sqlx::Either<_, _>> = bound(&prepared.sql, prepared.values)
            .persistent(prepared.persistent)
            .fetch_many(prepared.conn)
            .try_collect()
            .await
            .map_err(query_err)?;
        sections_of(results, statements, prepared.leading)
    }
}

/// The rows of each of `statements` statements, from what a text of them answered (a
/// statement's end, or one of its rows, in order), after `leading` statements whose results
/// are not the caller's (a `BEGIN`, deferred writes).
pub(super) fn sections_of<Done, Row: Into<QueryResult>>(
    results: Vec<sqlx::Either<Done, Row>>,
    statements: usize,
    leading: usize,
) -> Result<Vec<Vec<QueryResult>>, DbErr> {
    let mut sections = Vec::with_capacity(statements + leading);
    let mut rows = Vec::new();
    for result in results {
        match result {
            sqlx::Either::Left(_) => sections.push(std::mem::take(&mut rows)),
            sqlx::Either::Right(row) => rows.push(row.into()),
        }
    }
    if sections.len() == statements + leading {
        sections.drain(..leading);
    }
    if sections.len() != statements {
        return Err(DbErr::Custom(format!(
            "{statements} statements answered {} results",
            sections.len()
        )));
    }
    Ok(sections)
}

/// Binds a statement's values the way sea-orm's own SQLite driver does.
fn bound(sql: &str, values: Option<Values>) -> sqlx::query::Query<'_, sqlx::Sqlite, SqlxValues> {
    sqlx::query_with(
        sqlx::AssertSqlSafe(sql),
        SqlxValues(values.unwrap_or(Values(Vec::new()))),
    )
}

#[async_trait]
impl ConnectionTrait for Locked {
    fn get_database_backend(&self) -> DbBackend {
        DbBackend::Sqlite
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        use futures::TryStreamExt;
        let mut held = self.held.lock().await;
        let prepared = held.prepare(&stmt.sql, stmt.values)?;
        let query = bound(&prepared.sql, prepared.values).persistent(prepared.persistent);
        if prepared.leading == 0 {
            return query
                .execute(prepared.conn)
                .await
                .map(Into::into)
                .map_err(exec_err);
        }
        // The count of changed rows is the caller's statement's own, the last one's (sqlx
        // would add up every statement's, and SQLite leaves a `BEGIN` the count of the
        // change before it).
        #[expect(
            deprecated,
            reason = "SQLite's driver runs a text of several statements with their values bound \
                      in turn; fetch_many is what tells their counts apart"
        )]
        let results: Vec<sqlx::Either<_, _>> = query
            .fetch_many(prepared.conn)
            .try_collect()
            .await
            .map_err(exec_err)?;
        results
            .into_iter()
            .filter_map(sqlx::Either::left)
            .last()
            .map(Into::into)
            .ok_or_else(|| DbErr::Custom("a statement answered no result".into()))
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        let mut held = self.held.lock().await;
        let prepared = held.prepare(sql, None)?;
        if prepared.leading == 0 {
            return prepared
                .conn
                .execute(sqlx::AssertSqlSafe(prepared.sql.into_owned()))
                .await
                .map(Into::into)
                .map_err(exec_err);
        }
        bound(&prepared.sql, prepared.values)
            .persistent(prepared.persistent)
            .execute(prepared.conn)
            .await
            .map(Into::into)
            .map_err(exec_err)
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        let mut held = self.held.lock().await;
        let prepared = held.prepare(&stmt.sql, stmt.values)?;
        bound(&prepared.sql, prepared.values)
            .persistent(prepared.persistent)
            .fetch_optional(prepared.conn)
            .await
            .map(|row| row.map(Into::into))
            .map_err(query_err)
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        let mut held = self.held.lock().await;
        let prepared = held.prepare(&stmt.sql, stmt.values)?;
        bound(&prepared.sql, prepared.values)
            .persistent(prepared.persistent)
            .fetch_all(prepared.conn)
            .await
            .map(|rows| rows.into_iter().map(Into::into).collect())
            .map_err(query_err)
    }
}

/// A write transaction on SQLite's writer connection.
#[derive(Debug)]
pub struct SqliteTxn {
    locked: Locked,
}

impl SqliteTxn {
    async fn commit(mut self) -> Result<(), DbErr> {
        let held = self.locked.held.get_mut();
        if !held.begun && held.deferred.statements == 0 {
            // Nothing was sent or is waiting: there is no transaction to commit.
            held.begin_owed = false;
            return Ok(());
        }
        let prepared = held.prepare(COMMIT, None)?;
        bound(&prepared.sql, prepared.values)
            .persistent(prepared.persistent)
            .execute(prepared.conn)
            .await
            .map_err(query_err)?;
        // A failed `COMMIT` leaves `begun` set: dropping the transaction rolls it back.
        held.begun = false;
        Ok(())
    }

    async fn commit_after(mut self, stmt: Statement) -> Result<(), DbErr> {
        let held = self.locked.held.get_mut();
        let sql = format!("{};\n{COMMIT}", stmt.sql);
        let prepared = held.prepare(&sql, stmt.values)?;
        bound(&prepared.sql, prepared.values)
            .persistent(prepared.persistent)
            .execute(prepared.conn)
            .await
            .map_err(exec_err)?;
        // On an error, `begun` stays set: dropping the transaction rolls it back.
        held.begun = false;
        Ok(())
    }

    /// Holds `stmt` back for the transaction's next text ([`WriteTxn::defer`]).
    async fn defer(&self, stmt: Statement) {
        self.locked.held.lock().await.defer(stmt);
    }
}

impl Drop for SqliteTxn {
    fn drop(&mut self) {
        let held = self.locked.held.get_mut();
        if !held.begun {
            return;
        }
        let Some(mut slot) = held.slot.take() else {
            return;
        };
        slot.rollback_owed = true;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(err) = slot.settle().await {
                    tracing::warn!(error = %err, "store.writer_rollback_failed");
                }
            });
        }
    }
}

/// A write transaction ([`super::Database::begin_write`]): on SQLite's writer connection or
/// on a PostgreSQL pool connection. Dropped without [`WriteTxn::commit`], it rolls back.
/// The store functions that change a user's credentials inside it say so
/// ([`WriteTxn::credentials_changed`]); once it commits, the server forgets those users'
/// cached sessions and ends the streams whose credential is gone.
#[derive(Debug)]
pub struct WriteTxn {
    txn: Txn,
    after_commit: CredentialHooks,
    changed: parking_lot::Mutex<Vec<UserId>>,
    /// This process's write clock ([`super::horizon`]).
    horizon: Arc<WriteHorizon>,
    /// The transaction's stamp, once taken ([`WriteTxn::stamp`]).
    stamp: tokio::sync::OnceCell<DateTime<Utc>>,
    /// SQLite: the stamp, registered in flight until the transaction has ended.
    in_flight: parking_lot::Mutex<Option<InFlight>>,
    /// What the transaction announces once it commits.
    outgoing: TxnOutgoing,
    /// PostgreSQL: the frame notice already put in one of its statements
    /// ([`WriteTxn::frames_insert`]), to hear once it committed.
    own_notice: parking_lot::Mutex<Option<OwnNotice>>,
    /// Whether the unit of work ends in a rollback whatever it returns ([`WriteTxn::discard`]).
    discarded: std::sync::atomic::AtomicBool,
}

/// What a committed credential change must reach.
#[derive(Debug, Clone)]
pub(crate) struct CredentialHooks {
    pub(crate) sessions: Arc<super::session_cache::SessionCache>,
    pub(crate) changes: Arc<super::credentials::CredentialChanges>,
    /// PostgreSQL: the other instances, told too.
    pub(crate) bus: Option<super::instance_bus::InstanceBus>,
}

/// The connection a write transaction runs on.
#[derive(Debug)]
pub(crate) enum Txn {
    /// SQLite.
    Sqlite(SqliteTxn),
    /// PostgreSQL.
    Postgres(PgTxn),
}

impl WriteTxn {
    pub(crate) fn new(txn: Txn, after_commit: CredentialHooks, horizon: Arc<WriteHorizon>) -> Self {
        Self {
            txn,
            after_commit,
            changed: parking_lot::Mutex::new(Vec::new()),
            horizon,
            stamp: tokio::sync::OnceCell::new(),
            in_flight: parking_lot::Mutex::new(None),
            outgoing: TxnOutgoing::default(),
            own_notice: parking_lot::Mutex::new(None),
            discarded: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Drops everything this unit of work wrote: [`super::Database::write`] rolls it back
    /// even when its work returns `Ok` (an outcome that is an answer, not an error, such as
    /// a token that turned out to be someone else's).
    pub fn discard(&self) {
        self.discarded
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether [`Self::discard`] was called.
    pub(crate) fn is_discarded(&self) -> bool {
        self.discarded.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The transaction's timestamp, for every column a delta read compares that it writes
    /// (taken at the first call, the same after): on SQLite from this process's write clock,
    /// registered in flight until the transaction ends; on PostgreSQL the database's clock,
    /// read once the transaction is listed as a writer ([`super::horizon`]). Every horizon
    /// taken before this transaction commits is before it.
    pub async fn stamp(&self) -> Result<DateTime<Utc>, DbErr> {
        self.stamp
            .get_or_try_init(|| async {
                match &self.txn {
                    Txn::Sqlite(_) => {
                        let in_flight = self.horizon.begin();
                        let at = in_flight.at();
                        *self.in_flight.lock() = Some(in_flight);
                        Ok(at)
                    }
                    Txn::Postgres(txn) => {
                        let mut read = txn.read_together(&[STAMP_POSTGRES.to_owned()]).await?;
                        stamp_of(read.pop().and_then(|rows| rows.into_iter().next()))
                    }
                }
            })
            .await
            .copied()
    }

    /// Runs `statements`, reads that a write starts with (locks and what they guard), in one
    /// round trip with the transaction's `BEGIN`, each on a snapshot of its own: the rows of
    /// each, in order. With `stamped`, the transaction's stamp ([`Self::stamp`]) is taken in
    /// the same round trip, after them. On PostgreSQL the statements travel as text, their
    /// values written into it: they may hold ids and numbers only, never a client's text.
    pub async fn read_together(
        &self,
        statements: &[SelectStatement],
        stamped: bool,
    ) -> Result<Vec<Vec<QueryResult>>, DbErr> {
        match &self.txn {
            Txn::Sqlite(txn) => {
                let mut values = Vec::new();
                let mut texts = Vec::with_capacity(statements.len());
                for statement in statements {
                    let (sql, Values(more)) = statement.build(SqliteQueryBuilder);
                    texts.push(sql);
                    values.extend(more);
                }
                let sections = txn
                    .locked
                    .read_together(&texts.join(";\n"), Values(values), statements.len())
                    .await?;
                if stamped {
                    self.stamp().await?;
                }
                Ok(sections)
            }
            Txn::Postgres(txn) => {
                let mut texts: Vec<String> = statements
                    .iter()
                    .map(|statement| statement.to_string(PostgresQueryBuilder))
                    .collect();
                let stamped = stamped && self.stamp.get().is_none();
                if stamped {
                    texts.push(STAMP_POSTGRES.to_owned());
                }
                let mut sections = txn.read_together(&texts).await?;
                if stamped {
                    let at = stamp_of(sections.pop().and_then(|rows| rows.into_iter().next()))?;
                    let _ = self.stamp.set(at);
                }
                Ok(sections)
            }
        }
    }

    /// Runs `write`, a write whose outcome (its count of rows, rows it returns) nobody
    /// reads, in its turn among the transaction's statements. On SQLite it waits for the
    /// transaction's next statement, or its commit, and goes in the same text: a run of such
    /// writes costs no hand-off to SQLite's thread of its own. On PostgreSQL it runs now.
    ///
    /// A deferred write that fails fails the statement it went with, so only a transaction
    /// that gives up on any database error may defer: it must not take that failure for its
    /// own statement's and go on.
    pub async fn defer(&self, write: impl StatementBuilder) -> Result<(), DbErr> {
        let statement = self.get_database_backend().build(&write);
        match &self.txn {
            Txn::Sqlite(txn) => {
                txn.defer(statement).await;
                Ok(())
            }
            Txn::Postgres(txn) => txn.execute_raw(statement).await.map(|_| ()),
        }
    }

    /// [`Self::defer`] for `inserts`, in order: on PostgreSQL they run now as one statement
    /// ([`super::one_statement`]).
    pub async fn defer_inserts(&self, inserts: Vec<InsertStatement>) -> Result<(), DbErr> {
        match &self.txn {
            Txn::Sqlite(_) => {
                for insert in inserts {
                    self.defer(insert).await?;
                }
                Ok(())
            }
            Txn::Postgres(txn) => match super::one_statement(DbBackend::Postgres, inserts) {
                Some(statement) => txn.execute_raw(statement).await.map(|_| ()),
                None => Ok(()),
            },
        }
    }

    /// `user_id`'s credentials (sessions, password, member tokens) or the user itself change
    /// in this transaction: announced once it commits.
    pub fn credentials_changed(&self, user_id: &UserId) {
        self.changed.lock().push(user_id.clone());
    }

    /// What the transaction announces once it commits (frames, steps after the commit).
    pub fn outgoing(&self) -> &TxnOutgoing {
        &self.outgoing
    }

    /// PostgreSQL: the insert that sends the frames announced so far, for the caller to put
    /// in one of the transaction's statements (sparing the commit a statement of its own);
    /// the commit still waits to hear them. `None` on SQLite or without frames.
    pub fn frames_insert(&self) -> Option<sea_orm::sea_query::InsertStatement> {
        let bus = self.after_commit.bus.as_ref()?;
        let (insert, own) = bus.frames_insert(self.outgoing.take_frames())?;
        *self.own_notice.lock() = Some(own);
        Some(insert)
    }

    /// Whether other instances may share the database: frames then go to every instance
    /// through it, and a user may hold streams on another instance.
    pub fn crosses_instances(&self) -> bool {
        self.after_commit.bus.is_some()
    }

    /// Commits the transaction.
    pub async fn commit(self) -> Result<(), DbErr> {
        let (txn, mut announce) = self.split();
        match txn {
            Txn::Sqlite(txn) => txn.commit().await?,
            Txn::Postgres(txn) => {
                let own = announce.send_frames_in(&txn).await?;
                txn.commit().await?;
                for own in own.into_iter().chain(announce.own_notice.take()) {
                    own.heard().await;
                }
            }
        }
        announce.run();
        Ok(())
    }

    /// Runs `stmt`, the transaction's last, and commits. On SQLite the commit goes in the
    /// same text, after it (one hand-off to SQLite's thread instead of two; if the statement
    /// fails, nothing after it runs and the transaction rolls back when dropped); on
    /// PostgreSQL the two go one after the other.
    pub async fn commit_after(self, stmt: Statement) -> Result<(), DbErr> {
        let (txn, mut announce) = self.split();
        match txn {
            Txn::Sqlite(txn) => txn.commit_after(stmt).await?,
            Txn::Postgres(txn) => {
                txn.execute_raw(stmt).await?;
                let own = announce.send_frames_in(&txn).await?;
                txn.commit().await?;
                for own in own.into_iter().chain(announce.own_notice.take()) {
                    own.heard().await;
                }
            }
        }
        announce.run();
        Ok(())
    }

    /// Rolls the transaction back (as dropping it does, but waiting until it is done).
    pub async fn rollback(self) -> Result<(), DbErr> {
        match self.txn {
            Txn::Sqlite(mut txn) => {
                let held = txn.locked.held.get_mut();
                if held.begun {
                    held.begun = false;
                    if let Some(slot) = held.slot.as_mut() {
                        slot.rollback_owed = true;
                        slot.settle().await?;
                    }
                }
                Ok(())
            }
            Txn::Postgres(txn) => txn.rollback().await,
        }
    }

    /// The transaction and what its commit announces (which holds its stamp in flight
    /// until it is run or dropped, after the commit).
    fn split(self) -> (Txn, Announcement) {
        let users = self.changed.into_inner();
        (
            self.txn,
            Announcement {
                users,
                hooks: self.after_commit,
                in_flight: self.in_flight.into_inner(),
                horizon: self.horizon,
                outgoing: self.outgoing,
                own_notice: self.own_notice.into_inner(),
            },
        )
    }
}

/// The credential changes of a transaction, told once it committed.
struct Announcement {
    users: Vec<UserId>,
    hooks: CredentialHooks,
    /// The transaction's stamp, in flight until the commit has ended (this is dropped).
    in_flight: Option<InFlight>,
    /// Told of the commit (a horizon read before it is not reused after it).
    horizon: Arc<WriteHorizon>,
    /// The frames and steps of the transaction.
    outgoing: TxnOutgoing,
    /// The frame notice sent in one of its statements, to hear after the commit.
    own_notice: Option<OwnNotice>,
}

impl Announcement {
    /// PostgreSQL: puts the transaction's frames into it, as the notice the database sends
    /// every instance when it commits; the notice to wait for once it committed.
    async fn send_frames_in(&self, txn: &PgTxn) -> Result<Option<OwnNotice>, DbErr> {
        let Some(bus) = &self.hooks.bus else {
            return Ok(None);
        };
        let Some((statement, own)) = bus.frames_statement(self.outgoing.take_frames()) else {
            return Ok(None);
        };
        txn.execute_raw(statement).await?;
        Ok(Some(own))
    }

    fn run(self) {
        self.horizon.committed();
        drop(self.in_flight);
        self.outgoing.run();
        for user in &self.users {
            self.hooks.sessions.forget_user(user);
            self.hooks.changes.publish(user);
            if let Some(bus) = &self.hooks.bus {
                bus.credentials_changed(user);
            }
        }
    }
}

#[async_trait]
impl ConnectionTrait for WriteTxn {
    fn get_database_backend(&self) -> DbBackend {
        match &self.txn {
            Txn::Sqlite(_) => DbBackend::Sqlite,
            Txn::Postgres(_) => DbBackend::Postgres,
        }
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        match &self.txn {
            Txn::Sqlite(txn) => txn.locked.execute_raw(stmt).await,
            Txn::Postgres(txn) => txn.execute_raw(stmt).await,
        }
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        match &self.txn {
            Txn::Sqlite(txn) => txn.locked.execute_unprepared(sql).await,
            Txn::Postgres(txn) => txn.execute_unprepared(sql).await,
        }
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        match &self.txn {
            Txn::Sqlite(txn) => txn.locked.query_one_raw(stmt).await,
            Txn::Postgres(txn) => txn.query_one_raw(stmt).await,
        }
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        match &self.txn {
            Txn::Sqlite(txn) => txn.locked.query_all_raw(stmt).await,
            Txn::Postgres(txn) => txn.query_all_raw(stmt).await,
        }
    }
}
