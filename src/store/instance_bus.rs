//! [`InstanceBus`]: what one instance tells the others sharing its PostgreSQL database,
//! through PostgreSQL itself (`NOTIFY` on the channel `bowline_instances`, no other
//! service). Today: that a user's credentials changed, so every instance forgets the
//! sessions it cached for them and ends the streams opened with a credential that is gone —
//! a sign-out on one instance is honoured on all at once, not after `SESSION_CACHE_MS`.
//!
//! Each instance listens on a connection of its own. A message names its sender, and an
//! instance ignores its own. When the listening connection is lost, notifications sent
//! meanwhile are lost with it: the instance then forgets every cached session and has every
//! stream's credential checked again, and listens anew (retrying with a growing wait).
//! SQLite serves one process; it has no bus.

use std::sync::Arc;
use std::time::Duration;

use sea_orm::sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sea_orm::sqlx::{self, PgPool};
use serde::{Deserialize, Serialize};
use tokio_util::task::AbortOnDropHandle;

use super::credentials::CredentialChanges;
use super::session_cache::SessionCache;

/// The channel every instance of one database listens on.
const CHANNEL: &str = "bowline_instances";
/// The longest wait between two attempts to listen again.
const MAX_RETRY: Duration = Duration::from_secs(10);

/// One message on the bus.
#[derive(Debug, Serialize, Deserialize)]
struct Message {
    /// The sending instance.
    from: String,
    /// The user whose credentials changed.
    user: String,
}

/// An instance's end of the bus. Dropping the last clone stops listening.
#[derive(Debug, Clone)]
pub(crate) struct InstanceBus {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    me: String,
    pool: PgPool,
    _listener: AbortOnDropHandle<()>,
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
    /// Starts listening, on a connection of its own to the database of `options`.
    pub(crate) fn start(options: PgConnectOptions, receivers: Receivers) -> Self {
        let pool = PgPoolOptions::new()
            .max_connections(2)
            .min_connections(0)
            .acquire_timeout(Duration::from_secs(10))
            .connect_lazy_with(options);
        let me = uuid::Uuid::new_v4().to_string();
        let listener = tokio::spawn(listen(pool.clone(), me.clone(), receivers));
        Self {
            inner: Arc::new(Inner {
                me,
                pool,
                _listener: AbortOnDropHandle::new(listener),
            }),
        }
    }

    /// Tells the other instances that `user_id`'s credentials changed (after the change
    /// committed). Sent in the background; a failure is logged (the others then honour the
    /// change when their cached entries expire).
    pub(crate) fn credentials_changed(&self, user_id: &str) {
        let message = Message {
            from: self.inner.me.clone(),
            user: user_id.to_owned(),
        };
        let Ok(payload) = serde_json::to_string(&message) else {
            return;
        };
        let pool = self.inner.pool.clone();
        tokio::spawn(async move {
            let sent = sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CHANNEL)
                .bind(payload)
                .execute(&pool)
                .await;
            if let Err(err) = sent {
                tracing::warn!(error = %err, "instances.notify_failed");
            }
        });
    }
}

/// Listens until aborted: passes the other instances' messages on, and after a lost
/// connection (or a failure to listen) treats every credential as possibly changed.
async fn listen(pool: PgPool, me: String, receivers: Receivers) {
    let mut wait = Duration::from_millis(200);
    loop {
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(listener) => listener,
            Err(err) => {
                tracing::warn!(error = %err, "instances.listen_failed");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(MAX_RETRY);
                continue;
            }
        };
        // A lost connection is noticed here (`Ok(None)`) and given back to this loop, which
        // listens anew after telling everyone to look again.
        listener.eager_reconnect(false);
        if let Err(err) = listener.listen(CHANNEL).await {
            tracing::warn!(error = %err, "instances.listen_failed");
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(MAX_RETRY);
            continue;
        }
        // Whatever was sent before this LISTEN took effect was not heard.
        everything_changed(&receivers);
        wait = Duration::from_millis(200);
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    let Ok(message) = serde_json::from_str::<Message>(notification.payload())
                    else {
                        continue;
                    };
                    if message.from != me {
                        receivers.sessions.forget_user(&message.user);
                        receivers.changes.publish(&message.user);
                    }
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

/// After a gap in listening: no cached session is trusted, every stream's credential is
/// checked again.
fn everything_changed(receivers: &Receivers) {
    receivers.sessions.forget_all();
    receivers.changes.publish_everyone();
}
