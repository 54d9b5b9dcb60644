//! Full events reads too big to render whole ([`super::reads::all_visible`] hands them here):
//! the reader's events leave the database in chunks while the response is being written, so
//! the server holds a few chunks per read whatever the number of events or the speed of the
//! client.
//!
//! **One statement, one snapshot.** The read takes a pooled connection of its own, opens a
//! read transaction on it (repeatable read and read-only on PostgreSQL; a deferred `BEGIN`
//! on SQLite, whose read transactions are snapshots in WAL mode and never take the writer's
//! lock), reads the reader's calendar versions (the answer's entity tag), then runs one
//! statement that lists every visible event in the order of the small read (start, then
//! id), one packed row per event ([`super::reads::PackedEvent`]), and reads its rows as they
//! come: sqlx hands SQLite's rows over from its worker thread through a bounded channel and
//! PostgreSQL's through the socket, so the statement runs only as far ahead as the reader
//! takes rows. A server-side cursor or a keyset page per chunk were the alternatives: SQLite
//! has no cursors, and without an index on `events.start` every keyset page would scan and
//! sort all the reader's events again (quadratic in their number), where the one statement
//! sorts their keys once. Events changed during the read are read as they were in the
//! snapshot: each appears once, in one state, and the versions are the snapshot's.
//!
//! **Memory.** SQLite sorts in this process, and the server's connections keep temporary
//! tables and sorts in memory (`temp_store`, for the writer's statement journals): a sort
//! of every event a big reader sees would hold them all in SQLite's heap, and since each
//! connection runs on a thread of its own, the C allocator would keep that memory in the
//! thread's arena long after. So the stream's connection sorts in temporary files
//! (`temp_store = FILE` while it streams, restored before it goes back to the pool), where
//! SQLite keeps about its page cache's worth in memory, and the statement sorts only the
//! events' keys (start and id) in a subquery and packs each event in the outer query as it
//! leaves the sort. The outer query reads from that one subquery and has no `ORDER BY` of
//! its own, the shape in which SQLite keeps the subquery's order (a join or an outer
//! `ORDER BY` would make it drop it). PostgreSQL sorts in its own process, so there the
//! statement is the small read's join, one packed row per event (twice as fast as the
//! SQLite shape on PostgreSQL).
//!
//! **Chunks and backpressure.** A task of the read's own gathers `EVENTS_STREAM_CHUNK`
//! packed events (or [`CHUNK_BYTES`]) into one [`PackedEvents`] and hands it to the
//! response through a channel of [`AHEAD`] chunks: when the client reads slowly the channel
//! fills, the task waits, and so does the statement.
//!
//! **Bounds.** The task holds its connection and snapshot (which on SQLite keeps the
//! write-ahead log from being checkpointed past it) for `EVENTS_STREAM_TIMEOUT_MS` at most:
//! then it gives up, logs it (counts only), closes the connection and the response is cut
//! off. Half of the pool's connections (at least one) may stream at once
//! ([`super::read_cache::StreamLimits`]): the others keep serving small reads and, on
//! PostgreSQL, writes (SQLite writes have a connection of their own). Of those, one reader
//! may run at most two (fewer than all): their further reads wait in the reader's own line
//! first, so no reader can take every stream. A read that finds its places taken waits in
//! line for [`QUEUE_WAIT`] in all, then is refused as busy before any byte of its answer.
//!
//! A stream that ends any other way than with its last event (a database error, the
//! timeout) yields an error instead of ending, so the response is cut off rather than
//! ending as a well-formed but incomplete list; one whose client went away stops at once.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use sea_orm::sqlx::pool::PoolConnection;
use sea_orm::sqlx::{self, Connection};
use sea_orm::{DbErr, RuntimeErr};
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use super::read_cache::BigReader;
use super::reads::{COLUMNS, PackedEvents, VERSIONS_POSTGRES, VERSIONS_SQLITE, sqlite_columns};
use crate::domain::ids::UserId;
use crate::store::{Backend, Database};

/// Chunks the task may have read ahead of the response.
const AHEAD: usize = 2;

/// Packed bytes after which a chunk is handed over even if it has fewer events than
/// configured (events with long descriptions).
pub const CHUNK_BYTES: usize = 512 * 1024;

/// How long a read waits for one of the streams that may run at once.
pub const QUEUE_WAIT: Duration = Duration::from_secs(10);

