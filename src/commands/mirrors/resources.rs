//! Remote resources read into the events Bowline stores for them.

use chrono_tz::Tz;

use crate::ical::{ImportOptions, ImportedEvent, parse_calendar};
use crate::providers::caldav::RemoteObject;

/// One remote resource, read.
#[derive(Debug, Clone)]
pub struct Resource {
    /// Where it lives (a CalDAV object URL).
    pub href: String,
    /// Its entity tag as the server gave it.
    pub etag: Option<String>,
    /// Its UID.
    pub uid: Option<String>,
    /// The events it holds (the series first, then its edited occurrences), as the
    /// importer reads them.
    pub events: Vec<ImportedEvent>,
}

/// A resource that could not be read (it is left as it was and tried again next time).
#[derive(Debug, Clone)]
pub struct Unreadable {
    /// Where it lives.
    pub href: String,
    /// Why.
    pub reason: String,
}

/// Reads fetched objects (CPU-bound: run it off the async runtime). Floating times are
/// read in `zone`, the account owner's.
pub fn read(objects: Vec<RemoteObject>, zone: Tz) -> (Vec<Resource>, Vec<Unreadable>) {
    let options = ImportOptions { user_zone: zone };
    let mut read = Vec::with_capacity(objects.len());
    let mut unreadable = Vec::new();
    for object in objects {
        let href = object.url.to_string();
        match parse_calendar(object.data.as_bytes(), &options) {
            Ok(parsed) => read.push(Resource {
                href,
                etag: object.etag,
                uid: parsed.uid,
                events: parsed.events,
            }),
            Err(err) => unreadable.push(Unreadable {
                href,
                reason: err.to_string(),
            }),
        }
    }
    (read, unreadable)
}
