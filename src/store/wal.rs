//! SQLite's write-ahead log, checkpointed beside the writers rather than in their way.
//!
//! Left to itself, SQLite copies the log back into the database file (a checkpoint) inside
//! whichever commit takes the log past `wal_autocheckpoint` pages: that commit, and every
//! write queued behind it, waits for the copy and its fsync. A checkpoint from another
//! connection runs beside the writers instead, but under a steady write load it never
//! catches up with the last commit, so the log never starts over and grows without bound.
//!
//! [`checkpoint`] therefore works in two steps. A passive checkpoint on a pool connection
//! copies what is committed while writers go on. Once the log has grown past
//! [`RESTART_AFTER_FRAMES`], the database file is synced, still beside the writers, and a
//! second passive checkpoint on the writer connection — between two write transactions —
//! copies the few frames committed meanwhile; with everything copied, the next write
//! transaction starts the log over. SQLite syncs the database file only in a checkpoint that
//! copies the whole log, so without the sync of its own the second step would flush
//! everything the first ones wrote (about 11 ms on this class of machine) while writers wait.
//! The scheduler runs it every [`CHECKPOINT_EVERY`]; `wal_autocheckpoint` stays set as a
//! backstop ([`BACKSTOP_PAGES`]); a tick that finds the last run still waiting for the writer
//! is skipped, quietly. On PostgreSQL it does nothing.

use std::path::PathBuf;
use std::time::Duration;

use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Statement};

use super::Database;

/// How often the scheduler checkpoints the log.
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);

/// Log length (in frames, one page each) past which a checkpoint finishes on the writer
/// connection so that the log starts over: SQLite's own automatic checkpoint threshold.
pub const RESTART_AFTER_FRAMES: i64 = 1_000;

/// `wal_autocheckpoint`: SQLite checkpoints inside a commit only if the log grows this long
/// (pages), which the background checkpoint keeps it from doing.
pub const BACKSTOP_PAGES: u32 = 10_000;

/// What a checkpoint found and did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointReport {
    /// Frames in the log when the first step ran.
    pub log_frames: i64,
    /// Whether the second step ran on the writer connection, so the log starts over.
    pub restarted: bool,
}

/// One checkpoint (see the module documentation).
pub async fn checkpoint(db: &Database) -> Result<CheckpointReport, DbErr> {
    let Some(writer) = &db.writer else {
        return Ok(CheckpointReport::default());
    };
    let (log_frames, copied) = passive(db.conn()).await?;
    if log_frames < RESTART_AFTER_FRAMES {
        return Ok(CheckpointReport {
            log_frames,
            restarted: false,
        });
    }
    if copied < log_frames {
        // A reader still needs frames the first step could not copy; try again next time.
        return Ok(CheckpointReport {
            log_frames,
            restarted: false,
        });
    }
    if let Some(file) = &db.file {
        sync_file(file.clone()).await?;
    }
    passive(&writer.lock().await?).await?;
    Ok(CheckpointReport {
        log_frames,
        restarted: true,
    })
}

/// `PRAGMA wal_checkpoint(PASSIVE)` on `conn`: frames in the log and frames copied.
async fn passive(conn: &impl ConnectionTrait) -> Result<(i64, i64), DbErr> {
    let row = conn
        .query_one_raw(Statement::from_string(
            DbBackend::Sqlite,
            "PRAGMA wal_checkpoint(PASSIVE)",
        ))
        .await?
        .ok_or_else(|| DbErr::Custom("wal_checkpoint returned no row".into()))?;
    let log: i64 = row.try_get_by_index(1)?;
    let copied: i64 = row.try_get_by_index(2)?;
    Ok((log, copied))
}

/// Flushes the database file's written pages to disk (any descriptor of a file syncs all of
/// its pages).
async fn sync_file(file: PathBuf) -> Result<(), DbErr> {
    let synced = tokio::task::spawn_blocking(move || std::fs::File::open(&file)?.sync_all())
        .await
        .map_err(|err| DbErr::Custom(format!("database file sync did not finish: {err}")))?;
    synced.map_err(|err| DbErr::Custom(format!("cannot sync the database file: {err}")))
}

/// The file of the main database `conn` is attached to (`PRAGMA database_list`), `None` for
/// an in-memory database.
pub(super) async fn database_file(conn: &DatabaseConnection) -> Result<Option<PathBuf>, DbErr> {
    let rows = conn
        .query_all_raw(Statement::from_string(
            DbBackend::Sqlite,
            "PRAGMA database_list",
        ))
        .await?;
    for row in rows {
        let name: String = row.try_get_by_index(1)?;
        let file: String = row.try_get_by_index(2)?;
        if name == "main" {
            return Ok((!file.is_empty()).then(|| PathBuf::from(file)));
        }
    }
    Ok(None)
}
