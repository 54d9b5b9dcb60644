//! Group commit of event creation. A calendar actor collects the `CreateEvent` commands
//! queued in its mailbox and runs them here as one batch: one transaction, one statement
//! that reads the roles for authorization and readers (on PostgreSQL locking the batch's
//! calendars), multi-row inserts of events, links and attendance with the commit in the
//! same round trip (one fsync on SQLite), then each command's frames and reply. A batch
//! whose calendars' roles the actor read before ([`KnownRoles`]) skips that first
//! statement: the versions they were read at are checked in the inserts' own text (on
//! PostgreSQL, one statement that commits on its own, with no transaction around it), and
//! if one moved, the batch is run again reading them. A command refused on its own (no
//! right, an id twice in the batch) is answered without affecting the others; if the batch
//! fails as a whole (an id that exists already — ids are client-chosen, so that is a
//! retried create — or a linked calendar deleted concurrently), every command is retried on
//! its own and the one concerned is refused. Checking ids before inserting would cost every
//! batch a round trip for a case that almost never happens.

use std::collections::{BTreeMap, HashSet};

use uuid::Uuid;

use super::events::{Readers, WriteClock, send_event};
use super::{MaybeTransient, not_allowed, refuse_constraint, retry_transient};
use crate::actors::calendar::Reply;
use crate::actors::reply;
use crate::context::Ctx;
use crate::domain::events::EventInput;
use crate::domain::roles::Action;
use crate::error::AppError;
use crate::store::FinalWrite;
use crate::store::events::calendar_roles::{self as batch_roles, BatchRoles};
use crate::store::events::inserts::{self as event_inserts, InsertEventError, NewEvent};
use crate::store::events::remembered_roles::KnownRoles;
use crate::views::events::EventView;

/// One queued `CreateEvent`.
#[derive(Debug)]
pub struct PendingCreate {
    /// Acting user.
    pub actor: String,
    /// The event.
    pub input: EventInput,
    /// Where the answer goes.
    pub reply: Reply<EventView>,
}

fn duplicate() -> AppError {
    AppError::Conflict {
        error: "EVENT_EXISTS".into(),
        message: "An event with this id already exists.".into(),
        current: None,
    }
}

/// Creates the events of `batch`, homed in `home`, answering each command; `known` is what
/// the calendar's actor remembers of the roles.
pub async fn create_all(ctx: &Ctx, home: Uuid, batch: Vec<PendingCreate>, known: &KnownRoles) {
    ctx.metrics.event_batch(batch.len());
    if batch.len() == 1 {
        for one in batch {
            let outcome =
                retry_transient(|| commit(ctx, home, std::slice::from_ref(&one), known)).await;
            answer(ctx, vec![one], outcome);
        }
        return;
    }
    match retry_transient(|| commit(ctx, home, &batch, known)).await {
        Err(BatchError::Collision | BatchError::Refused(_)) => {
            // One of the ids exists, or one of the calendars was deleted meanwhile: each
            // command alone finds out whether it was concerned.
            for one in batch {
                let outcome =
                    retry_transient(|| commit(ctx, home, std::slice::from_ref(&one), known)).await;
                answer(ctx, vec![one], outcome);
            }
        }
        outcome => answer(ctx, batch, outcome),
    }
}

/// What a committed batch produced for each command, in order.
type Committed = Vec<Result<(entities::events::Model, Readers), AppError>>;

/// Why a batch failed as a whole.
enum BatchError {
    /// An id collided at insert time (retry each command alone).
    Collision,
    /// A constraint a concurrent change broke, such as a calendar deleted meanwhile (retry
    /// each command alone; a command alone gets this answer).
    Refused(AppError),
    /// Anything else (answered to every command).
    Failed(AppError),
    /// The roles the batch was authorized by were out of date (nothing was written).
    MembersChanged,
}

impl From<sea_orm::DbErr> for BatchError {
    fn from(err: sea_orm::DbErr) -> Self {
        match refuse_constraint(err.into()) {
            err @ AppError::Internal(_) => Self::Failed(err),
            refused => Self::Refused(refused),
        }
    }
}

impl MaybeTransient for BatchError {
    fn is_transient(&self) -> bool {
        matches!(self, Self::Failed(err) if err.is_transient())
    }
}

impl From<AppError> for BatchError {
    fn from(err: AppError) -> Self {
        Self::Failed(err)
    }
}

/// Runs the batch in one transaction; per-command refusals are in the result. If it was
/// authorized by roles the actor knew and they were out of date, it runs again, reading them.
async fn commit(
    ctx: &Ctx,
    home: Uuid,
    batch: &[PendingCreate],
    known: &KnownRoles,
) -> Result<Committed, BatchError> {
    match commit_once(ctx, home, batch, known).await {
        Err(BatchError::MembersChanged) => {
            // With nothing known, the roles are read and there is no check to fail.
            known.forget();
            commit_once(ctx, home, batch, known).await
        }
        outcome => outcome,
    }
}

