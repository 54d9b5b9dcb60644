//! Persistence: the only code that holds a database connection.
//!
//! [`Database`] wraps sea-orm's pool for either backend: the embedded SQLite file (WAL, busy
//! timeout, foreign keys) or PostgreSQL. The store owns every transaction: the layers above
//! describe a change through the unit of work [`Database::write`] hands out, and it begins,
//! commits or rolls back. Write transactions ([`Database::begin_write`]) start with
//! `BEGIN IMMEDIATE` on SQLite's writer connection, so concurrent read-then-write
//! transactions queue instead of failing with `SQLITE_BUSY`. One submodule per aggregate
//! holds its operations; [`statements`] the helpers they write their statements with.

pub mod accounts;
pub mod attendance;
pub mod avatars;
pub mod caldav_accounts;
pub mod calendars;
mod commit_write;
pub mod credentials;
pub mod db_errors;
pub mod event_shares;
pub mod events;
pub mod federation_connections;
pub mod file_lock;
pub mod horizon;
pub mod ics;
pub(crate) mod instance_bus;
pub mod invites;
pub mod maintenance;
pub mod member_tokens;
pub mod members;
pub mod mirrors;
mod next_write;
pub mod notifications;
pub mod oauth_accounts;
pub mod outbox;
mod outgoing;
pub mod pages;
pub mod polls;
mod postgres_text;
mod postgres_txn;
pub mod provider_leases;
pub mod push;
pub mod reminders;
mod row_updates;
pub mod scheduled_tasks;
pub mod secrets;
pub mod session_cache;
pub mod sessions;
pub mod settings;
pub(crate) mod statements;
mod unpinged_connections;
pub mod users;
pub mod verifications;
pub mod wal;
mod write_txn;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use migration::{Migrator, MigratorTrait};
use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
use sea_orm::{
    AccessMode, ConnectOptions, ConnectionTrait, DatabaseConnection, DatabaseTransaction,
    DbBackend, IsolationLevel, Statement, TransactionOptions, TransactionTrait,
};

use crate::config::StorageSettings;
use crate::domain::frames::FrameBatch;
use crate::domain::ids::{AccountId, UserId};
use crate::metrics::Metrics;
pub use commit_write::CommitWrite;
use credentials::CredentialChanges;
use events::read_cache::{EventReadCache, StreamLimits};
use file_lock::FileLock;
use instance_bus::InstanceBus;
pub use instance_bus::InstanceEvents;
pub use instance_bus::Unheard;
pub use next_write::NextWrite;
pub use outgoing::TxnOutgoing;
pub use row_updates::RowUpdate;
use session_cache::SessionCache;
use unpinged_connections::UnpingedConnections;
pub use write_txn::WriteTxn;
use writer::SqliteWriter;

/// What the store's operations run on, as the layers above name it: the pool
/// ([`Database`]) or a write transaction the store handed out ([`WriteTxn`]).
pub use sea_orm::ConnectionTrait as Connection;
/// A failure of the database, as the store's operations report it.
pub use sea_orm::DbErr;

/// Which database Bowline is running on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded SQLite file.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

