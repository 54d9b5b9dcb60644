//! The frames an event change sends after commit: `event_created` / `event_updated` to its
//! readers (one encoding per distinct list of calendars they see it through) and
//! `event_removed` to those who lost it, broadcast at once or gathered in a
//! [`FrameBatch`] by a change that owes many.

use std::collections::BTreeMap;

use entities::events;
use serde_json::json;

use super::readers::Readers;
use crate::commands::Services;
use crate::domain::frames::{Frame, FrameBatch};
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::views::events::EventView;

/// Sends `kind` (`event_created` / `event_updated`) to every reader with their calendars:
/// encoded once per distinct list of calendars, for the readers with an open stream only.
pub fn send_event(
    services: &Services,
    kind: &'static str,
    event: &events::Model,
    readers: &Readers,
) {
    for (users, frame) in event_frames(services, kind, event, readers) {
        services.broadcast(users, &frame);
    }
}

/// Adds what [`send_event`] sends to `batch`, for a change that owes many frames.
pub fn add_event(
    services: &Services,
    batch: &mut FrameBatch,
    kind: &'static str,
    event: &events::Model,
    readers: &Readers,
) {
    for (users, frame) in event_frames(services, kind, event, readers) {
        batch.add(users, &frame);
    }
}

/// The frames of `kind` for `event`, one per distinct list of calendars, with the readers
/// (those with an open stream) who get each.
fn event_frames<'r>(
    services: &Services,
    kind: &'static str,
    event: &events::Model,
    readers: &'r Readers,
) -> Vec<(Vec<&'r UserId>, Frame)> {
    let sessions = &services.announce;
    let mut by_view: BTreeMap<&Vec<CalendarId>, Vec<&UserId>> = BTreeMap::new();
    for (user, calendars) in readers {
        if sessions.is_connected(user) {
            by_view.entry(calendars).or_default().push(user);
        }
    }
    by_view
        .into_iter()
        .filter_map(|(calendars, users)| {
            match Frame::of(kind, &EventView::new(event, calendars.clone())) {
                Ok(frame) => Some((users, frame)),
                Err(err) => {
                    tracing::error!(error = %err, "frame.encode_failed");
                    None
                }
            }
        })
        .collect()
}

/// Sends `event_removed` to users who can no longer see the event.
pub fn send_removed<'a>(
    services: &Services,
    event_id: EventId,
    users: impl IntoIterator<Item = &'a UserId>,
) {
    services.broadcast(users, &removed_frame(event_id));
}

/// Adds what [`send_removed`] sends to `batch` (for the users with an open stream).
pub fn add_removed<'a>(
    services: &Services,
    batch: &mut FrameBatch,
    event_id: EventId,
    users: impl IntoIterator<Item = &'a UserId>,
) {
    let sessions = &services.announce;
    let connected: Vec<&UserId> = users
        .into_iter()
        .filter(|user| sessions.is_connected(user))
        .collect();
    if !connected.is_empty() {
        batch.add(connected, &removed_frame(event_id));
    }
}

/// `event_removed` for `event_id`.
fn removed_frame(event_id: EventId) -> Frame {
    Frame::new(
        "event_removed",
        json!({ "id": event_id, "calendars": [], "removed": true }),
    )
}
