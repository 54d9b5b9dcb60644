//! A batch of event creations homed in one calendar, written together with the check of
//! who may create them, in as few round trips as the backend allows: [`begin`] hands out
//! the write with the roles of the batch's calendars, the caller authorizes each creation
//! by them, [`CreationsWrite::prepare`] stamps the write and lays out the rows, the caller
//! announces into it, and [`PreparedCreations::commit`] writes and commits.
//!
//! The batch is authorized by the roles of its calendars. When the calendar's actor
//! remembers them ([`RememberedRoles`]), the batch is one write of its inserts (on
//! PostgreSQL one statement, sent with the commit), and the versions the roles were read
//! at are checked in that same write ([`calendar_roles::roles_unchanged_check`]); if one moved, nothing
//! is written, the memory is dropped, and the batch runs again reading the roles. Otherwise
//! the roles are read (and on PostgreSQL the calendars locked) at the start of a write
//! transaction, and remembered for the next batch.

use entities::events;
use sea_orm::sea_query::InsertStatement;
use sea_orm::{ConnectionTrait, DbErr};

use super::calendar_roles::{self, CalendarRoles};
use super::inserts::{self, InsertEventError, NewEvent};
use super::remembered_roles::RememberedRoles;
use crate::domain::events::EventInput;
use crate::domain::ids::{CalendarId, UserId};
use crate::store::outbox::{self, MirrorTargets};
use crate::store::{Database, NextWrite, WriteTxn};

/// One creation of a batch.
#[derive(Debug, Clone, Copy)]
pub struct Creation<'a> {
    /// The event.
    pub input: &'a EventInput,
    /// Who creates it.
    pub creator: &'a UserId,
}

/// Why a batch wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum CreationsError {
    /// An event id exists already (ids are chosen by clients).
    #[error("an event with this id exists")]
    Duplicate,
    /// A calendar of the batch was deleted while it was written.
    #[error("a calendar of the batch is gone")]
    CalendarGone,
    /// The write waited for its locks past its time bound.
    #[error("the write waited too long for its locks")]
    TooSlow,
    /// The database failed (perhaps transiently: [`crate::store::db_errors::is_transient`]).
    #[error(transparent)]
    Database(DbErr),
}

impl From<DbErr> for CreationsError {
    fn from(err: DbErr) -> Self {
        match super::race_lost(&err) {
            Some(super::RaceLost::CalendarGone) => Self::CalendarGone,
            Some(super::RaceLost::KeyTaken) => Self::Duplicate,
            _ => Self::Database(err),
        }
    }
}

/// Why a prepared batch wrote nothing.
#[derive(Debug)]
pub enum CommitError {
    /// The roles the calendar's actor remembered were out of date: nothing was written.
    /// The caller forgets them ([`RememberedRoles::forget`]) and begins the batch again,
    /// which then reads them (with nothing remembered there is no check to fail).
    MembersChanged,
    /// The batch failed.
    Failed(CreationsError),
}

impl From<DbErr> for CommitError {
    fn from(err: DbErr) -> Self {
        Self::Failed(err.into())
    }
}

/// A batch of creations homed in one calendar, begun: its write transaction and the roles
/// of its calendars, remembered (then checked in the same write as the inserts) or read
/// under the calendars' locks.
#[derive(Debug)]
pub struct CreationsWrite {
    txn: WriteTxn,
    home: CalendarId,
    roles: CalendarRoles,
    check: Option<InsertStatement>,
}

