//! Group commit of event creation. A calendar actor collects the `CreateEvent` commands
//! queued in its mailbox and runs them here as one batch, written by
//! [`creations::create_batch`] (how it is written, and with which roles, is the store's):
//! this module authorizes each command against the roles the write read, then sends each
//! created event's frames and answers every command. A command refused on its own (no
//! right, an id twice in the batch) is answered without affecting the others; if the batch
//! fails as a whole (an id that exists already — ids are client-chosen, so that is a
//! retried create — or a linked calendar deleted concurrently), every command is retried on
//! its own and the one concerned is refused. Checking ids before inserting would cost every
//! batch a round trip for a case that almost never happens.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::events::{Readers, send_event};
use super::{MaybeTransient, calendar_gone, not_allowed, retry_transient};
use crate::actors::calendar::Reply;
use crate::actors::reply;
use crate::context::Ctx;
use crate::domain::events::{EventInput, event_exists};
use crate::domain::roles::Action;
use crate::error::AppError;
use crate::store::events::WriteDeadline;
use crate::store::events::calendar_roles::CalendarRoles;
use crate::store::events::creations::{self, Creation, CreationsError};
use crate::store::events::remembered_roles::RememberedRoles;
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

/// Creates the events of `batch`, homed in `home`, answering each command; `known` is what
/// the calendar's actor remembers of the roles.
pub async fn create_all(ctx: &Ctx, home: Uuid, batch: Vec<PendingCreate>, known: &RememberedRoles) {
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
}

impl MaybeTransient for BatchError {
    fn is_transient(&self) -> bool {
        matches!(self, Self::Failed(err) if err.is_transient())
    }
}

impl From<CreationsError> for BatchError {
    fn from(err: CreationsError) -> Self {
        match err {
            CreationsError::Duplicate => Self::Collision,
            CreationsError::CalendarGone => Self::Refused(calendar_gone()),
            CreationsError::TooSlow => Self::Failed(WriteDeadline::exceeded()),
            CreationsError::Database(err) => Self::Failed(err.into()),
        }
    }
}

/// Writes the batch ([`creations::create_batch`]); per-command refusals are in the result.
async fn commit(
    ctx: &Ctx,
    home: Uuid,
    batch: &[PendingCreate],
    remembered: &RememberedRoles,
) -> Result<Committed, BatchError> {
    let creations: Vec<Creation<'_>> = batch
        .iter()
        .map(|pending| Creation {
            input: &pending.input,
            creator: &pending.actor,
        })
        .collect();
    let created =
        creations::create_batch(&ctx.db, home, &creations, remembered, &mut check).await?;
    Ok(created
        .outcomes
        .into_iter()
        .zip(batch)
        .map(|(outcome, pending)| {
            outcome.map(|event| (event, readers(&created.roles, &pending.input.calendars)))
        })
        .collect())
}

/// Whether the command may run: editEvents on every calendar.
fn check(members: &CalendarRoles, creation: &Creation<'_>) -> Result<(), AppError> {
    let allowed = creation.input.calendars.iter().all(|calendar| {
        members.members.get(calendar).is_some_and(|list| {
            list.iter()
                .any(|(user, role)| *user == creation.creator && role.allows(Action::EditEvents))
        })
    });
    if !allowed {
        return Err(not_allowed(Action::EditEvents));
    }
    Ok(())
}

/// Who sees an event linked to `links`, from the batch's membership rows.
fn readers(members: &CalendarRoles, links: &[Uuid]) -> Readers {
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
                reply(pending.reply, Err(event_exists()));
            }
        }
        Err(BatchError::Failed(err) | BatchError::Refused(err)) => {
            for pending in batch {
                reply(pending.reply, Err(err.replicate()));
            }
        }
    }
}
