//! The listening side of the instance bus: one connection that `LISTEN`s, hands every
//! notice to what acts on it, reads stored notices, and after a lost connection listens
//! anew, treating everything as possibly missed.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sea_orm::sqlx::postgres::PgListener;
use sea_orm::sqlx::{self, PgPool};

use super::notice::{Heard, Message, Notice, user_blocks};
use super::{CHANNEL, InstanceEvents, Receivers, Waiting};

/// The longest wait between two attempts to listen again.
const MAX_RETRY: Duration = Duration::from_secs(10);

/// A listening connection, or why there is none.
pub(super) async fn listen_on(pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    // A lost connection is noticed (`Ok(None)`) and given back to the caller, which
    // listens anew after telling everyone to look again.
    listener.eager_reconnect(false);
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

/// Listens until aborted, starting on `first`: acts on every notice heard, and after a lost
/// connection (or a failure to listen) treats everything as possibly missed.
pub(super) async fn listen(pool: PgPool, first: PgListener, me: String, hearers: Hearers) {
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
pub(super) struct Hearers {
    pub(super) receivers: Receivers,
    pub(super) events: Arc<OnceLock<Arc<dyn InstanceEvents>>>,
    pub(super) waiting: Arc<Waiting>,
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
