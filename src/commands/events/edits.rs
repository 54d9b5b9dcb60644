//! Edits of events homed in one calendar, committed together: the calendar's actor hands
//! over the updates, deletes, links and attendance answers that queued up while it was
//! busy ([`Edit`]), and [`edit_all`] runs them in arrival order in one write transaction.
//! Creations queued among them join the same transaction ([`Edit::Create`]): each is
//! checked when its turn comes, and the accepted ones are inserted together, before the
//! first edit that writes one of them and at the end.
//!
//! A batch reads what its edits need once, at its start: the events, locked by id, their
//! links, and the members and roles of every calendar involved ([`Memberships`],
//! [`event_store::change_locks::lock_for_changes`]), which its last statement confirms are
//! still current ([`event_store::change_locks::confirm_members`]; on PostgreSQL the
//! calendars are locked from there to the commit only). Each edit then checks its rules
//! against that state ([`EditBatch`]), which also carries what the edits before it in the
//! batch wrote, and writes its rows. Every refusal comes before the edit's first write, so
//! a refused edit leaves the transaction as it found it and the batch goes on. The frames
//! leave in one block per user after the commit, in the edits' order.
//!
//! A batch that fails as a whole (the database refused a row, a race was lost) runs again
//! one edit at a time, so one edit's failure is not its neighbours'.

use std::collections::{BTreeSet, HashMap};

use crate::commands::mirrors::intents::{self, EventChange};

use crate::store::{NextWrite, Unheard, WriteTxn};
use chrono::{DateTime, Utc};
use entities::events;

use super::readers::Memberships;
use super::{create, event_not_found, links, publishing, refuse_constraint, retry_transient};
use crate::commands::Services;
use crate::domain::event_pages::Publication;
use crate::domain::events::{Attendance, EventInput};
use crate::domain::frames::FrameBatch;
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::error::AppError;
use crate::store::attendance::AttendeeLists;
use crate::store::db_errors;
use crate::store::event_shares::PublishedPage;
use crate::store::events::change_locks::Answering;
use crate::store::events::inserts::NewEvent;
use crate::store::events::{self as event_store, WriteDeadline, calendar_roles};
use crate::views::events::{AttendeeView, DeletedEventView, EventView};

/// One edit of an event homed in the batch's calendar (or its creation there).
#[derive(Debug)]
pub enum Edit {
    /// Create it, homed in the batch's calendar (as [`super::create`] does, inside an edit
    /// batch: a run that mixes creations and edits commits as one transaction).
    Create {
        /// Acting user.
        by: UserId,
        /// The validated event.
        input: EventInput,
        /// Its home calendar (the batch's).
        home: CalendarId,
    },
    /// Replace its content and calendars ([`super::update`]).
    Update {
        /// Acting user.
        by: UserId,
        /// The validated event.
        input: EventInput,
        /// The `revision` the client last saw, if it sent one (a stale one is a 409).
        base_revision: Option<i64>,
    },
    /// Delete it, or unlink it from one calendar ([`super::delete`]).
    Delete {
        /// Acting user.
        by: UserId,
        /// The event.
        event: EventId,
        /// Only this calendar's link.
        unlink: Option<CalendarId>,
    },
    /// Link it into another calendar ([`links::link`]).
    Link {
        /// Acting user.
        by: UserId,
        /// The event.
        event: EventId,
        /// The calendar to link into.
        target: CalendarId,
    },
    /// Answer attendance ([`links::set_attendance`]).
    SetAttendance {
        /// Acting user.
        by: UserId,
        /// The event.
        event: EventId,
        /// The answer.
        answer: Attendance,
        /// The published page it came through (instead of a membership).
        page: Option<String>,
    },
    /// Publish it as a page, or change how ([`publishing::publish`]).
    Publish {
        /// Acting user.
        by: UserId,
        /// The event.
        event: EventId,
        /// How.
        publication: Publication,
    },
    /// Revoke its page ([`publishing::unpublish`]).
    Unpublish {
        /// Acting user.
        by: UserId,
        /// The event.
        event: EventId,
    },
}

