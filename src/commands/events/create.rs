//! Group commit of event creation. A calendar actor collects the `CreateEvent` commands
//! queued in its mailbox and runs them here as one batch, through the write the store hands
//! out ([`creations::begin`]; how it is written, and with which roles, is the store's):
//! this module authorizes each command against the roles the write holds, announces each
//! created event's frames into the write (they leave when it commits) and answers every
//! command. A command refused on its own (no
//! right, an id twice in the batch) is answered without affecting the others; if the batch
//! fails as a whole (an id that exists already — ids are client-chosen, so that is a
//! retried create — or a linked calendar deleted concurrently), every command is retried on
//! its own and the one concerned is refused. Checking ids before inserting would cost every
//! batch a round trip for a case that almost never happens.

use std::collections::{BTreeSet, HashSet};

use chrono::{DateTime, Utc};
use entities::events;

use super::edits::EditBatch;
use super::readers::readers_among;
use super::{add_event, send_event};
use crate::commands::Services;
use crate::commands::mirrors::intents::delivery_of;
use crate::commands::{MaybeTransient, calendar_gone, not_allowed, retry_transient};
use crate::domain::events::{EventInput, event_exists};
use crate::domain::ids::{CalendarId, UserId};
use crate::domain::roles::Action;
use crate::error::AppError;
use crate::store::events::WriteDeadline;
use crate::store::events::calendar_roles::CalendarRoles;
use crate::store::events::creations::{self, CommitError, Creation, CreationsError};
use crate::store::events::inserts::{self, InsertEventError, NewEvent};
use crate::store::events::remembered_roles::RememberedRoles;
use crate::store::outbox::{self, MirrorTargets};
use crate::store::{NextWrite, Unheard, WriteTxn};
use crate::views::events::EventView;
use crate::views::events::ProviderDelivery;

/// One queued `CreateEvent`.
#[derive(Debug)]
pub struct PendingCreate {
    /// Who creates it.
    pub by: UserId,
    /// The event.
    pub input: EventInput,
}

/// Creates the events of `batch`, homed in `home`, and sends their frames; the answer to
/// each command, in order, to be given once `unheard` is heard ([`WriteTxn::hear_later`]).
/// `remembered` is what the calendar's actor remembers of the roles, `next` its next write
/// transaction: taken if it was begun ahead, and begun ahead once this one is stamped.
pub async fn create_all(
    services: &Services,
    home: CalendarId,
    batch: &[PendingCreate],
    remembered: &RememberedRoles,
    next: &NextWrite,
    unheard: &Unheard,
) -> Vec<Result<EventView, AppError>> {
    services.metrics.event_batch("create", batch.len());
    if batch.len() > 1 {
        match retry_transient(&services.metrics, || {
            commit(services, home, batch, remembered, next, unheard)
        })
        .await
        {
            // One of the ids exists, or one of the calendars was deleted meanwhile: each
            // command alone finds out whether it was concerned.
            Err(BatchError::Collision | BatchError::Refused(_)) => {}
            outcome => return answers(batch, outcome),
        }
    }
    let mut all = Vec::with_capacity(batch.len());
    for one in batch {
        let one = std::slice::from_ref(one);
        let outcome = retry_transient(&services.metrics, || {
            commit(services, home, one, remembered, next, unheard)
        })
        .await;
        all.extend(answers(one, outcome));
    }
    all
}

/// What a committed batch produced for each command, in order.
type Committed = Vec<Result<(entities::events::Model, Option<Vec<ProviderDelivery>>), AppError>>;

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