/// Why a streamed read did not start.
#[derive(Debug, thiserror::Error)]
pub enum StreamRefused {
    /// Every stream that may run at once was taken for [`QUEUE_WAIT`].
    #[error("too many large events reads at once")]
    Busy,
    /// The database failed before the first event.
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// A streamed read that stopped before its last event (the cause is logged where it
/// happened).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the events read was cut off")]
pub struct StreamBroken;

/// What the task hands the response.
enum Part {
    Versions(String),
    Events(PackedEvents),
    End,
}

type Piece = Result<Part, DbErr>;

/// The events of one streamed read, chunk by chunk ([`Stream`]): it ends after the last
/// chunk, or yields [`StreamBroken`] once if the read stopped before.
#[derive(Debug)]
pub struct StreamedRead {
    versions: String,
    parts: mpsc::Receiver<Piece>,
    done: bool,
}

impl std::fmt::Debug for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Versions(_) => "Versions",
            Self::Events(_) => "Events",
            Self::End => "End",
        })
    }
}

impl StreamedRead {
    /// The reader's calendar versions in the read's snapshot
    /// ([`super::reads::versions`]).
    pub fn versions(&self) -> &str {
        &self.versions
    }

    /// The first chunk (`None` when the snapshot holds no events), or the database's error:
    /// the caller can still answer with an error instead of a cut-off list.
    pub async fn first(&mut self) -> Result<Option<PackedEvents>, DbErr> {
        match self.parts.recv().await {
            Some(Ok(Part::Events(events))) => Ok(Some(events)),
            Some(Ok(Part::End)) => {
                self.done = true;
                Ok(None)
            }
            Some(Err(err)) => {
                self.done = true;
                Err(err)
            }
            Some(Ok(Part::Versions(_))) | None => {
                self.done = true;
                Err(DbErr::Custom("the events stream ended early".into()))
            }
        }
    }
}

impl Stream for StreamedRead {
    type Item = Result<PackedEvents, StreamBroken>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let next = match self.parts.poll_recv(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(next) => next,
        };
        Poll::Ready(match next {
            Some(Ok(Part::Events(events))) => Some(Ok(events)),
            Some(Ok(Part::End)) => {
                self.done = true;
                None
            }
            Some(Ok(Part::Versions(_)) | Err(_)) | None => {
                self.done = true;
                Some(Err(StreamBroken))
            }
        })
    }
}

/// Everything `user_id` can see, streamed from one snapshot: once one of the streams that
/// may run at once is free (else [`StreamRefused::Busy`] after [`QUEUE_WAIT`]), the read's
/// task opens its snapshot and reads the versions, and the read is returned with them.
pub async fn all_visible(db: &Database, user_id: &UserId) -> Result<StreamedRead, StreamRefused> {
    let limits = db.event_reads.streams();
    let reader = limits.reader(user_id);
    let queued = tokio::time::Instant::now() + QUEUE_WAIT;
    let own = tokio::time::timeout_at(queued, reader.permits.clone().acquire_owned())
        .await
        .map_err(|_| StreamRefused::Busy)?
        .map_err(|_| StreamRefused::Busy)?;
    let permit = tokio::time::timeout_at(queued, limits.permits.clone().acquire_owned())
        .await
        .map_err(|_| StreamRefused::Busy)?
        .map_err(|_| StreamRefused::Busy)?;
    let (sender, parts) = mpsc::channel(AHEAD);
    let task = Task {
        user_id: user_id.clone(),
        chunk: limits.chunk,
        timeout: limits.timeout,
        deadline: Instant::now() + limits.timeout,
        sender,
        reader,
        small: limits.above,
        _permits: (own, permit),
    };
    match db.backend() {
        Backend::Sqlite => {
            let pool = db.conn().get_sqlite_connection_pool().clone();
            tokio::spawn(async move {
                match pool.acquire().await {
                    Ok(conn) => task.run(conn, Dialect::sqlite()).await,
                    Err(err) => task.refuse(err).await,
                }
            });
        }
        Backend::Postgres => {
            let pool = db.conn().get_postgres_connection_pool().clone();
            tokio::spawn(async move {
                match pool.acquire().await {
                    Ok(conn) => task.run(conn, Dialect::postgres()).await,
                    Err(err) => task.refuse(err).await,
                }
            });
        }
    }
    let mut read = StreamedRead {
        versions: String::new(),
        parts,
        done: false,
    };
    match read.parts.recv().await {
        Some(Ok(Part::Versions(versions))) => read.versions = versions,
        Some(Err(err)) => return Err(err.into()),
        Some(Ok(_)) | None => {
            return Err(DbErr::Custom("the events stream ended early".into()).into());
        }
    }
    Ok(read)
}