impl Backend {
    /// Lower-case name for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

/// A connection pool to Bowline's database.
#[derive(Debug, Clone)]
pub struct Database {
    conn: DatabaseConnection,
    /// SQLite: the one connection write transactions use ([`writer`]). PostgreSQL writes
    /// use the pool.
    writer: Option<SqliteWriter>,
    /// SQLite: the database file, which [`wal::checkpoint`] syncs; `None` on PostgreSQL and
    /// for an in-memory database.
    file: Option<PathBuf>,
    /// Sessions recently found by their token ([`session_cache`]).
    sessions: Arc<SessionCache>,
    /// Committed changes to users' credentials ([`credentials`]).
    credentials: Arc<CredentialChanges>,
    /// PostgreSQL: connections beside the pool for the cached reads' version checks
    /// ([`unpinged_connections`]); `None` on SQLite.
    unpinged_connections: Option<Arc<UnpingedConnections>>,
    /// Full events reads, served while the reader's calendars are unchanged
    /// ([`events::reads::all_visible`]).
    event_reads: Arc<EventReadCache>,
    /// Which calendars mirror a provider account ([`outbox::targets`]).
    mirror_cache: Arc<outbox::MirrorCache>,
    /// SQLite: this process's hold on the database file ([`file_lock`]).
    file_lock: Option<FileLock>,
    /// PostgreSQL: the other instances on this database ([`instance_bus`]).
    bus: Option<instance_bus::InstanceBus>,
    /// This process's write clock and writes in flight ([`horizon`]); shared by the servers
    /// of one process on one SQLite file.
    write_horizon: Arc<horizon::WriteHorizon>,
    /// Where the time to begin a transaction is recorded (the server's registry).
    metrics: Option<Arc<Metrics>>,
    backend: Backend,
}

/// How long a PostgreSQL connection may sit idle in the pool before it is pinged on its
/// next use (and a connection of the [`unpinged_connections`] before its next statement).
pub(crate) const PING_AFTER_IDLE: Duration = Duration::from_secs(30);

/// File name of the embedded database inside `DATA_DIR`.
pub const SQLITE_FILE: &str = "bowline.db";

impl Database {
    /// Opens the configured database (creating the SQLite file and its directory if needed).
    /// An SQLite file another process has open is refused ([`file_lock`]).
    pub async fn connect(settings: &StorageSettings) -> Result<Self, DbErr> {
        Self::connect_sharing(settings, None).await
    }

    /// [`Self::connect`] for a second server in this process on the database of `sharing`:
    /// an SQLite file is opened under the first server's hold on it, and the two share what
    /// one process keeps of its sessions and its write clock (one process, one file). On
    /// PostgreSQL the second server is an instance like any other.
    pub async fn connect_sharing(
        settings: &StorageSettings,
        sharing: Option<&Database>,
    ) -> Result<Self, DbErr> {
        let url = match &settings.database_url {
            Some(url) => url.expose().to_owned(),
            None => {
                std::fs::create_dir_all(&settings.data_dir).map_err(|err| {
                    DbErr::Custom(format!(
                        "cannot create data directory {}: {err}",
                        settings.data_dir.display()
                    ))
                })?;
                format!(
                    "sqlite://{}?mode=rwc",
                    settings.data_dir.join(SQLITE_FILE).display()
                )
            }
        };
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else {
            Backend::Postgres
        };
        let mut options = ConnectOptions::new(url);
        options
            .max_connections(settings.max_connections)
            .min_connections(1)
            .connect_timeout(Duration::from_secs(10))
            .acquire_timeout(Duration::from_secs(10))
            .sqlx_logging(false)
            .map_sqlx_sqlite_opts(|opts| {
                opts.create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    // Durable: an acknowledged commit survives a power loss. Calendar
                    // actors group their commits so this costs one fsync per batch.
                    .synchronous(SqliteSynchronous::Full)
                    .busy_timeout(Duration::from_secs(10))
                    .foreign_keys(true)
                    // 1 MiB of page cache per connection instead of SQLite's 2 MiB: pages
                    // are a read from the operating system's cache away, and a pool of 8
                    // connections would otherwise grow the server by 16 MiB.
                    .pragma("cache_size", "-1024")
                    // A statement that changes several rows inside a transaction keeps
                    // the pages it changes in a statement journal, so that it can fail
                    // alone. Past 64 KiB SQLite spills that journal to a new temporary
                    // file, which a batch of creates always outgrew: every batch
                    // created, wrote and unlinked a file. In memory, it is freed with
                    // the statement.
                    .pragma("temp_store", "memory")
                    // The log is checkpointed in the background (`wal`); SQLite's own
                    // checkpoint inside a commit is only the backstop.
                    .pragma("wal_autocheckpoint", wal::BACKSTOP_PAGES.to_string())
            })
            // Write transactions are read committed and read-write whatever the server's
            // defaults, set once per connection rather than by a `SET TRANSACTION` round
            // trip per transaction.
            .map_sqlx_postgres_opts(|opts| {
                opts.options([
                    ("default_transaction_isolation", "read committed"),
                    ("default_transaction_read_only", "off"),
                ])
            });
        // A pooled connection is pinged before use only after it has been idle a while (a
        // server, proxy or firewall may have dropped it); pinging on every acquire, sqlx's
        // default, cost every query a second round trip. SQLite connections live in this
        // process and are never pinged.
        match backend {
            Backend::Sqlite => options.test_before_acquire(false),
            Backend::Postgres => options.test_before_acquire_if_idle_for(PING_AFTER_IDLE),
        };
        let conn = sea_orm::Database::connect(options).await?;
        let (writer, file, file_lock) = match backend {
            Backend::Sqlite => {
                let file = wal::database_file(&conn).await?;
                let held = sharing.and_then(|first| first.file_lock.as_ref());
                let file_lock = match (&file, held) {
                    (Some(file), Some(lock)) if lock.covers(file) => Some(lock.clone()),
                    (Some(file), _) => Some(FileLock::acquire(file)?),
                    (None, _) => None,
                };
                let options = conn.get_sqlite_connection_pool().connect_options();
                let writer = SqliteWriter::open(&options).await?;
                (Some(writer), file, file_lock)
            }
            Backend::Postgres => (None, None, None),
        };
        let same_file = |first: &&Database| {
            first.file.is_some() && first.file == file && first.backend == Backend::Sqlite
        };
        let (sessions, credentials, write_horizon) = match sharing.filter(same_file) {
            Some(first) => (
                first.sessions.clone(),
                first.credentials.clone(),
                first.write_horizon.clone(),
            ),
            None => (
                Arc::new(SessionCache::new(Duration::from_millis(
                    settings.session_cache_ms,
                ))),
                Arc::new(CredentialChanges::default()),
                Arc::new(horizon::WriteHorizon::default()),
            ),
        };
        let bus = match backend {
            Backend::Postgres => Some(
                InstanceBus::start(
                    conn.get_postgres_connection_pool()
                        .connect_options()
                        .as_ref()
                        .clone(),
                    instance_bus::Receivers {
                        sessions: sessions.clone(),
                        changes: credentials.clone(),
                    },
                )
                .await?,
            ),
            Backend::Sqlite => None,
        };
        // SQLite answers in this process: its checks need no connections of their own.
        let unpinged_connections =
            (backend == Backend::Postgres && settings.read_cache_connections > 0).then(|| {
                Arc::new(UnpingedConnections::new(
                    &conn.get_postgres_connection_pool().connect_options(),
                    settings.read_cache_connections as usize,
                ))
            });
        Ok(Self {
            conn,
            writer,
            file,
            sessions,
            credentials,
            unpinged_connections,
            event_reads: Arc::new(EventReadCache::new(
                settings.read_cache_bytes,
                StreamLimits::new(settings),
            )),
            mirror_cache: Arc::new(outbox::MirrorCache::default()),
            file_lock,
            bus,
            write_horizon,
            metrics: None,
            backend,
        })
    }

