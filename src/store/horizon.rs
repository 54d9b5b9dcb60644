//! The write horizon: the timestamps of the writes delta reads look at, and the moment
//! (`serverTime`) before which no such write can still commit.
//!
//! A delta read returns the changes stamped in `(since, horizon]` from a snapshot taken
//! after the horizon, so it needs two things of every write that stamps a column a delta
//! compares (events' `updated_at`, links', memberships' and view changes' `created_at`/`at`,
//! visibility losses' `at`):
//! - a write that has not committed when a horizon is taken is stamped after it, whether
//!   it is in flight then or starts later;
//! - a write that committed before a horizon is stamped at or before it (else a client that
//!   already holds it would be sent it again).
//!
//! On SQLite (one process, one writer connection) the horizon is this process's: a write
//! takes its stamp from [`WriteHorizon::begin`], a strictly increasing clock, and holds the
//! returned [`InFlight`] until its transaction has ended; a horizon is a fresh tick rounded up
//! to the millisecond (the wire's precision; later stamps come after it) lowered to just
//! before the oldest stamp in flight.
//!
//! On PostgreSQL, where several servers write, the database is the one clock and the one
//! register of writes in flight. A write transaction assigns itself a transaction id and
//! then reads `clock_timestamp()` as its stamp ([`STAMP_POSTGRES`]): from that id on it is
//! listed, with the time it began, in `pg_stat_activity`. A horizon ([`HORIZON_POSTGRES`],
//! its own statement, before the read's snapshot) is the database's clock lowered to before
//! the oldest transaction on this database that holds an id, rounded down to the
//! millisecond: a write still in flight began after it, and one that begins later reads a
//! later clock. No clocks of servers are compared, so their skew does not matter. A write
//! that committed in the millisecond of the horizon is stamped after it and comes with the
//! next delta read instead (a full read of that moment has it already).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, QueryResult, Statement};

/// The statement a PostgreSQL write transaction takes its stamp with: it assigns the
/// transaction its id first (the materialized CTE runs before the outer projection), so
/// that the transaction is a writer in `pg_stat_activity` before its stamp is read.
pub(crate) const STAMP_POSTGRES: &str = "WITH assigned AS MATERIALIZED (SELECT pg_current_xact_id()::text AS xid) \
     SELECT clock_timestamp() AS at, assigned.xid AS xid FROM assigned";

/// The statement of a PostgreSQL horizon: the database's clock, and when the oldest other
/// transaction on this database that holds a transaction id (one that writes) began.
pub(crate) const HORIZON_POSTGRES: &str = "SELECT clock_timestamp() AS now, \
     (SELECT min(xact_start) FROM pg_stat_activity WHERE datname = current_database() \
     AND pid <> pg_backend_pid() AND backend_xid IS NOT NULL AND xact_start IS NOT NULL) AS oldest";

/// The precision both databases store timestamps with.
const MICROSECOND: TimeDelta = TimeDelta::microseconds(1);
/// The precision of `serverTime` on the wire.
const MILLISECOND: TimeDelta = TimeDelta::milliseconds(1);

/// This process's write clock and the stamps of its writes in flight (SQLite's horizon);
/// on PostgreSQL, the last horizon read from the database.
#[derive(Debug, Default)]
pub struct WriteHorizon {
    state: parking_lot::Mutex<ClockState>,
    /// PostgreSQL: the last horizon read, reused for [`REUSE_POSTGRES`] while this process
    /// has committed no write since.
    database: parking_lot::Mutex<Option<ReadHorizon>>,
    /// PostgreSQL: write transactions this process committed.
    commits: AtomicU64,
}

/// A horizon read from PostgreSQL.
#[derive(Debug, Clone, Copy)]
struct ReadHorizon {
    value: DateTime<Utc>,
    read_at: Instant,
    commits: u64,
}

/// How long a horizon read from PostgreSQL serves full reads ([`Freshness::Recent`]). A
/// horizon stays a valid one forever (whatever was not committed when it was read is stamped
/// after it); as a full read's `serverTime`, an older one only has the next delta return the
/// changes of those milliseconds once more. A write this process commits ends the reuse.
const REUSE_POSTGRES: Duration = Duration::from_millis(50);

/// How fresh a horizon must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Read now (a delta read: the changes up to now are returned now, exactly once).
    Now,
    /// One read from the database up to [`REUSE_POSTGRES`] ago will do (a full read).
    Recent,
}

#[derive(Debug, Default)]
struct ClockState {
    /// The last tick handed out (a stamp or a horizon); every later stamp is after it.
    last: Option<DateTime<Utc>>,
    /// The stamps of the writes whose transactions have not ended.
    in_flight: BTreeSet<DateTime<Utc>>,
}

/// A write in flight: its stamp, registered until this is dropped (after its transaction
/// has committed or rolled back).
#[derive(Debug)]
pub struct InFlight {
    horizon: Arc<WriteHorizon>,
    at: DateTime<Utc>,
}

impl InFlight {
    /// The write's stamp.
    pub fn at(&self) -> DateTime<Utc> {
        self.at
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.horizon.state.lock().in_flight.remove(&self.at);
    }
}

/// `at` to the microsecond (what both databases keep).
fn to_microsecond(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(MICROSECOND).unwrap_or(at)
}

/// The last millisecond boundary at or before `at`.
fn floor_millisecond(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(MILLISECOND).unwrap_or(at)
}

