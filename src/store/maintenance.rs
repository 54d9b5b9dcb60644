//! Housekeeping the cleanup task runs: expired sessions, one-time tokens and member tokens,
//! event tombstones, visibility losses and view changes older than 30 days, and, on the
//! embedded SQLite file, `PRAGMA optimize`, as SQLite recommends for long-lived connections
//! (its write-ahead log is checkpointed by [`super::wal`]).

use sea_orm::DbErr;

use super::statements::execute_raw;
use super::{Backend, Database, events::history, member_tokens, sessions, verifications};

/// How long deleted events and visibility losses are kept for delta reads.
pub const EVENT_HISTORY_DAYS: i64 = 30;

/// What one cleanup pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CleanupReport {
    /// Rows deleted because they expired.
    pub expired_rows: u64,
}

/// One cleanup pass.
pub async fn cleanup(db: &Database) -> Result<CleanupReport, DbErr> {
    let now = chrono::Utc::now();
    let expired_rows = sessions::delete_expired(db, now).await?
        + verifications::delete_expired(db, now).await?
        + member_tokens::delete_expired(db, now).await?
        + history::delete_history_before(
            db.conn(),
            now - chrono::Duration::days(EVENT_HISTORY_DAYS),
        )
        .await?;
    if db.backend() == Backend::Sqlite {
        execute_raw(db.conn(), "PRAGMA optimize").await?;
    }
    Ok(CleanupReport { expired_rows })
}
