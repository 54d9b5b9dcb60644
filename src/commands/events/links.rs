//! Putting an event into another calendar: link (the same event, now also there; run by
//! its home calendar's actor) and fork (an independent copy homed there; run by the target
//! calendar's actor). Both need the actor to see the event and to edit the target.

use uuid::Uuid;

use super::readers::Memberships;
use super::send_event;
use super::{refuse_constraint, retry_transient};
use crate::commands::Services;
use crate::domain::event_content::EventContent;
use crate::domain::events::{Attendance, EventInput};
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::domain::roles::Action;
use crate::error::AppError;
use crate::store::events as event_store;
use crate::store::events::WriteDeadline;
use crate::store::events::inserts::{self as event_inserts, InsertEventError, NewEvent};
use crate::store::{attendance, calendars as calendar_store};
use crate::views::events::{AttendeeView, EventView};

/// How [`visible_event`] reads the event.
#[derive(Debug, Clone, Copy)]
pub enum Reading<'a> {
    /// Without a lock (a read, or a write that only copies it).
    Unlocked,
    /// Locking the event's row (a write about the event that leaves its calendars alone).
    Locked,
    /// Locking its calendars and those of `also`, then its row (a write that changes the
    /// event or its links: [`event_store::lock_for_change`]).
    ForChange {
        /// Calendars the write adds to the event's.
        also: &'a [Uuid],
    },
}

/// A live event the actor can see, as [`visible_event`] read it.
pub struct Visible {
    /// The event.
    pub event: entities::events::Model,
    /// Its links.
    pub links: Vec<Uuid>,
    /// The members of its calendars (and of those the write adds).
    pub memberships: Memberships,
}

/// The live event `event_id`, its links and its calendars' members, if `actor` can see it.
pub async fn visible_event(
    txn: &impl sea_orm::ConnectionTrait,
    event_id: Uuid,
    actor: &str,
    reading: Reading<'_>,
) -> Result<Visible, AppError> {
    let (event, links) = match reading {
        Reading::Unlocked => (
            event_store::find(txn, event_id).await?,
            event_store::links(txn, event_id).await?,
        ),
        Reading::Locked => (
            event_store::lock(txn, event_id).await?,
            event_store::links(txn, event_id).await?,
        ),
        Reading::ForChange { also } => {
            match event_store::lock_for_change(txn, event_id, also).await? {
                Some((event, links)) => (Some(event), links),
                None => (None, Vec::new()),
            }
        }
    };
    let event = event
        .filter(|e| e.deleted_at.is_none())
        .ok_or_else(|| AppError::not_found("Event not found..."))?;
    if links.is_empty() {
        return Err(AppError::not_found("Event not found..."));
    }
    let mut calendars = links.clone();
    if let Reading::ForChange { also } = reading {
        calendars.extend_from_slice(also);
    }
    let memberships = Memberships::of(txn, &calendars).await?;
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
    EventContent {
        title: &event.title,
        organizer: &event.organizer,
        color: &event.color,
        start: event.start,
        end: event.end,
        description: event.description.as_deref(),
        location: event.location.as_deref(),
        recurrence: event.recurrence.as_deref(),
        url: event.url.as_deref(),
    }
}

