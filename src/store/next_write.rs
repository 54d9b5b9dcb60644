//! [`NextWrite`]: on PostgreSQL, a writer's next write transaction, begun and stamped while
//! its write before it commits, so that writes that follow each other (a calendar's batches)
//! do not each wait for the round trip of `BEGIN` and the stamp before they can write.
//!
//! A transaction begun ahead holds a transaction id, and every delta read's horizon stays
//! before its stamp until it ends ([`super::horizon`]): its owner takes it for its next
//! write or releases it (rolls it back) as soon as it knows none follows. It is begun only
//! on a connection the pool has idle, never one a request would wait for. SQLite's writes
//! share one connection: nothing is begun ahead there.

use tokio::task::JoinHandle;

use super::{Database, DbErr, WriteTxn};

/// A writer's next write transaction, begun ahead ([`NextWrite::begin_ahead`]) or not.
/// Dropped with one begun, that one rolls back. Each one begun ahead is counted taken or
/// released (`svc_db_writes_ahead_total`).
#[derive(Debug, Default)]
pub struct NextWrite {
    begun: parking_lot::Mutex<Option<Beginning>>,
}

/// The task beginning and stamping a transaction ahead: it ends with the transaction and
/// the database it was begun on, or with nothing if it could not begin it.
type Beginning = JoinHandle<Option<(WriteTxn, Database)>>;

impl NextWrite {
    /// On PostgreSQL, with a connection idle in the pool and none begun already, begins
    /// the next write transaction and takes its stamp, on a task of its own. Call it once
    /// the current write's stamp is taken: the next one's comes after it.
    pub fn begin_ahead(&self, db: &Database) {
        let mut begun = self.begun.lock();
        if begun.is_some() || !db.write_connection_idle() {
            return;
        }
        let db = db.clone();
        let task: Beginning = tokio::spawn(async move {
            let txn = db.begin_write().await.ok()?;
            txn.stamp().await.ok()?;
            Some((txn, db))
        });
        *begun = Some(task);
    }

    /// Whether a transaction was begun ahead and neither taken nor released.
    pub fn is_begun(&self) -> bool {
        self.begun.lock().is_some()
    }

    /// The transaction begun ahead (waiting for it if it is still beginning), or else a new
    /// one ([`Database::begin_write`]).
    pub async fn take(&self, db: &Database) -> Result<WriteTxn, DbErr> {
        let begun = self.begun.lock().take();
        if let Some(task) = begun
            && let Ok(Some((txn, on))) = task.await
        {
            on.write_ahead("taken");
            return Ok(txn);
        }
        db.begin_write().await
    }

    /// Rolls back the transaction begun ahead, if there is one: no write follows now.
    pub fn release(&self) {
        let Some(begun) = self.begun.lock().take() else {
            return;
        };
        // Without a runtime the task is gone, and its transaction with it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Ok(Some((txn, on))) = begun.await {
                    on.write_ahead("released");
                    // Dropped on a failed rollback, the transaction closes its connection.
                    let _ = txn.rollback().await;
                }
            });
        }
    }

    /// One unit of work, as [`Database::write`], on the transaction begun ahead if there is
    /// one.
    pub async fn write<T, E>(
        &self,
        db: &Database,
        work: impl AsyncFnOnce(&WriteTxn) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbErr>,
    {
        let txn = self.take(db).await?;
        Database::finish_write(txn, work).await
    }
}

impl Drop for NextWrite {
    fn drop(&mut self) {
        self.release();
    }
}
