//! What the database's own errors mean, read from their codes (PostgreSQL's SQLSTATE,
//! SQLite's extended result code) and constraint names, never from message text: an
//! aborted transaction worth running again, a trigger's named refusal, a broken key.

use sea_orm::DbErr;

/// Whether the database aborted a transaction only to let a concurrent one go on: a
/// deadlock it broke (PostgreSQL `40P01`) or a serialization failure (`40001`). The whole
/// transaction rolled back, so running it again from the start is safe and usually succeeds.
/// Writes take their locks in one order ([`super::calendars::lock_in_order`]), so this is
/// left for a lock taken out of order (a link added between a write's reads, a batch of
/// edits that locks its calendars last). So is the refusal of a write whose memberships
/// moved between its read and its check of them
/// ([`super::events::calendar_roles::is_members_changed`]): run again, it reads them anew.
pub fn is_transient(err: &DbErr) -> bool {
    database_error(err)
        .is_some_and(|db_err| matches!(db_err.code().as_deref(), Some("40P01" | "40001")))
        || super::events::calendar_roles::is_members_changed(err)
}

/// The database failure behind `err`, if an operation of the store failed it.
pub fn database_cause(err: &crate::error::AppError) -> Option<&DbErr> {
    match err {
        crate::error::AppError::Internal(cause) => cause.downcast_ref::<DbErr>(),
        _ => None,
    }
}

/// The error the database itself reported (with its SQLSTATE on PostgreSQL, its extended
/// result code on SQLite), if `err` is one.
fn database_error(err: &DbErr) -> Option<&dyn sea_orm::sqlx::error::DatabaseError> {
    use sea_orm::RuntimeErr;
    let (DbErr::Query(RuntimeErr::SqlxError(err))
    | DbErr::Exec(RuntimeErr::SqlxError(err))
    | DbErr::Conn(RuntimeErr::SqlxError(err))) = err
    else {
        return None;
    };
    match err.as_ref() {
        sea_orm::sqlx::Error::Database(db_err) => Some(db_err.as_ref()),
        _ => None,
    }
}

/// SQLite's extended result code for a trigger's `RAISE(ABORT, …)` (`SQLITE_CONSTRAINT_TRIGGER`).
const SQLITE_TRIGGER_ABORT: &str = "1811";

/// A key constraint a statement broke, as the database reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BrokenKey {
    /// A foreign key (PostgreSQL `23503`, SQLite `SQLITE_CONSTRAINT_FOREIGNKEY`), with the
    /// constraint's name where the database gives it (PostgreSQL; SQLite names none).
    Foreign(Option<String>),
    /// A primary or unique key (PostgreSQL `23505`, SQLite `SQLITE_CONSTRAINT_PRIMARYKEY`
    /// or `SQLITE_CONSTRAINT_UNIQUE`).
    Unique,
}

/// The key constraint `err` reports broken, read from its SQLSTATE or SQLite's extended
/// result code.
pub(crate) fn broken_key(err: &DbErr) -> Option<BrokenKey> {
    let db_err = database_error(err)?;
    match db_err.code().as_deref()? {
        "23503" | "787" => Some(BrokenKey::Foreign(db_err.constraint().map(str::to_owned))),
        "23505" | "1555" | "2067" => Some(BrokenKey::Unique),
        _ => None,
    }
}

/// Whether `err` is the refusal a trigger raises under `name`: on PostgreSQL by its
/// SQLSTATE `code`, on SQLite (whose triggers have no codes) by the trigger's abort code and
/// the name it aborts with.
pub(crate) fn is_trigger_refusal(err: &DbErr, code: &str, name: &str) -> bool {
    database_error(err).is_some_and(|db_err| match db_err.code().as_deref() {
        Some(SQLITE_TRIGGER_ABORT) => db_err.message() == name,
        Some(found) => found == code,
        None => false,
    })
}