/// Writes the batch: begins its write ([`creations::begin`]), authorizes each command by the
/// roles the write holds, announces each created event's frames (and the outbox rows it
/// queued) into the write and commits it; per-command refusals are in the result. When the
/// roles the actor remembered turn out stale, nothing was written and the batch runs again
/// reading them.
async fn commit(
    services: &Services,
    home: CalendarId,
    batch: &[PendingCreate],
    remembered: &RememberedRoles,
    next: &NextWrite,
    unheard: &Unheard,
) -> Result<Committed, BatchError> {
    let calendars: Vec<CalendarId> = batch
        .iter()
        .flat_map(|pending| pending.input.calendars.iter().copied())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mirrors = outbox::targets(&services.db, &services.db, &calendars)
        .await
        .map_err(|err| BatchError::Failed(err.into()))?;
    let write = BatchWrite {
        home,
        batch,
        remembered,
        next,
        calendars: &calendars,
        mirrors: &mirrors,
        unheard,
    };
    let mut stale = false;
    let created = loop {
        match commit_once(services, &write).await {
            Err(CommitError::MembersChanged) if !stale => {
                stale = true;
                remembered.forget();
            }
            Err(CommitError::MembersChanged) => {
                return Err(BatchError::Failed(AppError::internal(
                    "the roles read in the write changed",
                )));
            }
            Err(CommitError::Failed(err)) => return Err(err.into()),
            Ok(created) => break created,
        }
    };
    Ok(created
        .into_iter()
        .zip(batch)
        .map(|(outcome, pending)| {
            outcome.map(|event| {
                let writes = outbox::puts_for_new(
                    &mirrors,
                    [(event.id, pending.input.calendars.as_slice())],
                );
                let delivery = delivery_of(&writes, event.id);
                (event, delivery)
            })
        })
        .collect())
}

/// What each try of [`commit`] writes, and what it holds for it.
struct BatchWrite<'a> {
    /// The calendar whose actor commits the batch.
    home: CalendarId,
    /// The creations, in arrival order.
    batch: &'a [PendingCreate],
    /// The roles the actor remembers of the batch's calendars.
    remembered: &'a RememberedRoles,
    /// The actor's next write transaction.
    next: &'a NextWrite,
    /// Every calendar the creations name, in order.
    calendars: &'a [CalendarId],
    /// The provider mirrors of those calendars.
    mirrors: &'a MirrorTargets,
    /// Where the commit leaves its frame notices for the answers to wait for.
    unheard: &'a Unheard,
}

/// [`commit`], once: each command's row or refusal.
async fn commit_once(
    services: &Services,
    write: &BatchWrite<'_>,
) -> Result<Vec<Result<events::Model, AppError>>, CommitError> {
    let BatchWrite {
        home,
        batch,
        remembered,
        next,
        calendars,
        mirrors,
        unheard,
    } = *write;
    let write = match creations::begin(&services.db, home, calendars, remembered, next).await? {
        Some(write) => write,
        // No home calendar: nobody may create in it.
        None => {
            let roles = CalendarRoles::default();
            return Ok(batch
                .iter()
                .map(|pending| {
                    check(&roles, pending)
                        .and_then(|()| Err(AppError::internal("no home calendar to create in")))
                })
                .collect());
        }
    };
    let mut refusals: Vec<Option<AppError>> = Vec::with_capacity(batch.len());
    let mut accepted = Vec::new();
    let mut taken = HashSet::new();
    for pending in batch {
        let outcome = check(write.roles(), pending).and_then(|()| {
            // An id twice in one batch: the second is refused on its own.
            if taken.insert(pending.input.id) {
                Ok(())
            } else {
                Err(event_exists())
            }
        });
        match outcome {
            Ok(()) => {
                accepted.push(Creation {
                    input: &pending.input,
                    creator: &pending.by,
                });
                refusals.push(None);
            }
            Err(refusal) => refusals.push(Some(refusal)),
        }
    }
    let prepared = write.prepare(&accepted, mirrors).await?;
    // Stamped: the calendar's next batch may begin while this one is written.
    next.begin_ahead(&services.db);
    prepared.txn().hear_later(unheard);
    let roles = prepared.roles();
    let services = services.within(prepared.txn());
    let created = batch
        .iter()
        .zip(&refusals)
        .filter(|(_, refusal)| refusal.is_none())
        .zip(prepared.rows());
    for ((pending, _), event) in created {
        let readers = readers_among(&pending.input.calendars, |calendar| {
            roles
                .members
                .get(calendar)
                .into_iter()
                .flat_map(|list| list.iter())
                .map(|(user, _)| user)
        });
        send_event(&services, "event_created", event, &readers);
    }
    if !accepted.is_empty() {
        services.provider_writes_queued(mirrors.values());
    }
    let mut inserted = prepared.commit().await?.into_iter();
    Ok(refusals
        .into_iter()
        .map(|refusal| match refusal {
            Some(refusal) => Err(refusal),
            None => inserted
                .next()
                .ok_or_else(|| AppError::internal("batch insert lost an event")),
        })
        .collect())
}

