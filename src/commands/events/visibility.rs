//! What losing a calendar does to the events in it, inside the transaction of the calendar
//! change. Deleting a calendar deletes (tombstones) the events homed there, or linked
//! nowhere else, and unlinks the others, one revision up, so delta reads return them with
//! their remaining calendars.
//! Leaving a calendar, or being removed from it, takes the events the user saw only there
//! out of their view (visibility losses) and records a view change for those they still see
//! through another calendar. The home calendar governs its events: a member who loses it
//! also loses the links they made from its events into other calendars, and with them the
//! events, for themselves and for whoever saw them only there. All return what to tell whom
//! after commit.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::store::{Connection, WriteTxn};
use chrono::{DateTime, Utc};
use entities::events;

use super::readers::{Readers, lost_readers, readers, readers_among};
use crate::commands::Services;
use crate::domain::frames::FrameBatch;
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::error::AppError;
use crate::store::events as event_store;
use crate::store::events::history as event_history;
use crate::store::{members, notifications};

/// The frames a calendar's deletion owes, sent by [`CalendarDeletion::announce`].
#[derive(Debug, Default)]
pub struct CalendarDeletion {
    /// Events some users can no longer see, with those users (`event_removed`).
    removed: Vec<(EventId, Vec<UserId>)>,
    /// Events unlinked from the deleted calendar, with who still sees them through which
    /// calendars (`event_updated`).
    unlinked: Vec<(events::Model, Readers)>,
}

impl CalendarDeletion {
    /// Sends the frames (after commit), each user's one_statement, however many events the
    /// calendar held.
    pub fn announce(&self, services: &Services) {
        let mut batch = FrameBatch::default();
        for (event, readers) in &self.unlinked {
            super::add_event(services, &mut batch, "event_updated", event, readers);
        }
        for (event, users) in &self.removed {
            super::add_removed(services, &mut batch, *event, users.iter());
        }
        services.announce.deliver(batch);
    }
}

/// Deletes the events homed in `calendar_id` (or linked nowhere else) and unlinks the others
/// from it (before the calendar row goes), recording the losses of everyone who saw an
/// event only there.
pub async fn on_calendar_deleted(
    txn: &WriteTxn,
    calendar_id: CalendarId,
    now: DateTime<Utc>,
) -> Result<CalendarDeletion, AppError> {
    let homed: HashSet<EventId> = event_store::homed_in(txn, calendar_id)
        .await?
        .into_iter()
        .map(|e| e.id)
        .collect();
    let mut links = event_store::links_of_events_in(txn, calendar_id).await?;
    let homed_list: Vec<EventId> = homed.iter().copied().collect();
    links.extend(event_store::links_of(txn, &homed_list).await?);
    let calendars: Vec<CalendarId> = links
        .values()
        .flatten()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let members = members::ids_by_calendar(txn, &calendars).await?;
    // Deleted: the events homed here, and those linked nowhere else (nobody could see them).
    let mut doomed = homed;
    doomed.extend(
        links
            .iter()
            .filter(|(_, links)| links.iter().all(|c| *c == calendar_id))
            .map(|(event, _)| *event),
    );
    let doomed_list: Vec<EventId> = doomed.iter().copied().collect();
    let mut deletion = CalendarDeletion::default();
    let mut losses = Vec::new();
    let mut unlinked: HashMap<EventId, Readers> = HashMap::new();
    let readers_of = |links: &[CalendarId]| {
        readers_among(links, |calendar| {
            members.get(calendar).into_iter().flatten()
        })
    };
    for (event, event_links) in &links {
        let before = readers_of(event_links);
        let after = if doomed.contains(event) {
            Readers::new()
        } else {
            let remaining: Vec<CalendarId> = event_links
                .iter()
                .filter(|c| **c != calendar_id)
                .copied()
                .collect();
            readers_of(&remaining)
        };
        let lost: Vec<UserId> = lost_readers(&before, &after).into_iter().cloned().collect();
        losses.extend(lost.iter().map(|user| (user.clone(), *event)));
        if !lost.is_empty() {
            deletion.removed.push((*event, lost));
        }
        if !doomed.contains(event) {
            unlinked.insert(*event, after);
        }
    }
    event_store::tombstone_many(txn, &doomed_list, now).await?;
    notifications::drop_for_events(txn, &doomed_list).await?;
    event_history::record_loss_pairs(txn, &losses, now).await?;
    let unlinked_ids: Vec<EventId> = unlinked.keys().copied().collect();
    event_store::touch_many(txn, &unlinked_ids, now).await?;
    for event in event_store::find_live(txn, &unlinked_ids).await? {
        if let Some(readers) = unlinked.remove(&event.id) {
            deletion.unlinked.push((event, readers));
        }
    }
    deletion.unlinked.sort_by_key(|(event, _)| event.id);
    deletion.removed.sort_by_key(|(event, _)| *event);
    Ok(deletion)
}

