//! Writing what a pull read into a mirror: the difference between the remote resources and
//! the events the mirror holds for them, in the caller's transaction.
//!
//! A resource's events are matched to the mirror's by their place in the resource (the
//! series first, then its edited occurrences): same place, same local event, so an edit at
//! the provider keeps the event's id and raises its revision. A resource whose entity tag
//! is unchanged is skipped without a write; an event whose content is unchanged is not
//! written. Events the provider no longer has are tombstoned (or, if they belong to
//! another calendar and were only linked into the mirror, unlinked from it), and every
//! member who loses sight of one has it in their next delta read's `deletedIds`.

use std::collections::{HashMap, HashSet};

use crate::store::{DbErr, WriteTxn};
use chrono::{DateTime, Utc};
use entities::{calendars, events, external_events};

use super::resources::Resource;
use crate::domain::events::EventInput;
use crate::domain::ids::{EventId, UserId};
use crate::ical::ImportedEvent;
use crate::store::events::{self as event_store, history, inserts};
use crate::store::{members, mirrors};

/// A mirror being written to: its calendar and the user who owns the account.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The local calendar.
    pub calendar: &'a calendars::Model,
    /// The account's owner (creator and organizer of the events read from it).
    pub owner: &'a UserId,
}

/// Writes `resources` (read now) and `removed` (hrefs gone at the provider) into the
/// mirror. Returns whether anything changed.
pub async fn apply(
    txn: &WriteTxn,
    target: Target<'_>,
    resources: &[Resource],
    removed: &[String],
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let calendar_id = target.calendar.id;
    let known = mirrors::resources_of(txn, calendar_id).await?;
    let members = members::member_ids(txn, calendar_id).await?;
    let mut changed = false;
    let mut inserts: Vec<(EventInput, EventId)> = Vec::new();
    for resource in resources {
        let old = known
            .get(&resource.href)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let unchanged = !old.is_empty()
            && resource.etag.is_some()
            && old.iter().all(|row| row.etag == resource.etag)
            && old.len() == resource.events.len();
        if unchanged {
            continue;
        }
        let ids: Vec<EventId> = old.iter().map(|row| row.event_id).collect();
        let live: HashMap<EventId, events::Model> = event_store::find_live(txn, &ids)
            .await?
            .into_iter()
            .map(|event| (event.id, event))
            .collect();
        let mut rows = Vec::with_capacity(resource.events.len());
        for (position, imported) in resource.events.iter().enumerate() {
            let existing = old.get(position).and_then(|row| live.get(&row.event_id));
            let event_id = match existing {
                Some(event) => {
                    if differs(event, imported) {
                        let input = input_for(event.id, imported, target, &event.color);
                        event_store::update_content(txn, event.clone(), &input, now).await?;
                        changed = true;
                    }
                    event.id
                }
                None => {
                    let id = EventId::generate();
                    let input = input_for(id, imported, target, &target.calendar.color);
                    inserts.push((input, id));
                    changed = true;
                    id
                }
            };
            rows.push(external_events::Model {
                calendar_id,
                event_id,
                remote_href: resource.href.clone(),
                position: i32::try_from(position).unwrap_or(i32::MAX),
                etag: resource.etag.clone(),
                uid: resource.uid.clone(),
                updated_at: now,
            });
        }
        let kept: HashSet<EventId> = rows.iter().map(|row| row.event_id).collect();
        for row in old.iter().filter(|row| !kept.contains(&row.event_id)) {
            if let Some(event) = live.get(&row.event_id) {
                remove(txn, target, event.clone(), &members, now).await?;
                changed = true;
            }
        }
        insert(txn, target, &mut inserts, now).await?;
        mirrors::replace_resource(txn, calendar_id, &resource.href, rows).await?;
    }
    for href in removed {
        let Some(old) = known.get(href) else {
            continue;
        };
        let ids: Vec<EventId> = old.iter().map(|row| row.event_id).collect();
        for event in event_store::find_live(txn, &ids).await? {
            remove(txn, target, event, &members, now).await?;
            changed = true;
        }
        mirrors::forget_resource(txn, calendar_id, href).await?;
    }
    Ok(changed)
}

/// Inserts the new events gathered so far, homed in and linked into the mirror.
async fn insert(
    txn: &WriteTxn,
    target: Target<'_>,
    pending: &mut Vec<(EventInput, EventId)>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    if pending.is_empty() {
        return Ok(());
    }
    let new: Vec<inserts::NewEvent<'_>> = pending
        .iter()
        .map(|(input, _)| inserts::NewEvent {
            input,
            creator: target.owner,
            home: target.calendar.id,
        })
        .collect();
    inserts::insert_many(txn, &new, now)
        .await
        .map_err(|err| match err {
            inserts::InsertEventError::Database(err) => err,
            other => DbErr::Custom(other.to_string()),
        })?;
    pending.clear();
    Ok(())
}

/// Takes an event out of the mirror: tombstoned when the mirror is its home, otherwise
/// unlinked from the mirror.
async fn remove(
    txn: &WriteTxn,
    target: Target<'_>,
    event: events::Model,
    members: &[UserId],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let id = event.id;
    if event.origin_calendar_id == Some(target.calendar.id) {
        event_store::tombstone(txn, event, now).await?;
    } else {
        event_store::remove_links(txn, id, &[target.calendar.id]).await?;
        event_store::touch(txn, event, now).await?;
    }
    history::record_losses(txn, members, id, now).await
}

/// Whether the stored event differs from what the provider holds.
fn differs(event: &events::Model, imported: &ImportedEvent) -> bool {
    event.title != imported.title
        || event.start != imported.start
        || event.end != imported.end
        || event.is_all_day != imported.is_all_day
        || event.is_canceled != imported.is_canceled
        || event.description != imported.description
        || event.location != imported.location
        || event.recurrence != imported.recurrence
        || event.url != imported.url
}

/// The event as the store writes it: the provider's content, the owner as organizer, the
/// given colour.
fn input_for(id: EventId, imported: &ImportedEvent, target: Target<'_>, color: &str) -> EventInput {
    EventInput {
        id,
        organizer: target.owner.as_str().to_owned(),
        title: imported.title.clone(),
        color: color.to_owned(),
        start: imported.start,
        end: imported.end,
        calendars: vec![target.calendar.id],
        origin_calendar_id: Some(target.calendar.id),
        is_canceled: imported.is_canceled,
        is_all_day: imported.is_all_day,
        has_attendees: false,
        description: imported.description.clone(),
        location: imported.location.clone(),
        recurrence: imported.recurrence.clone(),
        url: imported.url.clone(),
    }
}