    /// Records in `metrics` how long each transaction waits for its connection
    /// (`svc_db_pool_acquire_seconds`), how long each write holds it
    /// (`svc_db_write_hold_seconds`) and, on SQLite, how many writes each commit commits
    /// (`svc_db_commit_writes`).
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        if let Some(writer) = &self.writer {
            writer.record_in(metrics.clone());
        }
        self.metrics = Some(metrics);
        self
    }

    /// Connections `(pool, in_use, idle)`: sea-orm's pool (`main`) and, on SQLite, the
    /// writer connection (`writer`: in use while a write transaction holds it).
    pub fn pool_usage(&self) -> Vec<(&'static str, u32, u32)> {
        let (size, idle) = match self.backend {
            Backend::Sqlite => {
                let pool = self.conn.get_sqlite_connection_pool();
                (pool.size(), pool.num_idle())
            }
            Backend::Postgres => {
                let pool = self.conn.get_postgres_connection_pool();
                (pool.size(), pool.num_idle())
            }
        };
        let idle = u32::try_from(idle).unwrap_or(u32::MAX).min(size);
        let mut usage = vec![("main", size - idle, idle)];
        if let Some(writer) = &self.writer {
            let busy = u32::from(writer.busy());
            usage.push(("writer", busy, 1 - busy));
        }
        usage
    }

    /// Counts a write transaction begun ahead as taken or released, if metrics are attached.
    pub(crate) fn write_ahead(&self, outcome: &'static str) {
        if let Some(metrics) = &self.metrics {
            metrics.write_ahead(outcome);
        }
    }