/// `user` leaves `calendar_id` (before their membership row goes): they lose the events
/// they saw only through it, and see the others through fewer calendars. Returns the events
/// they lost (for `event_removed`).
pub async fn on_membership_lost(
    txn: &impl Connection,
    calendar_id: CalendarId,
    user: &UserId,
    now: DateTime<Utc>,
) -> Result<Vec<EventId>, AppError> {
    let links = event_store::links_of_events_in(txn, calendar_id).await?;
    let mine = members::calendars_of(txn, user).await?;
    let mut lost = Vec::new();
    let mut changed = Vec::new();
    for (event, links) in &links {
        let still_seen = links.iter().any(|c| *c != calendar_id && mine.contains(c));
        if still_seen {
            changed.push((user.to_owned(), *event));
        } else {
            lost.push(*event);
        }
    }
    lost.sort();
    let losses: Vec<(UserId, EventId)> = lost.iter().map(|e| (user.clone(), *e)).collect();
    event_history::record_loss_pairs(txn, &losses, now).await?;
    event_history::record_view_changes(txn, &changed, now).await?;
    Ok(lost)
}

/// The links a member's departure from an event's home calendar undid, sent by
/// [`LinksUndone::announce`].
#[derive(Debug, Default)]
pub struct LinksUndone {
    /// Each event unlinked, who still sees it (`event_updated`), and who no longer does
    /// (`event_removed`).
    changed: Vec<(events::Model, Readers, Vec<UserId>)>,
}

impl LinksUndone {
    /// Sends the frames (after commit), each user's together.
    pub fn announce(&self, services: &Services) {
        let mut batch = FrameBatch::default();
        for (event, readers, lost) in &self.changed {
            super::add_event(services, &mut batch, "event_updated", event, readers);
            super::add_removed(services, &mut batch, event.id, lost.iter());
        }
        services.announce.deliver(batch);
    }
}

/// `user` is no longer a member of `home` (after their membership row went): the links they
/// made from events homed there into other calendars are removed, each event one revision
/// up, with the losses of everyone who saw it only through them.
pub async fn on_home_membership_lost(
    txn: &WriteTxn,
    home: CalendarId,
    user: &UserId,
    now: DateTime<Utc>,
) -> Result<LinksUndone, AppError> {
    let made = event_store::links_made_from(txn, home, user).await?;
    let mut undone = LinksUndone::default();
    let mut losses = Vec::new();
    for (event_id, unlinked) in made {
        let Some(event) = event_store::lock(txn, event_id).await? else {
            continue;
        };
        let links = event_store::links(txn, event_id).await?;
        let remaining: Vec<CalendarId> = links
            .iter()
            .filter(|c| !unlinked.contains(c))
            .copied()
            .collect();
        let before = readers(txn, &links).await?;
        let after = readers(txn, &remaining).await?;
        event_store::remove_links(txn, event_id, &unlinked).await?;
        let event = event_store::touch(txn, event, now).await?;
        let lost: Vec<UserId> = lost_readers(&before, &after).into_iter().cloned().collect();
        losses.extend(lost.iter().map(|reader| (reader.clone(), event_id)));
        undone.changed.push((event, after, lost));
    }
    event_history::record_loss_pairs(txn, &losses, now).await?;
    Ok(undone)
}
