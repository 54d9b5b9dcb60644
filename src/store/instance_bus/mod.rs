//! [`InstanceBus`]: what one instance tells the others sharing its PostgreSQL database,
//! through PostgreSQL itself, no other service: a notice is a row inserted into
//! `instance_notices`, whose trigger notifies the channel `bowline_instances` (migration
//! `m20261126_000019`). Notices:
//! - live frames, inserted inside the write transaction that owes them
//!   ([`super::WriteTxn::commit`]): heard only if it commits, and by every instance
//!   (the sender too) in commit order, so each stream gets them once and in order;
//! - a user's credentials changed: every instance forgets the sessions it cached for them
//!   and ends the streams opened with a credential that is gone;
//! - a batch of change mails is due, and rows were queued in a provider account's outbox:
//!   whichever instance holds that work wakes for it.
//!
//! Notifying commits are not flushed while they hold PostgreSQL's lock over them: a write
//! transaction's is flushed apart ([`super::postgres_txn::PgTxn::commit_notifying`]), a
//! notice sent on its own is not waited for.
//!
//! Frames too many for one notification go as several notices, each user's in order; a
//! notice still too large (one large frame) is stored and its id sent; rows older than
//! [`KEEP_STORED`] are deleted. Each instance listens on a connection of its own. When that
//! connection is lost, notices sent meanwhile are lost with it: the instance then forgets
//! every cached session, has every stream's credential checked again, and closes every
//! stream so its client reconnects and re-reads (the stream's recovery path), then listens
//! anew, retrying with a growing wait. SQLite serves one process; it has no bus.

mod listener;
mod notice;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, InsertStatement, PostgresQueryBuilder, Query};
use sea_orm::sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sea_orm::sqlx::{self, PgPool};
use sea_orm::{DbBackend, DbErr, RuntimeErr, Statement};
use tokio::sync::{mpsc, oneshot};
use tokio_util::task::AbortOnDropHandle;

use super::credentials::CredentialChanges;
use super::session_cache::SessionCache;
use crate::domain::frames::FrameBatch;
use crate::domain::ids::{AccountId, UserId};
use listener::{Hearers, listen, listen_on};
use notice::{Message, Notice, frames_notices};

/// The channel every instance of one database listens on.
pub(super) const CHANNEL: &str = "bowline_instances";
/// How long a stored notice is kept for the listeners to read.
const KEEP_STORED: Duration = Duration::from_secs(300);
/// How often stored notices past [`KEEP_STORED`] are deleted.
const CLEANUP_PERIOD: Duration = Duration::from_secs(60);
/// The statement that sends a notice.
const INSERT: &str = "INSERT INTO instance_notices (payload) VALUES ($1)";

/// What the instance does with the notices it hears, beyond the store's own caches: set
/// once its actors run ([`InstanceBus::attach`]).
pub trait InstanceEvents: Send + Sync + std::fmt::Debug {
    /// Frames for the streams of these users on this instance (each user's block holds
    /// their frames in order).
    fn frames(&self, frames: Vec<(UserId, Bytes)>);
    /// Notices may have been missed: every stream is closed so its client re-reads.
    fn notices_lost(&self);
    /// Another instance queued a batch of change mails due at `at`.
    fn mail_batch_due(&self, at: DateTime<Utc>);
    /// Another instance queued rows in the outbox of these accounts.
    fn provider_writes_queued(&self, accounts: &[(String, AccountId)]);
}

/// An instance's end of the bus. Dropping the last clone stops listening.
#[derive(Debug, Clone)]
pub(crate) struct InstanceBus {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    me: String,
    sent: AtomicU64,
    /// This instance's frame notices sent in write transactions, until heard back.
    waiting: Arc<Waiting>,
    /// Notices sent after a commit, in the order they were asked for.
    outgoing: mpsc::UnboundedSender<String>,
    events: Arc<OnceLock<Arc<dyn InstanceEvents>>>,
    /// The listener, the sender and the cleanup, stopped with the bus.
    tasks: [AbortOnDropHandle<()>; 3],
}

/// Own notices awaited by number, each until the listener heard it.
pub(super) type Waiting = parking_lot::Mutex<HashMap<u64, oneshot::Sender<()>>>;

/// How long a commit waits to hear its own frames before it answers anyway (the listening
/// connection may be down; its streams are then closed when it is back).
const HEARD_WAIT: Duration = Duration::from_secs(2);

