//! [`FileLock`]: one process owns an embedded SQLite database. A second process on the same
//! file would fight the first for its one writer and break its caches' assumptions, so it
//! refuses to start instead, with a message saying why. The lock is an advisory lock on
//! `<database file>.lock`, held for as long as the database is open and released by the
//! operating system when the process ends, however it ends. Servers in one process (tests
//! of several instances) share it explicitly ([`crate::startup::ApplicationBuilder::sharing_storage_of`]).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sea_orm::DbErr;

/// The held lock of one database file. Cheap to clone; released when the last clone drops.
#[derive(Debug, Clone)]
pub struct FileLock {
    inner: Arc<Held>,
}

#[derive(Debug)]
struct Held {
    database: PathBuf,
    _file: File,
}

impl FileLock {
    /// Takes the lock of `database`, or fails at once when another process holds it.
    pub(crate) fn acquire(database: &Path) -> Result<Self, DbErr> {
        let path = lock_path(database);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|err| {
                DbErr::Custom(format!(
                    "cannot open the lock file {}: {err}",
                    path.display()
                ))
            })?;
        match file.try_lock() {
            Ok(()) => Ok(Self {
                inner: Arc::new(Held {
                    database: database.to_owned(),
                    _file: file,
                }),
            }),
            Err(TryLockError::WouldBlock) => Err(DbErr::Custom(format!(
                "the database {} is in use by another Bowline process (it holds {}); \
                 stop that one first — several instances need PostgreSQL (DATABASE_URL)",
                database.display(),
                path.display()
            ))),
            Err(TryLockError::Error(err)) => Err(DbErr::Custom(format!(
                "cannot lock {}: {err}",
                path.display()
            ))),
        }
    }

    /// Whether this is the lock of `database`.
    pub(crate) fn covers(&self, database: &Path) -> bool {
        self.inner.database == database
    }
}

/// `<database>.lock`, beside the database file.
fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_held_file_is_refused_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("bowline.db");
        let first = FileLock::acquire(&database).unwrap();
        let refused = FileLock::acquire(&database).unwrap_err().to_string();
        assert!(
            refused.contains("in use by another Bowline process"),
            "{refused}"
        );
        assert!(first.covers(&database));
        drop(first);
        FileLock::acquire(&database).unwrap();
    }
}
