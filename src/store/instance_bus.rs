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
//! A notice too large for a notification is stored and its id sent; rows older than
//! [`KEEP_STORED`] are deleted. Each instance listens on a connection of its own. When that
//! connection is lost, notices sent meanwhile are lost with it: the instance then forgets
//! every cached session, has every stream's credential checked again, and closes every
//! stream so its client reconnects and re-reads (the stream's recovery path), then listens
//! anew, retrying with a growing wait. SQLite serves one process; it has no bus.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use sea_orm::sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sea_orm::sqlx::{self, PgPool};
use sea_orm::sea_query::{Alias, InsertStatement, PostgresQueryBuilder, Query};
use sea_orm::{DbBackend, DbErr, RuntimeErr, Statement};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use tokio_util::task::AbortOnDropHandle;

use super::credentials::CredentialChanges;
use super::session_cache::SessionCache;
use crate::domain::frames::FrameBatch;

/// The channel every instance of one database listens on.
const CHANNEL: &str = "bowline_instances";
/// The longest wait between two attempts to listen again.
const MAX_RETRY: Duration = Duration::from_secs(10);
/// How long a stored notice is kept for the listeners to read.
const KEEP_STORED: Duration = Duration::from_secs(300);
/// How often stored notices past [`KEEP_STORED`] are deleted.
const CLEANUP_PERIOD: Duration = Duration::from_secs(60);
/// The statement that sends a notice.
const INSERT: &str = "INSERT INTO instance_notices (payload) VALUES ($1)";

/// One notice on the bus, as sent.
#[derive(Debug, Serialize, Deserialize)]
struct Message {
    /// The sending instance.
    from: String,
    /// The sender's count of its notices: PostgreSQL folds identical notifications of one
    /// transaction into one, so no two notices are identical.
    n: u64,
    #[serde(flatten)]
    notice: Notice,
}

/// What a notice says.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Notice {
    /// A user's credentials changed.
    Credentials { user: String },
    /// Frames for users' streams: each user's frames are the listed blocks, in order.
    Frames {
        blocks: Vec<String>,
        users: Vec<(String, Vec<u32>)>,
    },
    /// A batch of change mails is due at `at`.
    MailBatchDue { at: DateTime<Utc> },
    /// Rows were queued in the outbox of these accounts (`(provider, account)`).
    ProviderWrites { accounts: Vec<(String, String)> },
}

/// What a notification carries: a notice, or the id of a stored one.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Heard {
    Stored { stored: i64 },
    Message(Message),
}

/// What the instance does with the notices it hears, beyond the store's own caches: set
/// once its actors run ([`InstanceBus::attach`]).
pub trait InstanceEvents: Send + Sync + std::fmt::Debug {
    /// Frames for the streams of these users on this instance (each user's block holds
    /// their frames in order).
    fn frames(&self, frames: Vec<(String, Bytes)>);
    /// Notices may have been missed: every stream is closed so its client re-reads.
    fn notices_lost(&self);
    /// Another instance queued a batch of change mails due at `at`.
    fn mail_batch_due(&self, at: DateTime<Utc>);
    /// Another instance queued rows in the outbox of these accounts.
    fn provider_writes_queued(&self, accounts: &[(String, String)]);
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
    _tasks: [AbortOnDropHandle<()>; 3],
}