/// A frame notice sent in a write transaction: once it committed, [`OwnNotice::heard`]
/// waits until this instance's listener heard it and handed the frames to its streams, so a
/// change answered to a client has reached the streams of this instance, as on SQLite.
#[derive(Debug)]
pub(crate) struct OwnNotice {
    n: u64,
    heard: Option<oneshot::Receiver<()>>,
    waiting: Arc<Waiting>,
}

impl OwnNotice {
    /// Waits (a bounded time) until the listener heard the notice.
    pub(crate) async fn heard(mut self) {
        if let Some(heard) = self.heard.take() {
            let _ = tokio::time::timeout(HEARD_WAIT, heard).await;
        }
    }
}

impl Drop for OwnNotice {
    fn drop(&mut self) {
        self.waiting.lock().remove(&self.n);
    }
}

/// Frame notices of committed transactions that this instance has not heard back yet, left
/// by their commits ([`super::WriteTxn::hear_later`]) to whoever answers the changes: they
/// wait for them ([`Unheard::heard`]) where the writer would have.
#[derive(Debug, Default, Clone)]
pub struct Unheard(Arc<parking_lot::Mutex<Vec<OwnNotice>>>);

impl Unheard {
    pub(crate) fn push(&self, own: OwnNotice) {
        self.0.lock().push(own);
    }

    /// Whether nothing is left to hear (always so on SQLite, which has no bus).
    pub fn is_empty(&self) -> bool {
        self.0.lock().is_empty()
    }

    /// Waits until this instance heard every notice left here (each a bounded time,
    /// [`OwnNotice::heard`]).
    pub async fn heard(&self) {
        let notices = std::mem::take(&mut *self.0.lock());
        for own in notices {
            own.heard().await;
        }
    }
}

/// What a message from another instance acts on: this instance's session cache and its
/// credential changes.
pub(crate) struct Receivers {
    /// Sessions found by token.
    pub sessions: Arc<SessionCache>,
    /// Where changes are told to this instance's streams.
    pub changes: Arc<CredentialChanges>,
}

impl InstanceBus {
    /// Starts listening, on a connection of its own to the database of `options`; answers
    /// once the instance listens (nothing sent after that is missed).
    pub(crate) async fn start(
        options: PgConnectOptions,
        receivers: Receivers,
    ) -> Result<Self, DbErr> {
        let pool = PgPoolOptions::new()
            .max_connections(3)
            .min_connections(0)
            .acquire_timeout(Duration::from_secs(10))
            // A notice sent on its own tells of a change already committed: it need not
            // wait for its flush, and so holds PostgreSQL's lock over notifying commits
            // (which every instance's writes take) for no flush. A crash that loses it
            // ends the listening connections too.
            .connect_lazy_with(options.options([("synchronous_commit", "off")]));
        let first = listen_on(&pool)
            .await
            .map_err(|err| DbErr::Conn(RuntimeErr::SqlxError(Arc::new(err))))?;
        let me = uuid::Uuid::new_v4().to_string();
        let events: Arc<OnceLock<Arc<dyn InstanceEvents>>> = Arc::default();
        let waiting: Arc<Waiting> = Arc::default();
        let (outgoing, queue) = mpsc::unbounded_channel();
        let listener = tokio::spawn(listen(
            pool.clone(),
            first,
            me.clone(),
            Hearers {
                receivers,
                events: events.clone(),
                waiting: waiting.clone(),
            },
        ));
        let sender = tokio::spawn(send_in_order(pool.clone(), queue));
        let cleanup = tokio::spawn(delete_old_notices(pool));
        Ok(Self {
            inner: Arc::new(Inner {
                me,
                sent: AtomicU64::new(0),
                waiting,
                outgoing,
                events,
                tasks: [
                    AbortOnDropHandle::new(listener),
                    AbortOnDropHandle::new(sender),
                    AbortOnDropHandle::new(cleanup),
                ],
            }),
        })
    }

    /// Stops listening (the server stopped; a clone that outlives it, such as a test's
    /// handle on the server, keeps no listening connection open nor opens it again). What
    /// was asked to be sent before still goes out: the sender ends with the last clone.
    pub(crate) fn stop(&self) {
        let [listener, _, cleanup] = &self.inner.tasks;
        listener.abort();
        cleanup.abort();
    }

    /// Sets what this instance does with the notices it hears (once; later calls are
    /// ignored). Notices heard before are dropped: nothing listens to them yet.
    pub(crate) fn attach(&self, events: Arc<dyn InstanceEvents>) {
        let _ = self.inner.events.set(events);
    }

