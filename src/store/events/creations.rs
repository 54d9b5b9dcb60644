//! A batch of event creations homed in one calendar, written together with the check of
//! who may create them, in as few round trips as the backend allows.
//!
//! The batch is authorized by the roles of its calendars. When the calendar's actor
//! remembers them ([`RememberedRoles`]), the batch is one write of its inserts (on
//! PostgreSQL one statement that commits on its own), and the versions the roles were read
//! at are checked in that same write ([`calendar_roles::roles_unchanged_check`]); if one moved, nothing
//! is written, the memory is dropped, and the batch runs again reading the roles. Otherwise
//! the roles are read (and on PostgreSQL the calendars locked) at the start of a write
//! transaction, and remembered for the next batch.

use std::collections::HashSet;

use entities::events;
use sea_orm::{ConnectionTrait, DbErr};
use uuid::Uuid;

use super::calendar_roles::{self, CalendarRoles};
use super::inserts::{self, InsertEventError, NewEvent};
use super::remembered_roles::RememberedRoles;
use crate::domain::events::{EventInput, event_exists};
use crate::error::AppError;
use crate::store::outbox::{self, MirrorTargets};
use crate::store::{Database, WriteTxn};

/// One creation of a batch.
#[derive(Debug, Clone, Copy)]
pub struct Creation<'a> {
    /// The event.
    pub input: &'a EventInput,
    /// Who creates it.
    pub creator: &'a str,
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
    /// The database failed (perhaps transiently: [`CreationsError::is_transient`]).
    #[error(transparent)]
    Database(DbErr),
}

impl CreationsError {
    /// Whether the database aborted the write to let another go on (running it again
    /// could succeed).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Database(err) if crate::store::db_errors::is_transient(err))
    }
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

/// What a written batch produced: for each creation, in order, its row or the refusal
/// `authorize` gave it; and the roles it was authorized by.
#[derive(Debug)]
pub struct Created {
    /// Each creation's row or refusal.
    pub outcomes: Vec<Result<events::Model, AppError>>,
    /// The members and roles of the batch's calendars.
    pub roles: CalendarRoles,
}

