//! PostgreSQL connections held beside the pool for the one statement every cached events
//! read runs (its calendar versions, [`super::event_reads::current_versions`]).
//!
//! sqlx pings every connection returned to its pool before another query may use it: a
//! second round trip per query, about a quarter of the server's CPU for a cached read over
//! TLS. A lane connection runs one statement at a time and goes back to the lane without a
//! ping. The ping's other purpose, draining a statement whose future was dropped halfway,
//! is served by dropping: a connection in use is owned by the read, so a read cancelled
//! halfway closes it, and a failed statement closes it too. Like the pool, the lane pings
//! a connection that sat idle for a while before using it again and replaces connections
//! past their lifetime.
//!
//! The lane never makes a read fail, nor wait long: when all its connections stay busy for
//! `WAIT`, or a connection cannot be opened within `CONNECT_WAIT`, or its connection fails,
//! the statement runs on the pool instead.

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection};
use sea_orm::sqlx::{self, Connection};
use tokio::sync::Semaphore;

use super::PING_AFTER_IDLE;

/// How long opening a lane connection may take before the statement runs on the pool.
const CONNECT_WAIT: Duration = Duration::from_secs(1);

/// How long a lane connection is used before it is replaced (sqlx's pool default).
const LIFETIME: Duration = Duration::from_secs(30 * 60);

/// The lane's connections' `application_name`, which tells them apart in
/// `pg_stat_activity`.
const APPLICATION_NAME: &str = "bowline read cache";

/// How long a statement waits for a lane connection before it runs on the pool instead.
const WAIT: Duration = Duration::from_millis(50);

/// Connections for single text-valued statements, beside the pool.
#[derive(Debug)]
pub(crate) struct UnpingedConnections {
    options: PgConnectOptions,
    /// One permit per connection the lane may hold, idle or in use.
    permits: Semaphore,
    idle: Mutex<Vec<Held>>,
}

#[derive(Debug)]
struct Held {
    conn: PgConnection,
    opened: Instant,
    used: Instant,
}

impl UnpingedConnections {
    /// A lane of at most `size` connections, opened as they are needed with the pool's
    /// `options`.
    pub(crate) fn new(options: &PgConnectOptions, size: usize) -> Self {
        Self {
            options: options.clone().application_name(APPLICATION_NAME),
            permits: Semaphore::new(size),
            idle: Mutex::new(Vec::with_capacity(size)),
        }
    }

    /// The text `sql` returns for `arg` (`Some(None)` when it returns no row), or `None`
    /// when the lane has no free connection or its connection failed: the caller runs the
    /// statement on the pool.
    pub(crate) async fn text(&self, sql: &'static str, arg: &str) -> Option<Option<String>> {
        let _permit = tokio::time::timeout(WAIT, self.permits.acquire())
            .await
            .ok()?
            .ok()?;
        let mut held = match self.take_idle().await {
            Some(held) => held,
            None => self.open().await?,
        };
        let row = sqlx::query_scalar::<_, String>(sql)
            .bind(arg)
            .fetch_optional(&mut held.conn)
            .await;
        match row {
            Ok(row) => {
                held.used = Instant::now();
                self.idle.lock().push(held);
                Some(row)
            }
            Err(err) => {
                tracing::warn!(error = %err, "read lane statement failed; using the pool");
                None
            }
        }
    }

    /// The most recently used idle connection still fit for use, closing the others that
    /// are past their lifetime or no longer answer.
    async fn take_idle(&self) -> Option<Held> {
        loop {
            let mut held = self.idle.lock().pop()?;
            if held.opened.elapsed() >= LIFETIME {
                close(held);
                continue;
            }
            if held.used.elapsed() >= PING_AFTER_IDLE && held.conn.ping().await.is_err() {
                continue;
            }
            return Some(held);
        }
    }

    async fn open(&self) -> Option<Held> {
        let opened = tokio::time::timeout(CONNECT_WAIT, PgConnection::connect_with(&self.options));
        match opened.await {
            Ok(Ok(conn)) => {
                let now = Instant::now();
                Some(Held {
                    conn,
                    opened: now,
                    used: now,
                })
            }
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "read lane cannot connect; using the pool");
                None
            }
            Err(_) => {
                tracing::warn!(
                    "read lane connection not open after {CONNECT_WAIT:?}; using the pool"
                );
                None
            }
        }
    }
}

/// Closes `held` politely in the background.
fn close(held: Held) {
    tokio::spawn(async move {
        let _ = held.conn.close().await;
    });
}