/// Begins the write of a batch of creations homed in `home` and linked to `calendars`, on
/// the transaction `next` began ahead if there is one: with the roles `remembered` has if
/// it has them all (the batch is then its inserts and their check, whose locks are bounded
/// in the database, in a transaction that takes its stamp first, [`WriteTxn::stamp`]),
/// else reading them (and remembering them). `None` when the home calendar does not exist:
/// nobody may create in it (nothing was written).
pub async fn begin(
    db: &Database,
    home: CalendarId,
    calendars: &[CalendarId],
    remembered: &RememberedRoles,
    next: &NextWrite,
) -> Result<Option<CreationsWrite>, DbErr> {
    let txn = next.take(db).await?;
    let (roles, check) = match remembered.get(home, calendars) {
        Some(roles) => {
            let check =
                calendar_roles::roles_unchanged_check(txn.get_database_backend(), &roles.versions);
            (roles, check)
        }
        None => {
            let Some(roles) = calendar_roles::lock_with_roles(&txn, home, calendars).await? else {
                return Ok(None);
            };
            remembered.learn(&roles);
            (roles, None)
        }
    };
    Ok(Some(CreationsWrite {
        txn,
        home,
        roles,
        check,
    }))
}

impl CreationsWrite {
    /// The members and roles of the batch's calendars, to authorize each creation by.
    pub fn roles(&self) -> &CalendarRoles {
        &self.roles
    }

    /// Takes the write's timestamp and lays out the rows of `accepted` (the creations the
    /// caller authorized, each id once) with the outbox rows their `mirrors` need: the
    /// inserts and the commit follow right after the timestamp, no step left between them
    /// for a deadline check to bound.
    pub async fn prepare<'a>(
        self,
        accepted: &[Creation<'a>],
        mirrors: &MirrorTargets,
    ) -> Result<PreparedCreations<'a>, DbErr> {
        let now = self.txn.stamp().await?;
        let new: Vec<NewEvent<'a>> = accepted
            .iter()
            .map(|creation| NewEvent {
                input: creation.input,
                creator: creation.creator,
                home: self.home,
            })
            .collect();
        let writes = outbox::puts_for_new(
            mirrors,
            new.iter()
                .map(|new| (new.input.id, new.input.calendars.as_slice())),
        );
        let outbox = outbox::insert_statement(&writes, now);
        let rows = inserts::new_models(&new, now);
        Ok(PreparedCreations {
            write: self,
            new,
            rows,
            outbox,
            now,
        })
    }
}

/// A batch laid out and stamped, not yet written: announce into [`Self::txn`] (the frames
/// go in the batch's last statement), then [`Self::commit`].
#[derive(Debug)]
pub struct PreparedCreations<'a> {
    write: CreationsWrite,
    new: Vec<NewEvent<'a>>,
    rows: Vec<events::Model>,
    outbox: Option<InsertStatement>,
    now: chrono::DateTime<chrono::Utc>,
}

impl PreparedCreations<'_> {
    /// The write transaction, to announce into.
    pub fn txn(&self) -> &WriteTxn {
        &self.write.txn
    }

    /// The members and roles of the batch's calendars.
    pub fn roles(&self) -> &CalendarRoles {
        &self.write.roles
    }

    /// The rows to insert, in the order of the accepted creations.
    pub fn rows(&self) -> &[events::Model] {
        &self.rows
    }

    /// Inserts the rows, their links, their creators' attendance, the outbox rows and the
    /// frames announced, with the remembered roles' check in front, and commits: one write
    /// (on PostgreSQL one statement, in the commit's round trip when its text is short
    /// enough, [`WriteTxn::defer`]). Returns the rows written.
    pub async fn commit(self) -> Result<Vec<events::Model>, CommitError> {
        let Self {
            write,
            new,
            rows,
            outbox,
            now,
        } = self;
        // The frames go in the last statement too, not in one of their own before the commit.
        let also = outbox
            .into_iter()
            .chain(write.txn.frames_insert())
            .collect();
        match inserts::insert_models_and_commit(write.txn, rows, &new, now, write.check, also).await
        {
            Ok(inserted) => Ok(inserted),
            Err(InsertEventError::Duplicate) => Err(CommitError::Failed(CreationsError::Duplicate)),
            Err(InsertEventError::MembersChanged) => Err(CommitError::MembersChanged),
            Err(InsertEventError::TooSlow) => Err(CommitError::Failed(CreationsError::TooSlow)),
            Err(InsertEventError::Database(err)) => Err(err.into()),
        }
    }
}
