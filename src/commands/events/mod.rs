//! Event writes, run by the event's home calendar actor: update and delete (or unlink from
//! one calendar) here, link and attendance in [`links`], all four in batches ([`edits`]);
//! creation, grouped, in [`create`]; fork in [`links`]; what losing a calendar does to its
//! events in [`visibility`]; the frames in `frames`. Each records the visibility losses
//! delta reads need, queues change notifications in the same transaction, and sends
//! per-reader frames after commit: `event_created` / `event_updated` with the reader's own
//! calendars, `event_removed` to whoever can no longer see the event.

pub mod create;
pub mod edits;
mod frames;
pub mod links;
pub mod publishing;
pub mod readers;
pub mod visibility;

use std::collections::BTreeSet;

use crate::store::{Connection, WriteTxn};
use chrono::{DateTime, Utc};
use entities::events;
use serde_json::json;

use super::not_allowed;
use super::{calendar_gone, retry_transient};
use crate::commands::Services;
use crate::domain::events::{ChangeNews, EventInput};
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::domain::roles::Action;
use crate::error::AppError;
use crate::store::events::history as event_history;
use crate::store::events::{self as event_store, RaceLost};
use crate::store::{attendance, db_errors, notifications};
use crate::views::events::{DeletedEventView, EventView};
use edits::EditBatch;
pub use frames::{add_event, add_removed, send_event, send_removed};
use readers::{Readers, lost_readers};

fn event_not_found() -> AppError {
    AppError::not_found("Event not found...")
}

/// What an event write that lost a race means to its caller
/// ([`crate::store::events::race_lost`]): a calendar or user deleted meanwhile is a 403 (as
/// a check a moment later would have said), the event deleted meanwhile a 404, a row
/// written meanwhile a 409 (try again). None of them is a 500; any other error passes
/// through.
pub fn refuse_constraint(err: AppError) -> AppError {
    let Some(lost) = db_errors::database_cause(&err).and_then(event_store::race_lost) else {
        return err;
    };
    tracing::warn!(race = ?lost, "event.write.race_lost");
    match lost {
        RaceLost::CalendarGone => calendar_gone(),
        RaceLost::UserGone => AppError::forbidden("A user this change refers to no longer exists."),
        RaceLost::EventGone => event_not_found(),
        RaceLost::KeyTaken => AppError::Conflict {
            error: "EVENT_CONFLICT".into(),
            message: "The event changed at the same time. Try again.".into(),
            current: None,
        },
    }
}

/// Replaces an event's content and its calendar list, as one edit of `batch`: links added
/// or removed need editEvents there; links into calendars the actor is not a member of
/// stay. With `base_revision` (the revision the client last saw) older than the current
/// one, it changes nothing and answers 409 `EVENT_CONFLICT` with the current event as
/// `current`.
async fn update(
    txn: &WriteTxn,
    services: &Services,
    batch: &mut EditBatch,
    actor: &UserId,
    input: &EventInput,
    base_revision: Option<i64>,
) -> Result<EventView, AppError> {
    let (event, existing) = batch.live(input.id)?;
    let memberships = &batch.memberships;
    // Every calendar the update touches.
    let touched: Vec<CalendarId> = existing
        .iter()
        .chain(&input.calendars)
        .chain(event.origin_calendar_id.as_ref())
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !memberships.may_edit(&event, &existing, actor) {
        return Err(AppError::forbidden("You can't edit this event."));
    }
    if let Some(base) = base_revision
        && base != event.revision
    {
        let mine = memberships
            .readers(&existing)
            .remove(actor)
            .unwrap_or_default();
        let current = serde_json::to_value(EventView::new(&event, mine)).ok();
        return Err(AppError::Conflict {
            error: "EVENT_CONFLICT".into(),
            message: "Event changed on another device.".into(),
            current,
        });
    }
    if input.calendars.is_empty() {
        return Err(AppError::bad_request(
            "Event needs at least one calendar...",
        ));
    }
    if let Some(home) = event.origin_calendar_id
        && !input.calendars.contains(&home)
    {
        return Err(AppError::bad_request(
            "originCalendarID must be one of the event's calendars...",
        ));
    }
    // Links into calendars the actor is not a member of are not theirs to see or change:
    // leaving them out of the body (as a client that puts back what it read does) keeps
    // them. Removing a link the actor can see needs editEvents there, like adding one.
    let mine = memberships.roles(actor, &touched);
    let may_edit_in = |c: &CalendarId| mine.get(c).is_some_and(|r| r.allows(Action::EditEvents));
    let added: Vec<CalendarId> = input
        .calendars
        .iter()
        .filter(|c| !existing.contains(c))
        .copied()
        .collect();
    let removed: Vec<CalendarId> = existing
        .iter()
        .filter(|c| !input.calendars.contains(c) && mine.contains_key(c))
        .copied()
        .collect();
    if !added.iter().all(may_edit_in) {
        return Err(not_allowed(Action::EditEvents));
    }
    if !removed.iter().all(may_edit_in) {
        return Err(AppError::forbidden(
            "You can't remove this event from that calendar.",
        ));
    }
    let before = memberships.readers(&existing);
    let now = batch.now;
    let news = ChangeNews::of(
        (event.start, event.end, event.is_canceled),
        (input.start, input.end, input.is_canceled),
    );
    let previous_start = event.start;
    let updated = event_store::update_content(txn, event, input, now).await?;
    event_store::add_links(txn, updated.id, &added, actor, now).await?;
    event_store::remove_links(txn, updated.id, &removed).await?;
    // The links as `links` would read them now: the kept ones in their order, then the new
    // ones (linked at this write's time) by calendar id.
    let mut new_links = added.clone();
    new_links.sort_unstable();
    let links: Vec<CalendarId> = existing
        .iter()
        .filter(|c| !removed.contains(c))
        .chain(&new_links)
        .copied()
        .collect();
    let after = memberships.readers(&links);
    let lost = lost_readers(&before, &after);
    event_history::record_losses(txn, lost.iter().copied(), updated.id, now).await?;
    if let Some(news) = news {
        let news = News {
            event: &updated,
            news,
            previous_start,
            actor,
            readers: &after,
        };
        let due = queue_news(services, txn, news, now).await?;
        batch.mail_queued(due);
    }
    add_event(
        services,
        &mut batch.frames,
        "event_updated",
        &updated,
        &after,
    );
    add_removed(services, &mut batch.frames, updated.id, lost);
    let mine = after.get(actor).cloned().unwrap_or_default();
    let view = EventView::new(&updated, mine);
    batch.wrote(updated, links);
    Ok(view)
}