    /// Records the wait for a transaction's connection, if metrics are attached.
    fn acquired(&self, mode: &'static str, started: Instant) {
        if let Some(metrics) = &self.metrics {
            metrics.db_acquired(mode, started.elapsed());
        }
    }

    /// Applies every pending migration.
    pub async fn migrate(&self) -> Result<(), DbErr> {
        Migrator::up(&self.conn, None).await
    }

    /// Which calendars mirror a provider account, as far as this process has asked.
    pub(crate) fn mirror_cache(&self) -> &outbox::MirrorCache {
        &self.mirror_cache
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The pool, for queries in this module's children.
    fn conn(&self) -> &DatabaseConnection {
        &self.conn
    }

    /// PostgreSQL: the connections beside the pool for the cached reads' version checks.
    pub(crate) fn unpinged_connections(&self) -> Option<&UnpingedConnections> {
        self.unpinged_connections.as_deref()
    }

    /// PostgreSQL: whether the pool has a connection idle, one a write may take without
    /// anyone waiting for it. Always `false` on SQLite (one writer connection).
    pub(crate) fn write_connection_idle(&self) -> bool {
        self.writer.is_none() && self.conn.get_postgres_connection_pool().num_idle() > 0
    }

    /// Starts a write transaction (`BEGIN IMMEDIATE` on SQLite's writer connection; on
    /// PostgreSQL a plain `BEGIN`, read committed and read-write by the connection's
    /// defaults).
    pub async fn begin_write(&self) -> Result<WriteTxn, DbErr> {
        let started = Instant::now();
        let txn = match &self.writer {
            Some(writer) => write_txn::Txn::Sqlite(writer.begin().await?),
            None => write_txn::Txn::Postgres(
                postgres_txn::PgTxn::begin(
                    self.conn.get_postgres_connection_pool(),
                    self.metrics.clone(),
                )
                .await?,
            ),
        };
        self.acquired("write", started);
        Ok(WriteTxn::new(
            txn,
            self.credential_hooks(),
            self.write_horizon.clone(),
        ))
    }

    /// One unit of work: begins a write transaction, runs `work` on it and commits what it
    /// wrote when it returns `Ok` (then its frames and after-commit steps go out); an `Err`
    /// (or a panic, or a caller that went away, or [`WriteTxn::discard`]) rolls everything
    /// back. The callers describe the change through the aggregates' operations on the
    /// transaction; beginning, ending and rolling back are the store's.
    pub async fn write<T, E>(
        &self,
        work: impl AsyncFnOnce(&WriteTxn) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbErr>,
    {
        let txn = self.begin_write().await?;
        Self::finish_write(txn, work).await
    }

    /// Runs `work` on `txn` and commits it (or rolls it back), as [`Self::write`].
    pub(crate) async fn finish_write<T, E>(
        txn: WriteTxn,
        work: impl AsyncFnOnce(&WriteTxn) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbErr>,
    {
        let value = work(&txn).await?;
        if txn.is_discarded() {
            txn.rollback().await?;
        } else {
            txn.commit().await?;
        }
        Ok(value)
    }

    /// The moment before which no write still in flight can commit ([`horizon`]): a delta
    /// read's `serverTime`, taken before its snapshot begins.
    pub async fn horizon(&self) -> Result<DateTime<Utc>, DbErr> {
        horizon::horizon(&self.conn, &self.write_horizon, horizon::Freshness::Now).await
    }

    /// A horizon for a full read's `serverTime`: on PostgreSQL possibly one read up to 50 ms
    /// ago ([`horizon::Freshness::Recent`]). A full read returns its whole snapshot anyway, so
    /// an older horizon only means the changes of those milliseconds come once more with the
    /// next delta read, and busy full readers spare the database a query each.
    pub async fn recent_horizon(&self) -> Result<DateTime<Utc>, DbErr> {
        horizon::horizon(&self.conn, &self.write_horizon, horizon::Freshness::Recent).await
    }

    /// Where a committed credential change goes ([`WriteTxn::credentials_changed`]).
    fn credential_hooks(&self) -> write_txn::CredentialHooks {
        write_txn::CredentialHooks {
            sessions: self.sessions.clone(),
            changes: self.credentials.clone(),
            bus: self.bus.clone(),
        }
    }

    /// Starts a read-only transaction that sees one consistent snapshot (repeatable read on
    /// PostgreSQL; SQLite's read transactions are snapshots in WAL mode).
    pub async fn begin_read(&self) -> Result<DatabaseTransaction, DbErr> {
        let options = match self.backend {
            Backend::Sqlite => TransactionOptions::default(),
            Backend::Postgres => TransactionOptions {
                isolation_level: Some(IsolationLevel::RepeatableRead),
                access_mode: Some(AccessMode::ReadOnly),
                ..Default::default()
            },
        };
        let started = Instant::now();
        let txn = self.conn.begin_with_options(options).await?;
        self.acquired("read", started);
        Ok(txn)
    }

    /// A change to `user_id` or their credentials (sessions, member tokens) was committed:
    /// forgets their cached sessions and tells the listeners of [`Self::credential_changes`].
    /// The store functions given a [`Database`] call it themselves; those given a
    /// [`WriteTxn`] have the transaction call it once it commits.
    pub fn credentials_changed(&self, user_id: &UserId) {
        self.sessions.forget_user(user_id);
        self.credentials.publish(user_id);
        if let Some(bus) = &self.bus {
            bus.credentials_changed(user_id);
        }
    }

    /// Whether other instances may share this database (PostgreSQL): frames then go
    /// through it ([`instance_bus`]), and a user may hold streams on another instance.
    pub fn crosses_instances(&self) -> bool {
        self.bus.is_some()
    }

    /// Sets what this instance does with what the others tell it (PostgreSQL; once its
    /// actors run).
    pub fn attach_instance_events(&self, events: Arc<dyn InstanceEvents>) {
        if let Some(bus) = &self.bus {
            bus.attach(events);
        }
    }

    /// Sends `frames` to the streams of every instance, after the notices sent before
    /// (PostgreSQL; outside a write transaction). `false` on SQLite: the caller delivers.
    pub fn publish_frames(&self, frames: FrameBatch) -> Result<(), FrameBatch> {
        match &self.bus {
            Some(bus) => {
                bus.publish_frames(frames);
                Ok(())
            }
            None => Err(frames),
        }
    }

    /// Tells the other instances that a batch of change mails is due at `at`.
    pub fn tell_mail_batch_due(&self, at: DateTime<Utc>) {
        if let Some(bus) = &self.bus {
            bus.mail_batch_due(at);
        }
    }

    /// Tells the other instances that rows were queued in these accounts' outboxes.
    pub fn tell_provider_writes_queued(&self, accounts: &[(String, AccountId)]) {
        if let Some(bus) = &self.bus {
            bus.provider_writes_queued(accounts);
        }
    }

    /// Committed changes to users' credentials, to follow.
    pub fn credential_changes(&self) -> &CredentialChanges {
        &self.credentials
    }

    /// Checks that the database answers.
    pub async fn ping(&self) -> Result<(), DbErr> {
        self.conn.ping().await
    }

    /// Closes the pools, waiting for connections to be returned.
    pub async fn close(self) -> Result<(), DbErr> {
        if let Some(bus) = &self.bus {
            bus.stop();
        }
        if let Some(writer) = self.writer {
            writer.close().await?;
        }
        self.conn.close().await
    }
}

/// The store's functions run on a [`Database`] as on a transaction: what is above the store
/// holds the database, hands it to the store's functions, and never a connection of its
/// own. Statements run on a pooled connection.
#[sea_orm::prelude::async_trait::async_trait]
impl ConnectionTrait for Database {
    fn get_database_backend(&self) -> DbBackend {
        self.conn.get_database_backend()
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<sea_orm::ExecResult, DbErr> {
        self.conn.execute_raw(stmt).await
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<sea_orm::ExecResult, DbErr> {
        self.conn.execute_unprepared(sql).await
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<sea_orm::QueryResult>, DbErr> {
        self.conn.query_one_raw(stmt).await
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<sea_orm::QueryResult>, DbErr> {
        self.conn.query_all_raw(stmt).await
    }
}