/// Writes the creations of `batch` homed in `home` that `authorize` allows, given the roles
/// of their calendars; the others are answered with its refusal (or, for an id already in
/// the batch, [`event_exists`]) and not written.
pub async fn create_batch(
    db: &Database,
    home: Uuid,
    batch: &[Creation<'_>],
    remembered: &RememberedRoles,
    authorize: &mut (dyn FnMut(&CalendarRoles, &Creation<'_>) -> Result<(), AppError> + Send),
    mirrors: &MirrorTargets,
    announce: &mut BeforeCommit<'_>,
) -> Result<Created, CreationsError> {
    let outcome = match create_once(db, home, batch, remembered, authorize, mirrors, announce).await
    {
        Err(Attempt::MembersChanged) => {
            // With nothing remembered, the roles are read and there is no check to fail.
            remembered.forget();
            create_once(db, home, batch, remembered, authorize, mirrors, announce).await
        }
        outcome => outcome,
    };
    outcome.map_err(|attempt| match attempt {
        Attempt::Failed(err) => err,
        Attempt::MembersChanged => {
            CreationsError::Database(DbErr::Custom("roles read in the write changed".into()))
        }
    })
}

/// Called once the rows of a batch are known, before its commit, with its write
/// transaction (to announce into), the roles it was authorized by, and each row to insert
/// with the index of its creation in the batch.
pub type BeforeCommit<'a> =
    dyn FnMut(&WriteTxn, &CalendarRoles, &[(usize, &events::Model)]) + Send + 'a;

/// Why one attempt wrote nothing.
enum Attempt {
    /// The remembered roles were out of date.
    MembersChanged,
    Failed(CreationsError),
}

impl From<DbErr> for Attempt {
    fn from(err: DbErr) -> Self {
        Self::Failed(err.into())
    }
}

/// [`create_batch`], once: with the roles `remembered` has if it has them all, else reading
/// them (and remembering them).
async fn create_once(
    db: &Database,
    home: Uuid,
    batch: &[Creation<'_>],
    remembered: &RememberedRoles,
    authorize: &mut (dyn FnMut(&CalendarRoles, &Creation<'_>) -> Result<(), AppError> + Send),
    mirrors: &MirrorTargets,
    announce: &mut BeforeCommit<'_>,
) -> Result<Created, Attempt> {
    let calendars: Vec<Uuid> = batch
        .iter()
        .flat_map(|c| c.input.calendars.iter().copied())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    // With the roles remembered, the batch is its inserts and their check (whose locks are
    // bounded in the database), in a transaction that takes its stamp first
    // ([`WriteTxn::stamp`]).
    let (txn, roles, check): (WriteTxn, _, _) = match remembered.get(home, &calendars) {
        Some(roles) => {
            let txn = db.begin_write().await?;
            let check =
                calendar_roles::roles_unchanged_check(txn.get_database_backend(), &roles.versions);
            (txn, roles, check)
        }
        None => {
            let txn = db.begin_write().await?;
            let Some(roles) = calendar_roles::lock_with_roles(&txn, home, &calendars).await? else {
                // No home calendar: nobody may create in it.
                let roles = CalendarRoles::default();
                let outcomes = batch
                    .iter()
                    .map(|c| {
                        authorize(&roles, c)
                            .and_then(|()| Err(AppError::internal("no home calendar to create in")))
                    })
                    .collect();
                return Ok(Created { outcomes, roles });
            };
            remembered.learn(&roles);
            (txn, roles, None)
        }
    };
    let mut outcomes: Vec<Result<(), AppError>> = Vec::with_capacity(batch.len());
    let mut accepted = Vec::new();
    let mut taken = HashSet::new();
    for creation in batch {
        let outcome = authorize(&roles, creation).and_then(|()| {
            // An id twice in one batch: the second is refused on its own.
            if taken.insert(creation.input.id) {
                Ok(())
            } else {
                Err(event_exists())
            }
        });
        if outcome.is_ok() {
            accepted.push(NewEvent {
                input: creation.input,
                creator: creation.creator,
                home,
            });
        }
        outcomes.push(outcome);
    }
    // The inserts and the commit go right after the timestamp is taken: no step is left
    // between them for a deadline check to bound.
    let now = txn.stamp().await?;
    let writes = outbox::puts_for_new(
        mirrors,
        accepted
            .iter()
            .map(|new| (new.input.id, new.input.calendars.as_slice())),
    );
    let also = outbox::insert_statement(&writes, now);
    let models = inserts::new_models(&accepted, now);
    let indexed: Vec<(usize, &events::Model)> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, outcome)| outcome.is_ok())
        .map(|(index, _)| index)
        .zip(&models)
        .collect();
    announce(&txn, &roles, &indexed);
    drop(indexed);
    // The frames go in the last statement too, not in one of their own before the commit.
    let also = also.into_iter().chain(txn.frames_insert()).collect();
    let inserted = match inserts::insert_models_and_commit(txn, models, &accepted, now, check, also)
        .await
    {
        Ok(inserted) => inserted,
        Err(InsertEventError::Duplicate) => return Err(Attempt::Failed(CreationsError::Duplicate)),
        Err(InsertEventError::MembersChanged) => return Err(Attempt::MembersChanged),
        Err(InsertEventError::TooSlow) => return Err(Attempt::Failed(CreationsError::TooSlow)),
        Err(InsertEventError::Database(err)) => return Err(err.into()),
    };
    let mut inserted = inserted.into_iter();
    let outcomes = outcomes
        .into_iter()
        .map(|outcome| {
            outcome?;
            inserted
                .next()
                .ok_or_else(|| AppError::internal("batch insert lost an event"))
        })
        .collect();
    Ok(Created { outcomes, roles })
}
