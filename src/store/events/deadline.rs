//! [`WriteDeadline`]: the timestamp of an event write and the moment it must commit by.
//!
//! Every event write takes its timestamp from its transaction ([`WriteTxn::stamp`]): until
//! it commits, delta reads' `serverTime` stays before it ([`crate::store::horizon`]). So
//! that no write holds every delta read back for long, it checks [`WRITE_BOUND`] before it
//! commits; a batch of creations whose role check takes its locks in the database is held
//! to the bound there ([`lock_wait_bound_ms`]).

use std::time::Instant;

use chrono::{DateTime, Utc};
use sea_orm::DbErr;

use crate::domain::events::WRITE_BOUND;
use crate::error::AppError;
use crate::store::WriteTxn;

/// How long PostgreSQL's check of a one-statement batch may wait for its locks: the write
/// bound less a second for the statement to reach the database.
pub(crate) fn lock_wait_bound_ms() -> i64 {
    i64::try_from(WRITE_BOUND.as_millis()).unwrap_or(i64::MAX) - 1_000
}

/// The timestamp of a write, taken once its locks are held, and the bound it must commit
/// within (see [`WRITE_BOUND`]).
pub struct WriteDeadline {
    started: Instant,
    /// The write's `updated_at`.
    pub now: DateTime<Utc>,
}

impl WriteDeadline {
    /// Starts the clock, with `txn`'s stamp as the write's timestamp.
    pub async fn start(txn: &WriteTxn) -> Result<Self, DbErr> {
        let started = Instant::now();
        Ok(Self {
            started,
            now: txn.stamp().await?,
        })
    }

    /// Refuses to commit a write that took too long (its transaction rolls back).
    pub fn check(&self) -> Result<(), AppError> {
        if self.started.elapsed() > WRITE_BOUND {
            tracing::error!(
                elapsed_ms = self.started.elapsed().as_millis() as u64,
                "event.write_too_slow"
            );
            return Err(Self::exceeded());
        }
        Ok(())
    }

    /// The answer to a write refused for taking too long (by [`WriteDeadline::check`], or by
    /// the database's own check of a write's locks).
    pub fn exceeded() -> AppError {
        AppError::Unavailable("event write exceeded its time bound".into())
    }
}
