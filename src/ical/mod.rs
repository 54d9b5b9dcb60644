//! iCalendar (RFC 5545) import and export.
//!
//! **We parse ourselves.** The `icalendar` crate's parser is stricter than real files (it
//! fails on a byte-order mark, on a stray line without a colon, on two VCALENDARs in one
//! file and on a missing `END:VCALENDAR` alike, reads lower-case `begin:vevent` as an unknown
//! component, keeps only the last of repeated properties and cannot say which line it
//! stopped at). A cleaning layer in front of it would have had to find components, lines and
//! names itself, which is most of a parser, so [`lexer`] is a small tolerant reader of its
//! own: linear in the input, line numbers kept for every property, and the leniency rules
//! listed in its module doc. The `icalendar` crate still serves as a strict second reader
//! of our exports in the tests.
//!
//! - [`lexer`]: bytes → components and properties (unfolding, BOM, case, junk lines).
//! - [`values`]: DATE, DATE-TIME, DURATION, UTC-OFFSET values and text unescaping.
//! - [`timezones`]: TZID → zone: IANA names, Windows names ([`windows_zones`]), the
//!   file's VTIMEZONEs.
//! - [`vtimezone`]: the file's own VTIMEZONE rules, for TZIDs nothing else knows.
//! - [`import`], [`recurrence`] and [`overrides`]: VEVENTs → [`ImportedEvent`]s, recurrence
//!   rules, RECURRENCE-ID overrides.
//! - [`export`] and [`writer`]: a calendar's events → `text/calendar`, with a VTIMEZONE
//!   built from the time-zone database for each TZID used ([`tzdb_vtimezone`]).
//!
//! Nothing here touches the database.

pub mod export;
pub mod import;
pub mod lexer;
pub mod overrides;
pub mod recurrence;
pub mod timezones;
pub mod tzdb_vtimezone;
pub mod values;
pub mod vtimezone;
pub mod windows_zones;
pub mod writer;

use chrono::{DateTime, Utc};

use crate::domain::event_content::EventContent;

pub use export::{ExportCalendar, export_calendar};
pub use import::{ImportOptions, ParsedCalendar, parse_calendar};

/// Most VEVENTs one import may hold.
pub const MAX_EVENTS: usize = 10_000;

/// An event read from a file, ready to store (ids, creator and colour are the store's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedEvent {
    /// SUMMARY (or a placeholder).
    pub title: String,
    /// Start (UTC midnight of the date for all-day events).
    pub start: DateTime<Utc>,
    /// End (the last day's midnight for all-day events; never before `start`).
    pub end: DateTime<Utc>,
    /// DTSTART was a DATE.
    pub is_all_day: bool,
    /// STATUS:CANCELLED.
    pub is_canceled: bool,
    /// DESCRIPTION.
    pub description: Option<String>,
    /// LOCATION.
    pub location: Option<String>,
    /// RRULE / RDATE / EXDATE lines in Bowline's stored form (UTC instants).
    pub recurrence: Option<String>,
    /// URL.
    pub url: Option<String>,
}

impl ImportedEvent {
    /// The fields the domain's event rules check (organizer and colour are the importer's
    /// and the calendar's, checked where they are chosen).
    pub fn content(&self) -> EventContent<'_> {
        EventContent {
            title: &self.title,
            organizer: "",
            color: "",
            start: self.start,
            end: self.end,
            description: self.description.as_deref(),
            location: self.location.as_deref(),
            recurrence: self.recurrence.as_deref(),
            url: self.url.as_deref(),
        }
    }
}

/// Why a file could not be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IcsError {
    /// Something at `line` cannot be read.
    #[error("line {line}: {reason}")]
    Unreadable {
        /// 1-based line in the file.
        line: usize,
        /// What is wrong there.
        reason: String,
    },
    /// More than [`MAX_EVENTS`] VEVENTs.
    #[error("more than {MAX_EVENTS} VEVENTs")]
    TooManyEvents,
}

impl IcsError {
    /// An unreadable-line error.
    pub fn at(line: usize, reason: impl Into<String>) -> Self {
        Self::Unreadable {
            line,
            reason: reason.into(),
        }
    }

    /// The line the error names, if any.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::Unreadable { line, .. } => Some(*line),
            Self::TooManyEvents => None,
        }
    }
}