/// Own notices awaited by number, each until the listener heard it.
type Waiting = parking_lot::Mutex<HashMap<u64, oneshot::Sender<()>>>;

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
            .connect_lazy_with(options);
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
                _tasks: [
                    AbortOnDropHandle::new(listener),
                    AbortOnDropHandle::new(sender),
                    AbortOnDropHandle::new(cleanup),
                ],
            }),
        })
    }

    /// Sets what this instance does with the notices it hears (once; later calls are
    /// ignored). Notices heard before are dropped: nothing listens to them yet.
    pub(crate) fn attach(&self, events: Arc<dyn InstanceEvents>) {
        let _ = self.inner.events.set(events);
    }

    /// Tells the other instances that `user_id`'s credentials changed (after the change
    /// committed).
    pub(crate) fn credentials_changed(&self, user_id: &str) {
        self.send(Notice::Credentials {
            user: user_id.to_owned(),
        });
    }

    /// Sends `frames` to the streams of every instance (this one too), outside any write
    /// transaction: after the notices asked for before it.
    pub(crate) fn publish_frames(&self, frames: FrameBatch) {
        if let Some(notice) = frames_notice(frames) {
            self.send(notice);
        }
    }

    /// Tells the other instances that a batch of change mails is due at `at`.
    pub(crate) fn mail_batch_due(&self, at: DateTime<Utc>) {
        self.send(Notice::MailBatchDue { at });
    }

    /// Tells the other instances that rows were queued in these accounts' outboxes.
    pub(crate) fn provider_writes_queued(&self, accounts: &[(String, String)]) {
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

    /// [`Self::frames_statement`] as an insert, to go in a statement with others.
    pub(crate) fn frames_insert(&self, frames: FrameBatch) -> Option<(InsertStatement, OwnNotice)> {
        let (n, payload) = self.numbered_payload(frames_notice(frames)?)?;
        let (tell, heard) = oneshot::channel();
        self.inner.waiting.lock().insert(n, tell);
        let own = OwnNotice {
            n,
            heard: Some(heard),
            waiting: self.inner.waiting.clone(),
        };
        let insert = Query::insert()
            .into_table(Alias::new("instance_notices"))
            .columns([Alias::new("payload")])
            .values_panic([payload.into()])
            .to_owned();
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

/// The notice of `frames`: each distinct block once, and each user's list of them.
fn frames_notice(frames: FrameBatch) -> Option<Notice> {
    if frames.is_empty() {
        return None;
    }
    let (blocks, users) = frames.shared_blocks();
    let blocks = blocks
        .iter()
        .map(|block| String::from_utf8_lossy(block).into_owned())
        .collect();
    Some(Notice::Frames { blocks, users })
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
    let mut every = tokio::time::interval(CLEANUP_PERIOD);
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

/// A listening connection, or why there is none.
async fn listen_on(pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    // A lost connection is noticed (`Ok(None)`) and given back to the caller, which
    // listens anew after telling everyone to look again.
    listener.eager_reconnect(false);
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

/// Listens until aborted, starting on `first`: acts on every notice heard, and after a lost
/// connection (or a failure to listen) treats everything as possibly missed.
async fn listen(pool: PgPool, first: PgListener, me: String, hearers: Hearers) {
    let mut listener = Some(first);
    let mut wait = Duration::from_millis(200);
    loop {
        let mut current = match listener.take() {
            Some(listener) => listener,
            None => match listen_on(&pool).await {
                Ok(listener) => {
                    // Whatever was sent before this LISTEN took effect was not heard.
                    hearers.everything_changed();
                    wait = Duration::from_millis(200);
                    listener
                }
                Err(err) => {
                    tracing::warn!(error = %err, "instances.listen_failed");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(MAX_RETRY);
                    continue;
                }
            },
        };
        loop {
            match current.try_recv().await {
                Ok(Some(notification)) => {
                    let heard = match serde_json::from_str::<Heard>(notification.payload()) {
                        Ok(Heard::Message(message)) => message,
                        Ok(Heard::Stored { stored }) => match read_stored(&pool, stored).await {
                            Some(message) => message,
                            None => {
                                hearers.everything_changed();
                                continue;
                            }
                        },
                        Err(_) => continue,
                    };
                    hearers.act_on(heard, &me);
                }
                Ok(None) => {
                    tracing::warn!("instances.connection_lost");
                    break;
                }
                Err(err) => {
                    tracing::warn!(error = %err, "instances.connection_lost");
                    break;
                }
            }
        }
    }
}

/// The stored notice `id` (`None`, logged, when it cannot be read).
async fn read_stored(pool: &PgPool, id: i64) -> Option<Message> {
    let row: Result<Option<(String,)>, _> =
        sqlx::query_as("SELECT payload FROM instance_notices WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await;
    match row {
        Ok(Some((payload,))) => serde_json::from_str(&payload).ok(),
        Ok(None) => {
            tracing::warn!(id, "instances.stored_notice_gone");
            None
        }
        Err(err) => {
            tracing::warn!(error = %err, "instances.stored_notice_unread");
            None
        }
    }
}

/// Who acts on what the listener hears.
struct Hearers {
    receivers: Receivers,
    events: Arc<OnceLock<Arc<dyn InstanceEvents>>>,
    waiting: Arc<Waiting>,
}

impl Hearers {
    /// Acts on one notice. Frames are for every instance, the sender too (then the commit
    /// that sent them is told they were heard); the rest only for the others (the sender
    /// acted already).
    fn act_on(&self, message: Message, me: &str) {
        let mine = message.from == me;
        let events = self.events.get();
        match message.notice {
            Notice::Frames { blocks, users } => {
                if let Some(events) = events {
                    events.frames(user_blocks(&blocks, users));
                }
                if mine && let Some(heard) = self.waiting.lock().remove(&message.n) {
                    let _ = heard.send(());
                }
            }
            Notice::Credentials { user } if !mine => {
                self.receivers.sessions.forget_user(&user);
                self.receivers.changes.publish(&user);
            }
            Notice::MailBatchDue { at } if !mine => {
                if let Some(events) = events {
                    events.mail_batch_due(at);
                }
            }
            Notice::ProviderWrites { accounts } if !mine => {
                if let Some(events) = events {
                    events.provider_writes_queued(&accounts);
                }
            }
            _ => {}
        }
    }

    /// After a gap in listening: no cached session is trusted, every stream's credential
    /// is checked again, and every stream is closed so its client re-reads what it missed.
    fn everything_changed(&self) {
        self.receivers.sessions.forget_all();
        self.receivers.changes.publish_everyone();
        if let Some(events) = self.events.get() {
            events.notices_lost();
        }
    }
}

/// Each user's frames as one block, from the distinct `blocks` and the users' lists.
fn user_blocks(blocks: &[String], users: Vec<(String, Vec<u32>)>) -> Vec<(String, Bytes)> {
    let blocks: Vec<Bytes> = blocks
        .iter()
        .map(|block| Bytes::copy_from_slice(block.as_bytes()))
        .collect();
    users
        .into_iter()
        .filter_map(|(user, indices)| {
            let mut joined = Vec::new();
            for index in indices {
                joined.extend_from_slice(blocks.get(index as usize)?);
            }
            Some((user, Bytes::from(joined)))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::domain::frames::Frame;
    use serde_json::json;

    #[test]
    fn a_frames_notice_gives_each_user_their_frames_in_order() {
        let mut batch = FrameBatch::default();
        batch.add(["ann", "bob"], &Frame::new("a", json!({})));
        batch.add(["ann"], &Frame::new("b", json!({"x": "é"})));
        let Some(Notice::Frames { blocks, users }) = frames_notice(batch) else {
            panic!("frames give a frames notice");
        };
        assert_eq!(blocks.len(), 2, "a block shared by two users is sent once");
        let mut delivered = user_blocks(&blocks, users);
        delivered.sort();
        assert_eq!(
            delivered,
            vec![
                (
                    "ann".to_owned(),
                    Bytes::from(
                        "data: {\"type\":\"a\",\"payload\":{}}\n\ndata: {\"type\":\"b\",\"payload\":{\"x\":\"é\"}}\n\n"
                    )
                ),
                (
                    "bob".to_owned(),
                    Bytes::from_static(b"data: {\"type\":\"a\",\"payload\":{}}\n\n")
                ),
            ]
        );
        assert!(frames_notice(FrameBatch::default()).is_none());
    }

    #[test]
    fn a_stored_notice_and_a_message_are_told_apart() {
        assert!(matches!(
            serde_json::from_str::<Heard>("{\"stored\": 7}"),
            Ok(Heard::Stored { stored: 7 })
        ));
        let message = Message {
            from: "a".into(),
            n: 1,
            notice: Notice::Credentials { user: "u".into() },
        };
        let text = serde_json::to_string(&message).unwrap();
        assert!(matches!(
            serde_json::from_str::<Heard>(&text),
            Ok(Heard::Message(Message {
                notice: Notice::Credentials { .. },
                ..
            }))
        ));
    }
}