/// Accepts a creation into an edit batch (a run that mixes creations and edits, committed
/// as one transaction, [`super::edits`]): refuses an id the batch holds already (an event
/// that exists, deleted or not, or one created earlier in the batch) or a calendar where
/// the creator may not edit events; otherwise records the new row in the batch for the
/// edits after it and announces its `event_created`. The caller inserts it.
pub(super) fn accept(
    services: &Services,
    batch: &mut EditBatch,
    new: NewEvent<'_>,
) -> Result<EventView, AppError> {
    if batch.holds(new.input.id) {
        return Err(event_exists());
    }
    let may = |calendar: &CalendarId| {
        batch
            .memberships
            .role(calendar, new.creator)
            .is_some_and(|role| role.allows(Action::EditEvents))
    };
    if !(new.input.calendars.iter().all(may) && may(&new.home)) {
        return Err(not_allowed(Action::EditEvents));
    }
    let Some(event) = inserts::new_models(&[new], batch.now).pop() else {
        return Err(AppError::internal("no row for a new event"));
    };
    let readers = batch.memberships.readers(&new.input.calendars);
    add_event(
        services,
        &mut batch.frames,
        "event_created",
        &event,
        &readers,
    );
    // Its links as a read would list them: linked at one moment, so by calendar id.
    let mut links = new.input.calendars.clone();
    links.sort_unstable();
    let view = EventView::new(&event, new.input.calendars.clone());
    batch.wrote(event, links);
    Ok(view)
}

/// Inserts the creations an edit batch accepted so far ([`accept`]) (one round trip per chunk of them) and empties
/// `unwritten`. An id taken meanwhile by another calendar's batch fails the whole batch,
/// which then runs one command at a time.
pub(super) async fn insert_accepted(
    txn: &WriteTxn,
    unwritten: &mut Vec<NewEvent<'_>>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    if unwritten.is_empty() {
        return Ok(());
    }
    inserts::insert_many(txn, unwritten, now)
        .await
        .map_err(|err| match err {
            InsertEventError::Database(err) => AppError::from(err),
            InsertEventError::Duplicate => event_exists(),
            other => AppError::internal(other.to_string()),
        })?;
    unwritten.clear();
    Ok(())
}

/// Whether the command may run: editEvents on every calendar.
fn check(members: &CalendarRoles, pending: &PendingCreate) -> Result<(), AppError> {
    let allowed = pending.input.calendars.iter().all(|calendar| {
        members.members.get(calendar).is_some_and(|list| {
            list.iter()
                .any(|(user, role)| *user == pending.by && role.allows(Action::EditEvents))
        })
    });
    if !allowed {
        return Err(not_allowed(Action::EditEvents));
    }
    Ok(())
}

/// The answer to every command.
fn answers(
    batch: &[PendingCreate],
    outcome: Result<Committed, BatchError>,
) -> Vec<Result<EventView, AppError>> {
    match outcome {
        Ok(results) => batch
            .iter()
            .zip(results)
            .map(|(pending, result)| {
                result.map(|(event, delivery)| {
                    let mut view = EventView::new(&event, pending.input.calendars.clone());
                    view.provider_delivery = delivery;
                    view
                })
            })
            .collect(),
        Err(BatchError::Collision) => batch.iter().map(|_| Err(event_exists())).collect(),
        Err(BatchError::Failed(err) | BatchError::Refused(err)) => {
            batch.iter().map(|_| Err(err.replicate())).collect()
        }
    }
}
