//! The JSON documents clients read, shared by HTTP responses and realtime frames (built
//! from store models here, never by serializing an entity).

pub mod calendars;
pub mod event_list;
pub mod events;
pub mod page_config;
pub mod pages;
pub mod schemas;
pub mod settings;

use chrono::{DateTime, Utc};
use serde::Serializer;

/// Serializes a timestamp the wire way (milliseconds, `Z`).
pub fn timestamp<S: Serializer>(at: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&crate::domain::time::format_timestamp(*at))
}

/// Serializes an optional timestamp the wire way.
pub fn optional_timestamp<S: Serializer>(
    at: &Option<DateTime<Utc>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => timestamp(at, serializer),
        None => serializer.serialize_none(),
    }
}
