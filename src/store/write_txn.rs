//! [`WriteTxn`]: the write transaction of either backend, on SQLite's writer connection
//! ([`super::writer`]) or on a PostgreSQL connection of its own ([`PgTxn`]), where every
//! server of a cluster writes and the database orders them. It takes the transaction's
//! stamp, runs its reads together and its writes deferred where the backend allows, and
//! once it commits announces what it owes: frames, steps after the commit, credential
//! changes.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use sea_orm::prelude::async_trait::async_trait;
use sea_orm::sea_query::{
    InsertStatement, PostgresQueryBuilder, SelectStatement, SqliteQueryBuilder, UpdateStatement,
};
use sea_orm::{
    ConnectionTrait, DbBackend, DbErr, ExecResult, QueryResult, Statement, StatementBuilder, Values,
};

use super::horizon::{InFlight, STAMP_POSTGRES, WriteHorizon, stamp_of};
use super::instance_bus::{OwnNotice, Unheard};
use super::outgoing::TxnOutgoing;
use super::postgres_txn::PgTxn;
use super::row_updates::RowUpdate;
use super::writer::SqliteTxn;
use crate::domain::ids::UserId;

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
    /// Where the commit leaves its frame notices to be heard ([`WriteTxn::hear_later`]).
    hear_later: parking_lot::Mutex<Option<Unheard>>,
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
            hear_later: parking_lot::Mutex::new(None),
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

    /// Runs the read `select` planned for this execution alone. On PostgreSQL it is not kept
    /// prepared: a read by a list of keys over a table that grows must not reuse a plan made
    /// while the table was small (a new database's, before its first `ANALYZE`), which
    /// scans it whole once it has grown. SQLite plans every statement by its indexes.
    pub async fn read_planned_now(
        &self,
        select: &SelectStatement,
    ) -> Result<Vec<QueryResult>, DbErr> {
        let statement = self.get_database_backend().build(select);
        match &self.txn {
            Txn::Sqlite(txn) => txn.conn().query_all_raw(statement).await,
            Txn::Postgres(txn) => txn.query_all_planned_now(statement).await,
        }
    }

    /// Runs `write`, a write whose outcome (its count of rows, rows it returns) nobody
    /// reads, in its turn among the transaction's statements: it waits for the
    /// transaction's next statement, or its commit, and goes in the same text (on SQLite
    /// no hand-off to SQLite's thread of its own, on PostgreSQL no round trip of its own,
    /// [`PgTxn::defer`]).
    ///
    /// A deferred write that fails fails the statement it went with, so only a transaction
    /// that gives up on any database error may defer: it must not take that failure for its
    /// own statement's and go on.
    pub async fn defer(&self, write: impl StatementBuilder) -> Result<(), DbErr> {
        self.defer_statement(self.get_database_backend().build(&write))
            .await
    }

    /// [`Self::defer`] of `update`, the update of the single row `row` describes. On
    /// PostgreSQL it is written with the row updates of the same shape deferred next to it,
    /// as one statement, after the transaction's other deferred writes
    /// ([`PgTxn::defer_row`]): only for a row that no other write deferred in the
    /// transaction reads or depends on. On SQLite, as [`Self::defer`].
    pub async fn defer_row(&self, update: UpdateStatement, row: &RowUpdate) -> Result<(), DbErr> {
        let statement = self.get_database_backend().build(&update);
        match &self.txn {
            Txn::Sqlite(txn) => {
                txn.defer(statement).await;
                Ok(())
            }
            Txn::Postgres(txn) => txn.defer_row(statement, row).await,
        }
    }

    /// [`Self::defer`] of a statement built already.
    pub async fn defer_statement(&self, statement: Statement) -> Result<(), DbErr> {
        match &self.txn {
            Txn::Sqlite(txn) => {
                txn.defer(statement).await;
                Ok(())
            }
            Txn::Postgres(txn) => txn.defer(statement).await,
        }
    }

    /// [`Self::defer`] for `inserts`, in order (on PostgreSQL as one statement,
    /// [`super::statements::one_statement`]).
    pub async fn defer_inserts(&self, inserts: Vec<InsertStatement>) -> Result<(), DbErr> {
        match &self.txn {
            Txn::Sqlite(_) => {
                for insert in inserts {
                    self.defer(insert).await?;
                }
                Ok(())
            }
            Txn::Postgres(txn) => {
                match super::statements::one_statement(DbBackend::Postgres, inserts) {
                    Some(statement) => txn.defer(statement).await,
                    None => Ok(()),
                }
            }
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
    /// the commit still waits to hear them, or leaves that wait ([`Self::hear_later`]).
    /// `None` on SQLite or without frames.
    pub fn frames_insert(&self) -> Option<sea_orm::sea_query::InsertStatement> {
        let bus = self.after_commit.bus.as_ref()?;
        let (insert, own) = bus.frames_insert(self.outgoing.take_frames())?;
        *self.own_notice.lock() = Some(own);
        Some(insert)
    }

    /// PostgreSQL: the commit does not wait until this instance's listener heard the
    /// transaction's frames (handed them to its streams); it leaves that wait in `unheard`,
    /// for whoever answers the change to wait on once the writer has gone on (a calendar's
    /// next batch need not wait for the answers of the one before). Without it, the commit
    /// waits. Either way a change is answered only once this instance's streams have it.
    pub fn hear_later(&self, unheard: &Unheard) {
        *self.hear_later.lock() = Some(unheard.clone());
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
            Txn::Postgres(txn) => announce.commit_postgres(txn).await?,
        }
        announce.run();
        Ok(())
    }

    /// Runs `stmt`, the transaction's last, and commits: the commit goes in the same text,
    /// after it (on SQLite one hand-off to SQLite's thread instead of two, on PostgreSQL one
    /// round trip, [`PgTxn::defer`]; if the statement fails, nothing after it runs and the
    /// transaction rolls back when dropped).
    pub async fn commit_after(self, stmt: Statement) -> Result<(), DbErr> {
        let (txn, mut announce) = self.split();
        match txn {
            Txn::Sqlite(txn) => txn.commit_after(stmt).await?,
            Txn::Postgres(txn) => {
                txn.defer(stmt).await?;
                announce.commit_postgres(txn).await?;
            }
        }
        announce.run();
        Ok(())
    }

    /// Rolls the transaction back (as dropping it does, but waiting until it is done).
    pub async fn rollback(self) -> Result<(), DbErr> {
        match self.txn {
            Txn::Sqlite(txn) => txn.rollback().await,
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
                hear_later: self.hear_later.into_inner(),
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
    /// Where the notices are left to be heard, instead of waiting here.
    hear_later: Option<Unheard>,
}

impl Announcement {
    /// PostgreSQL: puts the transaction's frames into it, as the notice the database sends
    /// every instance when it commits, and commits (the two in one round trip, with the
    /// writes deferred before them; a commit that notifies is flushed apart from it,
    /// [`PgTxn::commit_notifying`]); then waits until this instance heard
    /// its frame notices (that one, and one sent in an earlier statement), or leaves them to
    /// whoever waits on [`WriteTxn::hear_later`]'s `Unheard`.
    async fn commit_postgres(&mut self, txn: PgTxn) -> Result<(), DbErr> {
        // Without a bus the frames stay for this instance's streams ([`Self::run`]).
        let notice = self
            .hooks
            .bus
            .as_ref()
            .and_then(|bus| bus.frames_statement(self.outgoing.take_frames()));
        let sent = match notice {
            Some((statement, own)) => {
                txn.defer(statement).await?;
                Some(own)
            }
            None => None,
        };
        if sent.is_some() || self.own_notice.is_some() {
            txn.commit_notifying().await?;
        } else {
            txn.commit().await?;
        }
        let notices = sent.into_iter().chain(self.own_notice.take());
        match &self.hear_later {
            Some(unheard) => notices.for_each(|own| unheard.push(own)),
            None => {
                for own in notices {
                    own.heard().await;
                }
            }
        }
        Ok(())
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
            Txn::Sqlite(txn) => txn.conn().execute_raw(stmt).await,
            Txn::Postgres(txn) => txn.execute_raw(stmt).await,
        }
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        match &self.txn {
            Txn::Sqlite(txn) => txn.conn().execute_unprepared(sql).await,
            Txn::Postgres(txn) => txn.execute_unprepared(sql).await,
        }
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        match &self.txn {
            Txn::Sqlite(txn) => txn.conn().query_one_raw(stmt).await,
            Txn::Postgres(txn) => txn.query_one_raw(stmt).await,
        }
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        match &self.txn {
            Txn::Sqlite(txn) => txn.conn().query_all_raw(stmt).await,
            Txn::Postgres(txn) => txn.query_all_raw(stmt).await,
        }
    }
}