/// The first millisecond boundary at or after `at`.
fn ceil_millisecond(at: DateTime<Utc>) -> DateTime<Utc> {
    let floor = floor_millisecond(at);
    if floor == at { at } else { floor + MILLISECOND }
}

impl WriteHorizon {
    /// A write transaction of this process committed (PostgreSQL): the next read asks the
    /// database again, and so sees it.
    pub(crate) fn committed(&self) {
        self.commits.fetch_add(1, Ordering::SeqCst);
    }

    /// Takes a stamp (after every tick before it) and registers it as in flight.
    pub fn begin(self: &Arc<Self>) -> InFlight {
        let mut state = self.state.lock();
        let now = to_microsecond(Utc::now());
        let at = match state.last {
            Some(last) if last >= now => last + MICROSECOND,
            _ => now,
        };
        state.last = Some(at);
        state.in_flight.insert(at);
        InFlight {
            horizon: self.clone(),
            at,
        }
    }

    /// The moment before which every write of this process that has not committed yet is
    /// stamped after: a fresh tick rounded up to the millisecond (every later stamp is after
    /// it), lowered to the last millisecond before the oldest stamp in flight.
    pub fn horizon(&self) -> DateTime<Utc> {
        let mut state = self.state.lock();
        let now = to_microsecond(Utc::now());
        let tick = ceil_millisecond(state.last.map_or(now, |last| last.max(now)));
        state.last = Some(tick);
        match state.in_flight.first() {
            Some(oldest) => tick.min(floor_millisecond(*oldest - MICROSECOND)),
            None => tick,
        }
    }
}

/// The horizon of a PostgreSQL database, from its `now` and the start of its `oldest`
/// transaction that writes, if any.
fn postgres_horizon(now: DateTime<Utc>, oldest: Option<DateTime<Utc>>) -> DateTime<Utc> {
    let before = oldest.map_or(now, |oldest| oldest.min(now));
    floor_millisecond(before - MICROSECOND)
}

/// The horizon of `db` ([`WriteHorizon::horizon`] on SQLite; from the database on
/// PostgreSQL). Run it before the read's snapshot begins, outside any transaction.
pub(crate) async fn horizon(
    db: &impl ConnectionTrait,
    local: &WriteHorizon,
    freshness: Freshness,
) -> Result<DateTime<Utc>, DbErr> {
    let backend = db.get_database_backend();
    if backend != DbBackend::Postgres {
        return Ok(local.horizon());
    }
    let commits = local.commits.load(Ordering::SeqCst);
    if freshness == Freshness::Recent
        && let Some(read) = *local.database.lock()
        && read.commits == commits
        && read.read_at.elapsed() < REUSE_POSTGRES
    {
        return Ok(read.value);
    }
    let read_at = Instant::now();
    let row = db
        .query_one_raw(Statement::from_string(backend, HORIZON_POSTGRES))
        .await?
        .ok_or_else(|| DbErr::RecordNotFound("horizon".into()))?;
    let now: DateTime<Utc> = row.try_get("", "now")?;
    let oldest: Option<DateTime<Utc>> = row.try_get("", "oldest")?;
    let value = postgres_horizon(now, oldest);
    let mut cached = local.database.lock();
    if cached.is_none_or(|held| held.value <= value) {
        *cached = Some(ReadHorizon {
            value,
            read_at,
            commits,
        });
    }
    Ok(value)
}

/// The stamp of a PostgreSQL write transaction, from the row of [`STAMP_POSTGRES`] run
/// inside it.
pub(crate) fn stamp_of(row: Option<QueryResult>) -> Result<DateTime<Utc>, DbErr> {
    let row = row.ok_or_else(|| DbErr::RecordNotFound("stamp".into()))?;
    let at: DateTime<Utc> = row.try_get("", "at")?;
    Ok(to_microsecond(at))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stamps_increase_and_horizons_separate_them() {
        let horizon = Arc::new(WriteHorizon::default());
        let first = horizon.begin();
        let second = horizon.begin();
        assert!(second.at() > first.at());
        // Both in flight: the horizon is before the first.
        let held = horizon.horizon();
        assert!(held < first.at());
        assert_eq!(held, floor_millisecond(held));
        drop(first);
        let lowered = horizon.horizon();
        assert!(lowered < second.at());
        drop(second);
        // Nothing in flight: every stamp so far is at or before it, every later one after.
        let open = horizon.horizon();
        assert_eq!(open, floor_millisecond(open));
        let later = horizon.begin();
        assert!(later.at() > open);
        drop(later);
        assert!(horizon.horizon() >= open);
    }

    #[test]
    fn a_committed_stamp_is_never_after_the_next_horizon() {
        let horizon = Arc::new(WriteHorizon::default());
        for _ in 0..1_000 {
            let write = horizon.begin();
            let at = write.at();
            drop(write);
            assert!(horizon.horizon() >= at);
        }
    }

    #[test]
    fn postgres_horizons_are_before_the_oldest_writer_and_the_clock() {
        let at = |micros: i64| DateTime::from_timestamp_micros(micros).unwrap();
        // The clock alone: the millisecond boundary strictly before it.
        assert_eq!(postgres_horizon(at(5_000_000), None), at(4_999_000));
        assert_eq!(postgres_horizon(at(5_000_700), None), at(5_000_000));
        // A writer that began earlier lowers it below its start.
        assert_eq!(
            postgres_horizon(at(5_000_700), Some(at(4_000_000))),
            at(3_999_000)
        );
        assert_eq!(
            postgres_horizon(at(5_000_700), Some(at(4_000_001))),
            at(4_000_000)
        );
    }
}
