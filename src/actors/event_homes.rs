//! [`EventHomes`]: the home calendars of a server's recently written events, so that an
//! edit's route need not read its event's home from the database before asking that
//! calendar's actor ([`super::Shared::ask_event_home`]).
//!
//! It holds only homes recorded at an event's creation, which never change: an entry is
//! right for as long as the event lives, on this server and on any other sharing its
//! database, and one for an event deleted since sends its next command to the actor that
//! refuses it. Events with no recorded home (governed by the first calendar they are in,
//! which their links change) are never remembered.
//!
//! It holds at most twice [`GENERATION`] events: when the newer of its two generations is
//! full, the older is dropped and the newer takes its place, so the events written or read
//! most recently stay and the memory it holds is bounded whatever the traffic.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::domain::ids::{CalendarId, EventId};

/// Events per generation (two are kept: about 0.6 MiB at most). A mixed run of 50 writers
/// edits the newest few dozen events of each calendar, created within the last seconds.
const GENERATION: usize = 4_096;

/// The remembered homes of one server's events.
#[derive(Debug, Default)]
pub struct EventHomes {
    inner: Mutex<Generations>,
}

#[derive(Debug, Default)]
struct Generations {
    newer: HashMap<EventId, CalendarId>,
    older: HashMap<EventId, CalendarId>,
}

impl EventHomes {
    /// The home last remembered for `event`.
    pub fn get(&self, event: EventId) -> Option<CalendarId> {
        let mut inner = self.inner.lock();
        if let Some(home) = inner.newer.get(&event) {
            return Some(*home);
        }
        // Read again: it moves to the newer generation, so it outlives the older one.
        let home = inner.older.remove(&event)?;
        inner.insert(event, home);
        Some(home)
    }

    /// Remembers `home` as `event`'s recorded home.
    pub fn remember(&self, event: EventId, home: CalendarId) {
        self.inner.lock().insert(event, home);
    }

    /// Forgets `event` (deleted).
    pub fn forget(&self, event: EventId) {
        let mut inner = self.inner.lock();
        inner.newer.remove(&event);
        inner.older.remove(&event);
    }
}

impl Generations {
    fn insert(&mut self, event: EventId, home: CalendarId) {
        if self.newer.len() >= GENERATION && !self.newer.contains_key(&event) {
            self.older = std::mem::take(&mut self.newer);
        }
        self.older.remove(&event);
        self.newer.insert(event, home);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn event() -> EventId {
        EventId::from_uuid(uuid::Uuid::new_v4())
    }

    fn calendar() -> CalendarId {
        CalendarId::from_uuid(uuid::Uuid::new_v4())
    }

    #[test]
    fn remembers_replaces_and_forgets_a_home() {
        let homes = EventHomes::default();
        let (id, first, second) = (event(), calendar(), calendar());
        assert_eq!(homes.get(id), None);
        homes.remember(id, first);
        assert_eq!(homes.get(id), Some(first));
        homes.remember(id, second);
        assert_eq!(homes.get(id), Some(second));
        homes.forget(id);
        assert_eq!(homes.get(id), None);
    }

    #[test]
    fn holds_at_most_two_generations_and_keeps_what_was_read_lately() {
        let homes = EventHomes::default();
        let home = calendar();
        let oldest = event();
        let read_again = event();
        homes.remember(oldest, home);
        homes.remember(read_again, home);
        for _ in 2..GENERATION {
            homes.remember(event(), home);
        }
        // The first generation is full: the next event starts the second.
        homes.remember(event(), home);
        assert_eq!(
            homes.get(read_again),
            Some(home),
            "read: moves to the newer"
        );
        for _ in 2..GENERATION {
            homes.remember(event(), home);
        }
        // The second is full too: the first goes, but what was read from it stays.
        homes.remember(event(), home);
        assert_eq!(homes.get(oldest), None);
        assert_eq!(homes.get(read_again), Some(home));
        let inner = homes.inner.lock();
        assert!(inner.newer.len() + inner.older.len() <= 2 * GENERATION);
    }
}