fn require_target(memberships: &Memberships, target: Uuid, actor: &str) -> Result<(), AppError> {
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

/// Links the event into `target` (idempotent; the home calendar is unchanged);
/// `event_updated` to the readers of every linked calendar.
pub async fn link(
    services: &Services,
    by: &UserId,
    event: EventId,
    target: CalendarId,
) -> Result<EventView, AppError> {
    retry_transient(&services.metrics, || {
        link_once(services, by.as_str(), event.0, target.0)
    })
    .await
    .map_err(refuse_constraint)
}

/// [`link`], once.
async fn link_once(
    services: &Services,
    actor: &str,
    event_id: Uuid,
    target: Uuid,
) -> Result<EventView, AppError> {
    let txn = services.db.begin_write().await?;
    let Visible {
        event,
        mut links,
        memberships,
    } = visible_event(
        &txn,
        event_id,
        actor,
        Reading::ForChange { also: &[target] },
    )
    .await?;
    require_target(&memberships, target, actor)?;
    // A row written before today's rules must not spread into more calendars.
    content_of(&event).check()?;
    let clock = WriteDeadline::start();
    let event = if links.contains(&target) {
        event
    } else {
        event_store::add_links(&txn, event_id, &[target], actor, clock.now).await?;
        links.push(target);
        event_store::touch(&txn, event, clock.now).await?
    };
    let readers = memberships.readers(&links);
    clock.check()?;
    txn.commit().await?;
    send_event(services, "event_updated", &event, &readers);
    Ok(EventView::new(
        &event,
        readers.get(actor).cloned().unwrap_or_default(),
    ))
}

/// Copies the event into `target` as a new, independent event (new id, the actor as creator
/// and organizer, `target` as home, not cancelled); `event_created` to the target's members.
pub async fn fork(
    services: &Services,
    by: &UserId,
    event: EventId,
    target: CalendarId,
) -> Result<EventView, AppError> {
    retry_transient(&services.metrics, || {
        fork_once(services, by.as_str(), event.0, target.0)
    })
    .await
    .map_err(refuse_constraint)
}

/// [`fork`], once.
async fn fork_once(
    services: &Services,
    actor: &str,
    event_id: Uuid,
    target: Uuid,
) -> Result<EventView, AppError> {
    let txn = services.db.begin_write().await?;
    calendar_store::lock(&txn, target).await?;
    let Visible {
        event: source,
        links,
        ..
    } = visible_event(&txn, event_id, actor, Reading::Unlocked).await?;
    let target_members = Memberships::of(&txn, &[target]).await?;
    require_target(&target_members, target, actor)?;
    if links.contains(&target) {
        return Err(AppError::bad_request(
            "This event is already in that calendar.",
        ));
    }
    let copy = EventInput {
        id: Uuid::new_v4(),
        organizer: actor.to_owned(),
        title: source.title,
        color: source.color,
        start: source.start,
        end: source.end,
        calendars: vec![target],
        origin_calendar_id: Some(target),
        is_canceled: false,
        is_all_day: source.is_all_day,
        has_attendees: source.has_attendees,
        description: source.description,
        location: source.location,
        recurrence: source.recurrence,
        url: source.url,
    };
    copy.content().check()?;
    let clock = WriteDeadline::start();
    let new = NewEvent {
        input: &copy,
        creator: actor,
        home: target,
    };
    let inserted = event_inserts::insert_many(&txn, &[new], clock.now)
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
    clock.check()?;
    txn.commit().await?;
    send_event(services, "event_created", &event, &readers);
    Ok(EventView::new(&event, vec![target]))
}

/// Sets the actor's attendance (any member who sees the event, viewers included);
/// `attendance_changed` to every reader.
pub async fn set_attendance(
    services: &Services,
    by: &UserId,
    event: EventId,
    answer: Attendance,
) -> Result<Vec<AttendeeView>, AppError> {
    retry_transient(&services.metrics, || {
        set_attendance_once(services, by.as_str(), event.0, answer)
    })
    .await
    .map_err(refuse_constraint)
}

/// [`set_attendance`], once.
async fn set_attendance_once(
    services: &Services,
    actor: &str,
    event_id: Uuid,
    answer: Attendance,
) -> Result<Vec<AttendeeView>, AppError> {
    let txn = services.db.begin_write().await?;
    let Visible {
        links, memberships, ..
    } = visible_event(&txn, event_id, actor, Reading::Locked).await?;
    let clock = WriteDeadline::start();
    attendance::set(&txn, event_id, actor, answer, clock.now).await?;
    let attendees: Vec<AttendeeView> = attendance::list(&txn, event_id)
        .await?
        .into_iter()
        .map(AttendeeView::from)
        .collect();
    let readers = memberships.readers(&links);
    clock.check()?;
    txn.commit().await?;
    let frame = crate::domain::frames::Frame::new(
        "attendance_changed",
        serde_json::json!({ "eventID": event_id, "attendees": attendees }),
    );
    services.broadcast(readers.keys().map(String::as_str), &frame);
    Ok(attendees)
}

/// The attendees of an event the reader can see (a read; no actor needed).
pub async fn attendees(
    services: &Services,
    reader: &str,
    event_id: Uuid,
) -> Result<Vec<AttendeeView>, AppError> {
    let db = services.db.conn();
    visible_event(db, event_id, reader, Reading::Unlocked).await?;
    let attendees = attendance::list(db, event_id).await?;
    Ok(attendees.into_iter().map(AttendeeView::from).collect())
}
