//! Putting an event into another calendar: link (the same event, now also there; an edit
//! batched by its home calendar's actor) and fork (an independent copy homed there; run by
//! the target calendar's actor). Both need the actor to see the event and to edit the
//! target. Also here: attendance answers (an edit too) and the reads of who sees an event.

use crate::store::{Connection, WriteTxn};
use serde::Serialize;

use super::edits::EditBatch;
use super::readers::Memberships;
use super::{add_event, event_not_found, send_event};
use super::{refuse_constraint, retry_transient};
use crate::commands::Services;
use crate::domain::event_content::{EventContent, event_content_of};
use crate::domain::event_fields::event_fields;
use crate::domain::events::{Attendance, EventInput};
use crate::domain::frames::Frame;
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::domain::roles::Action;
use crate::error::AppError;
use crate::store::events as event_store;
use crate::store::events::WriteDeadline;
use crate::store::events::inserts::{self as event_inserts, InsertEventError, NewEvent};
use crate::store::{attendance, calendars as calendar_store, event_shares};
use crate::views::events::{AttendeeView, EventView};

/// A live event the actor can see, as [`visible_event`] read it.
pub struct Visible {
    /// The event.
    pub event: entities::events::Model,
    /// Its links.
    pub links: Vec<CalendarId>,
    /// The members of its calendars.
    pub memberships: Memberships,
}

/// The live event `event_id`, its links and its calendars' members, if `actor` can see it
/// (for reads and for writes that only copy it; writes that change it read it in their
/// batch: [`EditBatch::visible`]).
pub async fn visible_event(
    db: &impl Connection,
    event_id: EventId,
    actor: &UserId,
) -> Result<Visible, AppError> {
    let event = event_store::find(db, event_id)
        .await?
        .filter(|e| e.deleted_at.is_none())
        .ok_or_else(event_not_found)?;
    let links = event_store::links(db, event_id).await?;
    if links.is_empty() {
        return Err(event_not_found());
    }
    let memberships = Memberships::of(db, &links).await?;
    if !links.iter().any(|c| memberships.role(c, actor).is_some()) {
        return Err(AppError::forbidden("You can't access this event."));
    }
    Ok(Visible {
        event,
        links,
        memberships,
    })
}

/// The stored fields of `event`, for the rules every stored event follows.
fn content_of(event: &entities::events::Model) -> EventContent<'_> {
    event_content_of!(event)
}

fn require_target(
    memberships: &Memberships,
    target: CalendarId,
    actor: &UserId,
) -> Result<(), AppError> {
    let allowed = memberships
        .role(&target, actor)
        .is_some_and(|role| role.allows(Action::EditEvents));
    if allowed {
        Ok(())
    } else {
        Err(AppError::forbidden(
            "You can't add events to that calendar.",
        ))
    }
}

/// Links the event into `target` (idempotent; the home calendar is unchanged), as one
/// edit of `batch`; `event_updated` to the readers of every linked calendar.
pub(super) async fn link(
    txn: &WriteTxn,
    services: &Services,
    batch: &mut EditBatch,
    actor: &UserId,
    event_id: EventId,
    target: CalendarId,
) -> Result<EventView, AppError> {
    let (event, mut links) = batch.visible(event_id, actor)?;
    require_target(&batch.memberships, target, actor)?;
    // A row written before today's rules must not spread into more calendars.
    content_of(&event).check()?;
    let event = if links.contains(&target) {
        event
    } else {
        event_store::add_links(txn, event_id, &[target], actor, batch.now).await?;
        links.push(target);
        event_store::touch(txn, event, batch.now).await?
    };
    let readers = batch.memberships.readers(&links);
    add_event(
        services,
        &mut batch.frames,
        "event_updated",
        &event,
        &readers,
    );
    let view = EventView::new(&event, readers.get(actor).cloned().unwrap_or_default());
    batch.wrote(event, links);
    Ok(view)
}

/// Copies the event into `target` as a new, independent event (new id, the actor as creator
/// and organizer, `target` as home, not cancelled); `event_created` to the target's members.
pub async fn fork(
    services: &Services,
    by: &UserId,
    event: EventId,
    target: CalendarId,
) -> Result<EventView, AppError> {
    retry_transient(&services.metrics, || fork_once(services, by, event, target))
        .await
        .map_err(refuse_constraint)
}

