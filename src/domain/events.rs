//! Event input validation and the rules around events that need no database: the shape of
//! an Event body, attendance statuses, what counts as news for change notifications, and
//! the time bound of event writes.

use std::time::Duration;

use super::ids::{CalendarId, EventId};
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::event_content::{EventContent, event_content_of};
use super::event_fields::event_fields;
use crate::error::AppError;

/// A write transaction that changes events must commit within this long of taking its
/// timestamp, or it rolls back: until it ends, delta reads' `serverTime` stays before its
/// timestamp, so this bounds how long one write can hold every delta read back. The
/// locks a batch of creations' role check takes in the database are held to it there.
pub const WRITE_BOUND: Duration = Duration::from_secs(5);
/// 409 for an event id that exists already (ids are chosen by clients).
pub fn event_exists() -> AppError {
    AppError::Conflict {
        error: "EVENT_EXISTS".into(),
        message: "An event with this id already exists.".into(),
        current: None,
    }
}

/// The longest range a range read may ask for (3 × 366 days).
pub const MAX_RANGE_DAYS: i64 = 3 * 366;

/// Writes [`EventInput`] with the content fields of [`event_fields!`].
macro_rules! event_input {
    ($($name:ident: [$($ty:tt)*] $kind:ident $wire:literal $doc:literal,)*) => {
        /// A validated Event body.
        #[derive(Debug, Clone, PartialEq)]
        pub struct EventInput {
            /// Client-chosen id.
            pub id: EventId,
            /// Linked calendars, in the client's order, without duplicates.
            pub calendars: Vec<CalendarId>,
            /// Home calendar as sent (checked against `calendars`).
            pub origin_calendar_id: Option<CalendarId>,
            $(
                #[doc = $doc]
                pub $name: $($ty)*,
            )*
        }
    };
}

event_fields!(event_input {});

/// An update: the validated event and the revision the client last saw.
#[derive(Debug)]
pub struct EventUpdate {
    /// The event.
    pub input: EventInput,
    /// The revision the client last saw, if it sent one (clients that do not send it
    /// overwrite whatever is current).
    pub base_revision: Option<i64>,
}

impl EventInput {
    /// The stored fields, to check.
    pub fn content(&self) -> EventContent<'_> {
        event_content_of!(self)
    }

    /// The rules of a create: at least one calendar; the home calendar (by default the
    /// first) must be one of them. Returns the home calendar.
    pub fn home_for_create(&self) -> Result<CalendarId, AppError> {
        let first = *self
            .calendars
            .first()
            .ok_or_else(|| AppError::bad_request("Event needs at least one calendar..."))?;
        let home = self.origin_calendar_id.unwrap_or(first);
        if !self.calendars.contains(&home) {
            return Err(AppError::bad_request(
                "originCalendarID must be one of the event's calendars...",
            ));
        }
        Ok(home)
    }
}

/// An attendance answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Attendance {
    /// Going.
    Going,
    /// Maybe.
    Maybe,
    /// Declined.
    Declined,
    /// No answer (the row is removed).
    None,
}

impl Attendance {
    /// Parses `going`, `maybe`, `declined`, `none`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "going" => Some(Self::Going),
            "maybe" => Some(Self::Maybe),
            "declined" => Some(Self::Declined),
            "none" => Some(Self::None),
            _ => None,
        }
    }

    /// The stored status (`None` has none).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Going => "going",
            Self::Maybe => "maybe",
            Self::Declined => "declined",
            Self::None => "none",
        }
    }
}

/// What a change means to the people attending an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeNews {
    /// Its start or end moved.
    Moved,
    /// It was cancelled.
    Cancelled,
}

impl ChangeNews {
    /// The stored kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Moved => "moved",
            Self::Cancelled => "cancelled",
        }
    }

    /// The news of a change from `before` to `after` (start, end, cancelled): only a move or
    /// a cancellation counts; editing a cancelled event and un-cancelling are silent.
    pub fn of(
        before: (DateTime<Utc>, DateTime<Utc>, bool),
        after: (DateTime<Utc>, DateTime<Utc>, bool),
    ) -> Option<Self> {
        let (start_before, end_before, cancelled_before) = before;
        let (start_after, end_after, cancelled_after) = after;
        if !cancelled_before && cancelled_after {
            Some(Self::Cancelled)
        } else if !cancelled_after && (start_before != start_after || end_before != end_after) {
            Some(Self::Moved)
        } else {
            None
        }
    }
}
#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn what_counts_as_news() {
        let t = |h| {
            chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 7, 23, h, 0, 0)
                .single()
                .expect("t")
        };
        assert_eq!(
            ChangeNews::of((t(9), t(10), false), (t(9), t(10), false)),
            None
        );
        assert_eq!(
            ChangeNews::of((t(9), t(10), false), (t(11), t(12), false)),
            Some(ChangeNews::Moved)
        );
        assert_eq!(
            ChangeNews::of((t(9), t(10), false), (t(9), t(11), false)),
            Some(ChangeNews::Moved)
        );
        assert_eq!(
            ChangeNews::of((t(9), t(10), false), (t(9), t(10), true)),
            Some(ChangeNews::Cancelled)
        );
        assert_eq!(
            ChangeNews::of((t(9), t(10), true), (t(11), t(12), true)),
            None
        );
        assert_eq!(
            ChangeNews::of((t(9), t(10), true), (t(9), t(10), false)),
            None
        );
    }
}