impl Edit {
    /// The event it edits.
    fn event_id(&self) -> EventId {
        match self {
            Self::Create { input, .. } | Self::Update { input, .. } => input.id,
            Self::Delete { event, .. }
            | Self::Link { event, .. }
            | Self::SetAttendance { event, .. }
            | Self::Publish { event, .. }
            | Self::Unpublish { event, .. } => *event,
        }
    }

    /// The calendar a creation is homed in.
    fn home(&self) -> Option<&CalendarId> {
        match self {
            Self::Create { home, .. } => Some(home),
            _ => None,
        }
    }

    /// Calendars it may link the event into.
    fn adds_to(&self) -> &[CalendarId] {
        match self {
            Self::Create { input, .. } | Self::Update { input, .. } => &input.calendars,
            Self::Link { target, .. } => std::slice::from_ref(target),
            Self::Delete { .. }
            | Self::SetAttendance { .. }
            | Self::Publish { .. }
            | Self::Unpublish { .. } => &[],
        }
    }
}

/// What an edit answers.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "most edits answer with the event; each answer is moved once, to its caller"
)]
pub enum Edited {
    /// The event as the actor sees it now (update, link).
    Event(EventView),
    /// `{id, calendars, removed}` (delete).
    Deleted(DeletedEventView),
    /// The attendees now (attendance).
    Attendees(Vec<AttendeeView>),
    /// The live publication, if any (publish, unpublish).
    Published(Option<PublishedPage>),
}

/// What the edits of one batch share while they run: the events as the batch has left
/// them so far, the members of their calendars, the write's time, and what is owed after
/// the commit.
pub(super) struct EditBatch {
    /// Each event the batch edits (deleted or not) with its links.
    events: HashMap<EventId, (events::Model, Vec<CalendarId>)>,
    /// The attendees of the events it answers attendance for, as its answers leave them.
    pub(super) attendees: AttendeeLists,
    /// The members and roles of every calendar the batch reads or writes.
    pub(super) memberships: Memberships,
    /// The batch's `updated_at`.
    pub(super) now: DateTime<Utc>,
    /// The frames to send after the commit, in the edits' order.
    pub(super) frames: FrameBatch,
    /// The earliest change mail the batch queued.
    mail_due: Option<DateTime<Utc>>,
}

impl EditBatch {
    /// The live event `id` and its links as the batch has left them (404: no such event,
    /// or deleted).
    pub(super) fn live(&self, id: EventId) -> Result<(events::Model, Vec<CalendarId>), AppError> {
        self.events
            .get(&id)
            .filter(|(event, _)| event.deleted_at.is_none())
            .cloned()
            .ok_or_else(event_not_found)
    }

    /// The live event `id` and its links, if `actor` sees it through one of them (404: no
    /// such event, or in no calendar; 403: in none of the actor's).
    pub(super) fn visible(
        &self,
        id: EventId,
        actor: &UserId,
    ) -> Result<(events::Model, Vec<CalendarId>), AppError> {
        let (event, links) = self.live(id)?;
        if links.is_empty() {
            return Err(event_not_found());
        }
        if !links
            .iter()
            .any(|c| self.memberships.role(c, actor).is_some())
        {
            return Err(AppError::forbidden("You can't access this event."));
        }
        Ok((event, links))
    }

    /// Whether the batch holds event `id` (deleted or not): it exists, or an earlier
    /// command of the batch created it.
    pub(super) fn holds(&self, id: EventId) -> bool {
        self.events.contains_key(&id)
    }

    /// Records what an edit wrote, for the edits after it.
    pub(super) fn wrote(&mut self, event: events::Model, links: Vec<CalendarId>) {
        self.events.insert(event.id, (event, links));
    }