/// [`commit`], once: with the roles `known` remembers if it has them all, else reading them
/// (and telling `known`).
async fn commit_once(
    ctx: &Ctx,
    home: Uuid,
    batch: &[PendingCreate],
    known: &KnownRoles,
) -> Result<Committed, BatchError> {
    let calendars: Vec<Uuid> = batch
        .iter()
        .flat_map(|p| p.input.calendars.iter().copied())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    // With the roles known, the batch is one write of its inserts and their check (on
    // PostgreSQL one statement, no transaction around it). Its connection is taken before
    // the timestamp, and the check's locks are bounded in the database.
    let (write, members, seen_at): (FinalWrite, _, _) = match known.get(home, &calendars) {
        Some(roles) => {
            let seen_at = batch_roles::seen_at(&roles.versions);
            (ctx.db.begin_final_write().await?, roles, seen_at)
        }
        None => {
            let txn = ctx.db.begin_write().await?;
            let Some(roles) = batch_roles::lock_with_roles(&txn, home, &calendars).await? else {
                return Ok(batch
                    .iter()
                    .map(|_| Err(not_allowed(Action::EditEvents)))
                    .collect());
            };
            known.learn(&roles);
            (txn.into(), roles, None)
        }
    };
    let mut taken = HashSet::new();
    let mut outcomes: Vec<Result<(), AppError>> = Vec::with_capacity(batch.len());
    let mut accepted = Vec::new();
    for pending in batch {
        let outcome = check(&members, pending, &mut taken);
        if outcome.is_ok() {
            accepted.push(NewEvent {
                input: &pending.input,
                creator: &pending.actor,
                home,
            });
        }
        outcomes.push(outcome);
    }
    // The inserts and the commit go in one round trip right after the timestamp is taken:
    // no step is left between them for `WriteClock::check` to bound (a commit is never
    // bounded, here or elsewhere).
    let now = WriteClock::start().now;
    let inserted = match event_inserts::insert_many_and_commit(write, &accepted, now, seen_at).await
    {
        Ok(inserted) => inserted,
        Err(InsertEventError::Duplicate) => return Err(BatchError::Collision),
        Err(InsertEventError::MembersChanged) => return Err(BatchError::MembersChanged),
        Err(InsertEventError::TooSlow) => return Err(WriteClock::exceeded().into()),
        Err(InsertEventError::Database(err)) => return Err(err.into()),
    };
    let mut inserted = inserted.into_iter();
    Ok(outcomes
        .into_iter()
        .zip(batch)
        .map(|(outcome, pending)| {
            outcome?;
            let event = inserted
                .next()
                .ok_or_else(|| AppError::internal("batch insert lost an event"))?;
            Ok((event, readers(&members, &pending.input.calendars)))
        })
        .collect())
}

/// Whether the command may run: editEvents on every calendar, an id not already used in
/// the batch.
fn check(
    members: &BatchRoles,
    pending: &PendingCreate,
    taken: &mut HashSet<Uuid>,
) -> Result<(), AppError> {
    let allowed = pending.input.calendars.iter().all(|calendar| {
        members.members.get(calendar).is_some_and(|list| {
            list.iter()
                .any(|(user, role)| *user == pending.actor && role.allows(Action::EditEvents))
        })
    });
    if !allowed {
        return Err(not_allowed(Action::EditEvents));
    }
    if !taken.insert(pending.input.id) {
        return Err(duplicate());
    }
    Ok(())
}

/// Who sees an event linked to `links`, from the batch's membership rows.
fn readers(members: &BatchRoles, links: &[Uuid]) -> Readers {
    let mut readers: Readers = BTreeMap::new();
    for calendar in links {
        for (user, _) in members
            .members
            .get(calendar)
            .into_iter()
            .flat_map(|list| list.iter())
        {
            readers.entry(user.clone()).or_default().push(*calendar);
        }
    }
    readers
}

/// Sends each created event's frames, then answers every command.
fn answer(ctx: &Ctx, batch: Vec<PendingCreate>, outcome: Result<Committed, BatchError>) {
    match outcome {
        Ok(results) => {
            for (pending, result) in batch.into_iter().zip(results) {
                let response = result.map(|(event, readers)| {
                    send_event(ctx, "event_created", &event, &readers);
                    EventView::new(&event, pending.input.calendars.clone())
                });
                reply(pending.reply, response);
            }
        }
        Err(BatchError::Collision) => {
            for pending in batch {
                reply(pending.reply, Err(duplicate()));
            }
        }
        Err(BatchError::MembersChanged) => {
            // `commit` runs a batch whose known roles were out of date again, reading them.
            for pending in batch {
                reply(
                    pending.reply,
                    Err(AppError::internal("unchecked roles changed")),
                );
            }
        }
        Err(BatchError::Failed(err) | BatchError::Refused(err)) => {
            for pending in batch {
                reply(pending.reply, Err(err.replicate()));
            }
        }
    }
}
