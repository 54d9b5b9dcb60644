//! Remote resources read into the events Bowline stores for them. Every provider's items
//! reach the store as iCalendar text read by the one importer: CalDAV objects as the server
//! holds them, Google and Microsoft events as the text their adapters write for them
//! ([`super::sources::vevent`]), so times, zones, recurrence and limits follow the same rules
//! whichever provider an event came from.

use chrono_tz::Tz;

use crate::ical::{ImportOptions, ImportedEvent, parse_calendar};

/// One remote resource, read.
#[derive(Debug, Clone)]
pub struct Resource {
    /// Where it lives (a CalDAV object URL, a Google or Graph event id).
    pub href: String,
    /// Its entity tag as the provider gave it.
    pub etag: Option<String>,
    /// Its UID.
    pub uid: Option<String>,
    /// The events it holds (the series first, then its edited occurrences), as the
    /// importer reads them.
    pub events: Vec<ImportedEvent>,
}

/// A resource's iCalendar text as fetched, before reading.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Where it lives.
    pub href: String,
    /// Its entity tag.
    pub etag: Option<String>,
    /// `text/calendar` holding the resource's VEVENTs.
    pub text: String,
}

/// A resource that could not be read (it is left as it was and tried again next time).
#[derive(Debug, Clone)]
pub struct Unreadable {
    /// Where it lives.
    pub href: String,
    /// Why.
    pub reason: String,
}

/// Reads fetched resources (CPU-bound: run it off the async runtime). Floating times are
/// read in `zone`, the account owner's.
pub fn read(fetched: Vec<Fetched>, zone: Tz) -> (Vec<Resource>, Vec<Unreadable>) {
    let options = ImportOptions { user_zone: zone };
    let mut read = Vec::with_capacity(fetched.len());
    let mut unreadable = Vec::new();
    for item in fetched {
        match parse_calendar(item.text.as_bytes(), &options) {
            Ok(parsed) => read.push(Resource {
                href: item.href,
                etag: item.etag,
                uid: parsed.uid,
                events: parsed.events,
            }),
            Err(err) => unreadable.push(Unreadable {
                href: item.href,
                reason: err.to_string(),
            }),
        }
    }
    (read, unreadable)
}