/// The statement of a streamed read on SQLite (see the module documentation for its shape).
fn sqlite_statement() -> String {
    let columns = sqlite_columns();
    format!(
        "SELECT (SELECT json_array({columns}, \
           (SELECT group_concat(hex(l.calendar_id), ',' ORDER BY l.created_at, l.calendar_id) \
            FROM calendar_events l JOIN calendar_members m ON m.calendar_id = l.calendar_id \
            WHERE l.event_id = e.id AND m.user_id = ?1)) \
         FROM events e WHERE e.id = k.id) AS r \
         FROM (SELECT e.id AS id FROM events e WHERE e.deleted_at IS NULL AND e.id IN (\
           SELECT l.event_id FROM calendar_events l \
           JOIN calendar_members m ON m.calendar_id = l.calendar_id WHERE m.user_id = ?1) \
         ORDER BY e.start, e.id) k"
    )
}

/// The statement of a streamed read on PostgreSQL: the small read's join, one packed row
/// per event (PostgreSQL sorts them in its own memory and files, twice as fast here as
/// SQLite's shape).
fn postgres_statement() -> String {
    format!(
        "SELECT json_build_array({COLUMNS}, \
           string_agg(l.calendar_id::text, ',' ORDER BY l.created_at, l.calendar_id))::text AS r \
         FROM events e JOIN calendar_events l ON l.event_id = e.id \
         JOIN calendar_members m ON m.calendar_id = l.calendar_id \
         WHERE m.user_id = $1 AND e.deleted_at IS NULL GROUP BY e.id ORDER BY e.start, e.id"
    )
}

/// How a stream reads on one database.
struct Dialect {
    /// A setting of the connection for the stream, and the statement that restores it.
    setting: Option<(&'static str, &'static str)>,
    /// Opens the snapshot.
    begin: &'static str,
    /// [`super::reads::versions`].
    versions: &'static str,
    /// The events, packed one per row.
    statement: String,
}

impl Dialect {
    /// SQLite: a deferred `BEGIN`, and temporary files for the sort (see the module
    /// documentation), restored to memory before the connection goes back to the pool.
    fn sqlite() -> Self {
        Self {
            setting: Some(("PRAGMA temp_store = FILE", "PRAGMA temp_store = MEMORY")),
            begin: "BEGIN",
            versions: VERSIONS_SQLITE,
            statement: sqlite_statement(),
        }
    }

    /// PostgreSQL: a repeatable-read, read-only snapshot.
    fn postgres() -> Self {
        Self {
            setting: None,
            begin: "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
            versions: VERSIONS_POSTGRES,
            statement: postgres_statement(),
        }
    }
}

/// How the task's statement ended.
enum Outcome {
    /// Every event was handed over: this many.
    Complete(usize),
    /// The response was dropped (the client went away).
    Abandoned,
    /// The deadline passed, after this many events were handed over.
    TimedOut(usize),
    /// The database failed.
    Failed(sqlx::Error),
}

/// The task that reads one stream.
struct Task {
    user_id: UserId,
    chunk: usize,
    timeout: Duration,
    deadline: Instant,
    sender: mpsc::Sender<Piece>,
    /// The reader, forgotten as a big reader if the stream lists no more than `small`.
    reader: BigReader,
    small: u64,
    /// The reader's and the server's places for one stream.
    _permits: (OwnedSemaphorePermit, OwnedSemaphorePermit),
}

impl Task {
    /// Reads the stream on `conn` in `dialect`.
    async fn run<DB>(self, mut conn: PoolConnection<DB>, dialect: Dialect)
    where
        DB: sqlx::Database,
        for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
        (String,): for<'r> sqlx::FromRow<'r, DB::Row>,
        for<'q> String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
        DB::Arguments: sqlx::IntoArguments<DB>,
    {
        let outcome = async {
            if let Some((before, _)) = dialect.setting
                && let Err(err) = sqlx::raw_sql(before).execute(&mut *conn).await
            {
                return Outcome::Failed(err);
            }
            let begin = sqlx::AssertSqlSafe(dialect.begin.to_owned());
            let mut txn = match conn.begin_with(begin).await {
                Ok(txn) => txn,
                Err(err) => return Outcome::Failed(err),
            };
            let versions = sqlx::AssertSqlSafe(dialect.versions.to_owned());
            let versions = sqlx::query_scalar::<DB, String>(versions)
                .bind(self.user_id.to_string())
                .fetch_one(&mut *txn)
                .await;
            match versions {
                Ok(versions) => {
                    let handed = self.sender.send(Ok(Part::Versions(versions))).await;
                    if handed.is_err() {
                        return Outcome::Abandoned;
                    }
                }
                Err(err) => return Outcome::Failed(err),
            }
            let statement = sqlx::AssertSqlSafe(dialect.statement);
            let rows = sqlx::query_scalar::<DB, String>(statement)
                .bind(self.user_id.to_string())
                .fetch(&mut *txn);
            let outcome = self.pump(rows).await;
            if !matches!(outcome, Outcome::Complete(_)) {
                return outcome;
            }
            if let Err(err) = txn.commit().await {
                return Outcome::Failed(err);
            }
            if let Some((_, after)) = dialect.setting
                && let Err(err) = sqlx::raw_sql(after).execute(&mut *conn).await
            {
                return Outcome::Failed(err);
            }
            outcome
        }
        .await;
        self.finish(outcome, conn).await;
    }