    /// Tells the other instances that `user_id`'s credentials changed (after the change
    /// committed).
    pub(crate) fn credentials_changed(&self, user_id: &UserId) {
        self.send(Notice::Credentials {
            user: user_id.clone(),
        });
    }

    /// Sends `frames` to the streams of every instance (this one too), outside any write
    /// transaction: after the notices asked for before it.
    pub(crate) fn publish_frames(&self, frames: FrameBatch) {
        for notice in frames_notices(frames) {
            self.send(notice);
        }
    }

    /// Tells the other instances that a batch of change mails is due at `at`.
    pub(crate) fn mail_batch_due(&self, at: DateTime<Utc>) {
        self.send(Notice::MailBatchDue { at });
    }

    /// Tells the other instances that rows were queued in these accounts' outboxes.
    pub(crate) fn provider_writes_queued(&self, accounts: &[(String, AccountId)]) {
        self.send(Notice::ProviderWrites {
            accounts: accounts.to_vec(),
        });
    }

    /// The statement that sends `frames` to every instance's streams when the transaction
    /// it runs in commits (`None` for no frames), and the notice to wait for after it.
    pub(crate) fn frames_statement(&self, frames: FrameBatch) -> Option<(Statement, OwnNotice)> {
        let (insert, own) = self.frames_insert(frames)?;
        let (sql, values) = insert.build(PostgresQueryBuilder);
        Some((
            Statement::from_sql_and_values(DbBackend::Postgres, sql, values),
            own,
        ))
    }

    /// [`Self::frames_statement`] as an insert, to go in a statement with others: one row
    /// per notice, so that each fits in a notification ([`frames_notices`]), inserted (and
    /// so heard) in order. The notice waited for is the last, heard after the others.
    pub(crate) fn frames_insert(&self, frames: FrameBatch) -> Option<(InsertStatement, OwnNotice)> {
        let mut insert = Query::insert()
            .into_table(Alias::new("instance_notices"))
            .columns([Alias::new("payload")])
            .to_owned();
        let mut last = None;
        for notice in frames_notices(frames) {
            let (n, payload) = self.numbered_payload(notice)?;
            insert.values_panic([payload.into()]);
            last = Some(n);
        }
        let n = last?;
        let (tell, heard) = oneshot::channel();
        self.inner.waiting.lock().insert(n, tell);
        let own = OwnNotice {
            n,
            heard: Some(heard),
            waiting: self.inner.waiting.clone(),
        };
        Some((insert, own))
    }

    /// Queues `notice` for the sender task (sent after those queued before it). A failure
    /// is logged: the others then honour a credential change when their cached entries
    /// expire, and a stream's client sees a missed frame at its next delta read.
    fn send(&self, notice: Notice) {
        if let Some(payload) = self.payload(notice) {
            let _ = self.inner.outgoing.send(payload);
        }
    }

    fn payload(&self, notice: Notice) -> Option<String> {
        self.numbered_payload(notice).map(|(_, payload)| payload)
    }

    /// The notice as sent, and its number.
    fn numbered_payload(&self, notice: Notice) -> Option<(u64, String)> {
        let n = self.inner.sent.fetch_add(1, Ordering::Relaxed);
        let message = Message {
            from: self.inner.me.clone(),
            n,
            notice,
        };
        serde_json::to_string(&message).ok().map(|text| (n, text))
    }
}

/// Sends the queued notices one after the other, each committing on its own.
async fn send_in_order(pool: PgPool, mut queue: mpsc::UnboundedReceiver<String>) {
    while let Some(payload) = queue.recv().await {
        let sent = sqlx::query(INSERT).bind(payload).execute(&pool).await;
        if let Err(err) = sent {
            tracing::warn!(error = %err, "instances.notify_failed");
        }
    }
}

/// Deletes stored notices every listener has had time to read.
async fn delete_old_notices(pool: PgPool) {
    // The first round a period after the start, when the server's migrations have run.
    let mut every =
        tokio::time::interval_at(tokio::time::Instant::now() + CLEANUP_PERIOD, CLEANUP_PERIOD);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let deleted = sqlx::query(
            "DELETE FROM instance_notices WHERE created_at < clock_timestamp() - make_interval(secs => $1)",
        )
        .bind(KEEP_STORED.as_secs_f64())
        .execute(&pool)
        .await;
        if let Err(err) = deleted {
            tracing::warn!(error = %err, "instances.cleanup_failed");
        }
    }
}