    /// Records a change mail queued until `due`.
    pub(super) fn mail_queued(&mut self, due: Option<DateTime<Utc>>) {
        self.mail_due = match (self.mail_due, due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Runs `edits` in order, in one transaction, and answers each. The answers are given once
/// `unheard` is heard ([`WriteTxn::hear_later`]): this instance's streams then have the
/// batch's frames. The first try runs on the transaction `next` began ahead, if it did.
pub async fn edit_all(
    services: &Services,
    edits: &[Edit],
    next: &NextWrite,
    unheard: &Unheard,
) -> Vec<Result<Edited, AppError>> {
    let kind = if edits.iter().any(|edit| edit.home().is_some()) {
        "mixed"
    } else {
        "edit"
    };
    services.metrics.event_batch(kind, edits.len());
    match retry_transient(&services.metrics, || {
        edit_once(services, edits, next, unheard)
    })
    .await
    {
        Ok(outcomes) => outcomes,
        Err(err) if edits.len() == 1 => vec![Err(refuse_constraint(err))],
        // Waiting for the database took too long: every edit of the batch gets that answer
        // (running them one at a time would only wait longer).
        Err(AppError::Unavailable(_)) => edits
            .iter()
            .map(|_| Err(WriteDeadline::exceeded()))
            .collect(),
        Err(err) => {
            tracing::warn!(edits = edits.len(), error = %err, "event.edit_batch.split");
            let mut outcomes = Vec::with_capacity(edits.len());
            for edit in edits {
                let alone = std::slice::from_ref(edit);
                let outcome = retry_transient(&services.metrics, || {
                    edit_once(services, alone, next, unheard)
                })
                .await
                .map_err(refuse_constraint)
                .and_then(|mut answered| {
                    answered
                        .pop()
                        .unwrap_or_else(|| Err(AppError::internal("an edit went unanswered")))
                });
                outcomes.push(outcome);
            }
            outcomes
        }
    }
}

/// Whether an edit's error leaves the transaction unusable (the database failed, or the
/// write ran out of time) rather than refusing that one edit.
fn spoils_the_batch(err: &AppError) -> bool {
    matches!(err, AppError::Internal(_) | AppError::Unavailable(_))
}

/// [`edit_all`], once: the answers of the edits, or why the whole batch wrote nothing.
async fn edit_once(
    services: &Services,
    edits: &[Edit],
    next: &NextWrite,
    unheard: &Unheard,
) -> Result<Vec<Result<Edited, AppError>>, AppError> {
    next.write(&services.db, async |txn| {
        txn.hear_later(unheard);
        let services = &services.within(txn);
        let ids: Vec<EventId> = edits
            .iter()
            .map(Edit::event_id)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        // The calendars edits may link into, and the homes of creations.
        let also: Vec<CalendarId> = edits
            .iter()
            .flat_map(|edit| edit.adds_to().iter().chain(edit.home()).copied())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let answering = answering(edits);
        let locked =
            event_store::change_locks::lock_for_changes(txn, &ids, &also, &answering).await?;
        let versions = locked.versions;
        let attendees = locked.attendees;
        let memberships = Memberships::from_roles(locked.members);
        let events = locked.events;
        let clock = WriteDeadline::start(txn).await?;
        let mut batch = EditBatch {
            events,
            attendees,
            memberships,
            now: clock.now,
            frames: FrameBatch::default(),
            mail_due: None,
        };
        let mut original: HashMap<EventId, (i64, Vec<CalendarId>)> = batch
            .events
            .iter()
            .map(|(id, (event, links))| (*id, (event.revision, links.clone())))
            .collect();
        // Creations accepted and not inserted yet: inserted together, before the first
        // edit that writes one of them and at the end.
        let mut unwritten: Vec<NewEvent<'_>> = Vec::new();
        let mut outcomes = Vec::with_capacity(edits.len());
        for edit in edits {
            let outcome = match edit {
                Edit::Create { by, input, home } => {
                    let new = NewEvent {
                        input,
                        creator: by,
                        home: *home,
                    };
                    create::accept(services, &mut batch, new).map(|view| {
                        // Its outbox rows: linked from nowhere to its calendars.
                        original.insert(input.id, (0, Vec::new()));
                        unwritten.push(new);
                        Edited::Event(view)
                    })
                }
                edit => {
                    if unwritten.iter().any(|new| new.input.id == edit.event_id()) {
                        create::insert_accepted(txn, &mut unwritten, batch.now).await?;
                    }
                    run(txn, services, &mut batch, edit).await
                }
            };
            match outcome {
                Err(err) if spoils_the_batch(&err) => return Err(err),
                outcome => outcomes.push(outcome),
            }
        }
        create::insert_accepted(txn, &mut unwritten, batch.now).await?;
        let changes: Vec<EventChange> = batch
            .events
            .iter()
            .filter_map(|(id, (event, links))| {
                let (revision, before) = original.get(id)?;
                (event.revision != *revision).then(|| EventChange {
                    event_id: *id,
                    before: before.clone(),
                    after: if event.deleted_at.is_some() {
                        Vec::new()
                    } else {
                        links.clone()
                    },
                })
            })
            .collect();
        let queued = intents::record(&services.db, txn, &changes, batch.now).await?;
        if !queued.writes.is_empty() {
            services.provider_writes_queued(&queued.accounts().collect::<Vec<_>>());
            for outcome in &mut outcomes {
                match outcome {
                    Ok(Edited::Event(view)) => {
                        view.provider_delivery = queued.delivery_of(EventId::from_uuid(view.id))
                    }
                    Ok(Edited::Deleted(view)) => {
                        view.provider_delivery = queued.delivery_of(EventId::from_uuid(view.id))
                    }
                    _ => {}
                }
            }
        }
        if let Some(due) = batch.mail_due {
            services.announce.mail_batch_due(due);
        }
        if !batch.frames.is_empty() {
            services.announce.deliver(batch.frames);
        }
        event_store::change_locks::confirm_members(txn, &versions).await?;
        clock.check()?;
        Ok(outcomes)
    })
    .await
    .map_err(too_slow_as_deadline)
}

/// The batch's locks took too long (the check that waits for them goes with the commit,
/// [`event_store::change_locks::confirm_members`]): answered as a write past its time bound.
fn too_slow_as_deadline(err: AppError) -> AppError {
    if db_errors::database_cause(&err).is_some_and(calendar_roles::is_too_slow) {
        WriteDeadline::exceeded()
    } else {
        err
    }
}

/// The events the batch answers attendance for, and who answers.
fn answering(edits: &[Edit]) -> Answering {
    let mut events = BTreeSet::new();
    let mut people = BTreeSet::new();
    for edit in edits {
        if let Edit::SetAttendance { by, event, .. } = edit {
            events.insert(*event);
            people.insert(by.clone());
        }
    }
    Answering {
        events: events.into_iter().collect(),
        people: people.into_iter().collect(),
    }
}

/// Runs one edit of the batch.
async fn run(
    txn: &WriteTxn,
    services: &Services,
    batch: &mut EditBatch,
    edit: &Edit,
) -> Result<Edited, AppError> {
    match edit {
        Edit::Create { .. } => Err(AppError::internal(
            "a creation is accepted by its batch, not run",
        )),
        Edit::Update {
            by,
            input,
            base_revision,
        } => super::update(txn, services, batch, by, input, *base_revision)
            .await
            .map(Edited::Event),
        Edit::Delete { by, event, unlink } => {
            super::delete(txn, services, batch, by, *event, *unlink)
                .await
                .map(Edited::Deleted)
        }
        Edit::Link { by, event, target } => links::link(txn, services, batch, by, *event, *target)
            .await
            .map(Edited::Event),
        Edit::SetAttendance {
            by,
            event,
            answer,
            page,
        } => links::set_attendance(txn, services, batch, by, *event, *answer, page.as_deref())
            .await
            .map(Edited::Attendees),
        Edit::Publish {
            by,
            event,
            publication,
        } => publishing::publish(txn, services, batch, by, *event, *publication)
            .await
            .map(Edited::Published),
        Edit::Unpublish { by, event } => publishing::unpublish(txn, batch, by, *event)
            .await
            .map(Edited::Published),
    }
}