    /// No connection could be had.
    async fn refuse(self, err: sqlx::Error) {
        let _ = self.sender.send(Err(db_err(err))).await;
    }

    /// Hands the rows over in chunks until they end, the response goes away, the deadline
    /// passes or the database fails.
    async fn pump(
        &self,
        mut rows: impl Stream<Item = Result<String, sqlx::Error>> + Unpin,
    ) -> Outcome {
        let deadline = tokio::time::Instant::from_std(self.deadline);
        let mut chunk = String::new();
        let mut in_chunk = 0_usize;
        let mut sent = 0_usize;
        loop {
            let row = match tokio::time::timeout_at(deadline, rows.next()).await {
                Err(_) => return Outcome::TimedOut(sent),
                Ok(Some(Err(err))) => return Outcome::Failed(err),
                Ok(Some(Ok(row))) => Some(row),
                Ok(None) => None,
            };
            let last = row.is_none();
            if let Some(row) = row {
                if in_chunk == 0 {
                    let expected = self.chunk.saturating_mul(row.len() + 1).min(CHUNK_BYTES);
                    chunk.reserve(expected + 2);
                    chunk.push('[');
                } else {
                    chunk.push(',');
                }
                chunk.push_str(&row);
                in_chunk += 1;
            }
            if in_chunk > 0 && (last || in_chunk >= self.chunk || chunk.len() >= CHUNK_BYTES) {
                chunk.push(']');
                let events = PackedEvents::new(std::mem::take(&mut chunk));
                let handed = self.sender.send(Ok(Part::Events(events)));
                match tokio::time::timeout_at(deadline, handed).await {
                    Err(_) => return Outcome::TimedOut(sent),
                    Ok(Err(_)) => return Outcome::Abandoned,
                    Ok(Ok(())) => sent += in_chunk,
                }
                in_chunk = 0;
            }
            if last {
                return Outcome::Complete(sent);
            }
        }
    }

    /// Ends the read: a complete one returns its connection to the pool and tells the
    /// response; any other closes the connection (ending its transaction without draining
    /// what the statement has left) and, if the response still listens, cuts it off.
    async fn finish<DB: sqlx::Database>(self, outcome: Outcome, conn: PoolConnection<DB>) {
        match outcome {
            Outcome::Complete(sent) => {
                drop(conn);
                if sent as u64 <= self.small {
                    self.reader.forget();
                }
                let _ = self.sender.send(Ok(Part::End)).await;
                return;
            }
            Outcome::Abandoned => tracing::debug!("events.stream_abandoned"),
            Outcome::TimedOut(sent) => tracing::warn!(
                events_sent = sent,
                timeout_ms = self.timeout.as_millis() as u64,
                "events.stream_timed_out"
            ),
            Outcome::Failed(ref err) => tracing::error!(error = %err, "events.stream_failed"),
        }
        drop(conn.detach());
        if let Outcome::Failed(err) = outcome {
            // Before the first chunk the response can still answer with the error.
            let _ = self.sender.try_send(Err(db_err(err)));
        }
    }
}

/// A driver error as sea-orm reports a failed query.
fn db_err(err: sqlx::Error) -> DbErr {
    DbErr::Query(RuntimeErr::SqlxError(std::sync::Arc::new(err)))
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn statements_bind_the_reader_only() {
        for statement in [sqlite_statement(), postgres_statement()] {
            assert!(!statement.contains("?2") && !statement.contains("$2"));
            assert!(statement.contains("ORDER BY e.start, e.id"));
        }
        // SQLite keeps a FROM subquery's order only without an outer ORDER BY or join.
        let sqlite = sqlite_statement();
        let outer = &sqlite[sqlite.rfind(") k").expect("subquery")..];
        assert_eq!(outer, ") k");
    }
}