/// [`fork`], once.
async fn fork_once(
    services: &Services,
    actor: &UserId,
    event_id: EventId,
    target: CalendarId,
) -> Result<EventView, AppError> {
    services.db
        .write(async |txn| {
            calendar_store::lock(txn, target).await?;
            let Visible {
                event: source,
                links,
                ..
            } = visible_event(txn, event_id, actor).await?;
            let target_members = Memberships::of(txn, &[target]).await?;
            require_target(&target_members, target, actor)?;
            if links.contains(&target) {
                return Err(AppError::bad_request(
                    "This event is already in that calendar.",
                ));
            }
            // Every content field of the source, then what a fork makes its own: the caller
            // organizes the copy, which is not cancelled.
            macro_rules! copy_of {
                ($source:ident; $($name:ident: [$($ty:tt)*] $kind:ident $wire:literal $doc:literal,)*) => {
                    EventInput {
                        id: EventId::generate(),
                        calendars: vec![target],
                        origin_calendar_id: Some(target),
                        $($name: $source.$name,)*
                    }
                };
            }
            let mut copy = event_fields!(copy_of { source; });
            copy.organizer = actor.to_string();
            copy.is_canceled = false;
            copy.content().check()?;
            let clock = WriteDeadline::start(txn).await?;
            let new = NewEvent {
                input: &copy,
                creator: actor,
                home: target,
            };
            let inserted = event_inserts::insert_many(txn, &[new], clock.now)
                .await
                .map_err(|err| match err {
                    InsertEventError::Duplicate => AppError::internal("fork id collision"),
                    // Only a batch of creations checks memberships in its inserts.
                    InsertEventError::MembersChanged | InsertEventError::TooSlow => {
                        AppError::internal("fork checked memberships")
                    }
                    InsertEventError::Database(err) => err.into(),
                })?;
            let event = inserted
                .into_iter()
                .next()
                .ok_or_else(|| AppError::internal("fork inserted nothing"))?;
            let readers = target_members.readers(&[target]);
            let change = crate::commands::mirrors::intents::EventChange {
                event_id: event.id,
                before: Vec::new(),
                after: vec![target],
            };
            let queued =
                crate::commands::mirrors::intents::record(&services.db, txn, &[change], clock.now).await?;
            let announce = services.within(txn);
            announce.provider_writes_queued(&queued.accounts().collect::<Vec<_>>());
            send_event(&announce, "event_created", &event, &readers);
            clock.check()?;
            let mut view = EventView::new(&event, vec![target]);
            view.provider_delivery = queued.delivery_of(event.id);
            Ok(view)
        })
        .await
}

/// The payload of `attendance_changed`: the event's attendees after an answer.
#[derive(Serialize)]
struct AttendanceChanged<'a> {
    #[serde(rename = "eventID")]
    event_id: EventId,
    attendees: &'a [AttendeeView],
}

/// Sets the actor's attendance (any member who sees the event, viewers included; or anyone
/// answering through the event's live published `page`), as one edit of `batch`;
/// `attendance_changed` to every reader.
pub(super) async fn set_attendance(
    txn: &WriteTxn,
    services: &Services,
    batch: &mut EditBatch,
    actor: &UserId,
    event_id: EventId,
    answer: Attendance,
    page: Option<&str>,
) -> Result<Vec<AttendeeView>, AppError> {
    let links = match page {
        None => batch.visible(event_id, actor)?.1,
        Some(token) => {
            let (_, links) = batch.live(event_id)?;
            if links.is_empty() || !event_shares::is_live_page_of(txn, token, event_id).await? {
                return Err(super::publishing::page_not_found());
            }
            links
        }
    };
    attendance::set(txn, event_id, actor, answer, batch.now).await?;
    // The list the batch read at its start, with this answer; read now for an event the
    // batch created.
    let attendees = match batch.attendees.answer(event_id, actor, answer) {
        Some(list) => list,
        None => attendance::list(txn, event_id).await?,
    };
    let attendees: Vec<AttendeeView> = attendees.into_iter().map(AttendeeView::from).collect();
    let readers = batch.memberships.readers(&links);
    let frame = Frame::of(
        "attendance_changed",
        &AttendanceChanged {
            event_id,
            attendees: &attendees,
        },
    )
    .map_err(AppError::internal)?;
    let connected = readers
        .keys()
        .filter(|user| services.announce.is_connected(user));
    batch.frames.add(connected, &frame);
    Ok(attendees)
}

/// The attendees of an event the reader can see (a read; no actor needed).
pub async fn attendees(
    services: &Services,
    reader: &UserId,
    event_id: EventId,
) -> Result<Vec<AttendeeView>, AppError> {
    let db = &services.db;
    visible_event(db, event_id, reader).await?;
    let attendees = attendance::list(db, event_id).await?;
    Ok(attendees.into_iter().map(AttendeeView::from).collect())
}