/// A move or cancellation to queue for the event's attendees.
struct News<'a> {
    event: &'a events::Model,
    news: ChangeNews,
    previous_start: DateTime<Utc>,
    actor: &'a UserId,
    /// Who sees the event now.
    readers: &'a Readers,
}

/// Queues the move or cancellation for the attendees who did not decline and can still see
/// the event, except the actor.
async fn queue_news(
    services: &Services,
    txn: &impl Connection,
    news: News<'_>,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, AppError> {
    let event = news.event;
    let recipients = attendance::to_notify(txn, event.id, news.actor).await?;
    let payload = json!({
        "title": event.title,
        "start": crate::domain::time::format_timestamp(event.start),
        "end": crate::domain::time::format_timestamp(event.end),
        "isAllDay": event.is_all_day,
        "wasStart": crate::domain::time::format_timestamp(news.previous_start),
    });
    let delay = chrono::Duration::milliseconds(
        i64::try_from(services.mail_batch_delay_ms).unwrap_or(i64::MAX),
    );
    let mut earliest: Option<DateTime<Utc>> = None;
    for user in recipients
        .iter()
        .filter(|user| news.readers.contains_key(*user))
    {
        let due = notifications::queue(txn, user, news.news, event.id, payload.clone(), delay, now)
            .await?;
        earliest = Some(earliest.map_or(due, |e| e.min(due)));
    }
    Ok(earliest)
}

/// Deletes an event, or with `unlink` removes it from that one calendar, as one edit of
/// `batch`. Whoever governs the event (an editor of its home calendar; its creator once the
/// home is gone) removes it everywhere, or unlinks it from any calendar; anyone else only
/// from the calendars they may edit, and without `unlink` it leaves those. `removed` is
/// `true` when no calendar keeps it (it is tombstoned).
async fn delete(
    txn: &WriteTxn,
    services: &Services,
    batch: &mut EditBatch,
    actor: &UserId,
    event_id: EventId,
    unlink: Option<CalendarId>,
) -> Result<DeletedEventView, AppError> {
    let (event, links) = batch.live(event_id)?;
    let memberships = &batch.memberships;
    let roles = memberships.roles(actor, &links);
    let editable: Vec<CalendarId> = links
        .iter()
        .filter(|c| roles.get(c).is_some_and(|r| r.allows(Action::EditEvents)))
        .copied()
        .collect();
    let governs = match event.origin_calendar_id {
        // The home calendar governs even where the event is no longer linked into it.
        Some(home) => memberships
            .role(&home, actor)
            .is_some_and(|role| role.allows(Action::EditEvents)),
        None => event.creator_id == *actor && !roles.is_empty(),
    };
    let targets: Vec<CalendarId> = match unlink {
        Some(calendar) => {
            if !links.contains(&calendar) {
                return Err(AppError::bad_request("Event isn't in that calendar..."));
            }
            if !governs && !editable.contains(&calendar) {
                return Err(AppError::forbidden(
                    "You can't remove this event from that calendar.",
                ));
            }
            vec![calendar]
        }
        None if governs => links.clone(),
        None if editable.is_empty() => {
            return Err(AppError::forbidden(
                "You can't remove this event from any of your calendars.",
            ));
        }
        None => editable,
    };
    let remaining: Vec<CalendarId> = links
        .iter()
        .filter(|c| !targets.contains(c))
        .copied()
        .collect();
    let before = memberships.readers(&links);
    let after = memberships.readers(&remaining);
    let now = batch.now;
    let removed = remaining.is_empty();
    let event = if removed {
        notifications::drop_for_events(txn, &[event_id]).await?;
        event_store::tombstone(txn, event, now).await?
    } else {
        event_store::remove_links(txn, event_id, &targets).await?;
        event_store::touch(txn, event, now).await?
    };
    let lost = lost_readers(&before, &after);
    event_history::record_losses(txn, lost.iter().copied(), event_id, now).await?;
    add_removed(services, &mut batch.frames, event_id, lost);
    if !removed {
        add_event(services, &mut batch.frames, "event_updated", &event, &after);
    }
    batch.wrote(event, remaining.clone());
    Ok(DeletedEventView {
        id: event_id.uuid(),
        calendars: remaining.into_iter().map(CalendarId::uuid).collect(),
        removed,
        provider_delivery: None,
    })
}
