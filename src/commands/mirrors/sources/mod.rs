//! The adapters behind [`super::source::Source`]: one per provider, each turning its
//! provider's calendars and items into what the engine stores ([`super::resources`]) and the
//! engine's writes into its provider's requests.

pub mod caldav;
pub mod google;
pub mod microsoft;
pub mod vevent;

use std::collections::HashSet;

use chrono_tz::Tz;
use entities::{events, external_events};

use super::Mirrors;
use super::resources::{self, Fetched, Resource};
use super::source::{Changes, Known, RemoteCalendar, Source, SyncError, Written};
use crate::domain::providers::Provider;
use crate::error::AppError;
use caldav::CaldavSource;
use google::GoogleSource;
use microsoft::GraphSource;

/// Reads fetched items off the async runtime; unreadable ones are logged and left out (they
/// are tried again when they change).
pub(super) async fn read(
    env: &Mirrors,
    fetched: Vec<Fetched>,
    zone: Tz,
) -> Result<Vec<Resource>, AppError> {
    if fetched.is_empty() {
        return Ok(Vec::new());
    }
    let (read, unreadable) = env
        .cpu
        .run("reading remote events", move || {
            resources::read(fetched, zone)
        })
        .await?;
    for bad in &unreadable {
        tracing::warn!(reason = %bad.reason, "sync.resource_unreadable");
    }
    Ok(read)
}

/// Whether a listed item needs reading: it is not waiting for a local delete, and its tag
/// differs from the one the mirror holds (or there is none to compare).
pub(super) fn wanted(
    href: &str,
    etag: Option<&String>,
    known: &Known,
    skip: &HashSet<String>,
) -> bool {
    !skip.contains(href)
        && (etag.is_none() || known.get(href).is_none_or(|held| held.tag.as_ref() != etag))
}

/// The adapter an account needs.
pub enum AnySource<'a> {
    /// A CalDAV server.
    Caldav(CaldavSource<'a>),
    /// Google Calendar.
    Google(GoogleSource<'a>),
    /// Microsoft Graph.
    Microsoft(GraphSource<'a>),
}

/// Calls `$call` on whichever adapter `$source` holds.
macro_rules! each {
    ($source:expr, $adapter:ident => $call:expr) => {
        match $source {
            AnySource::Caldav($adapter) => $call,
            AnySource::Google($adapter) => $call,
            AnySource::Microsoft($adapter) => $call,
        }
    };
}

impl Source for AnySource<'_> {
    fn provider(&self) -> Provider {
        each!(self, source => source.provider())
    }

    async fn calendars(&self) -> Result<Vec<RemoteCalendar>, SyncError> {
        each!(self, source => source.calendars().await)
    }

    async fn changes(
        &self,
        calendar: &RemoteCalendar,
        cursor: Option<&str>,
        known: &Known,
        skip: &HashSet<String>,
    ) -> Result<Changes, SyncError> {
        each!(self, source => source.changes(calendar, cursor, known, skip).await)
    }

    async fn resource(&self, calendar_id: &str, href: &str) -> Result<Option<Resource>, SyncError> {
        each!(self, source => source.resource(calendar_id, href).await)
    }

    async fn write(
        &self,
        calendar_id: &str,
        event: &events::Model,
        existing: Option<&external_events::Model>,
    ) -> Result<Written, SyncError> {
        each!(self, source => source.write(calendar_id, event, existing).await)
    }

    async fn delete(
        &self,
        calendar_id: &str,
        href: &str,
        etag: Option<&str>,
    ) -> Result<(), SyncError> {
        each!(self, source => source.delete(calendar_id, href, etag).await)
    }

    async fn create_calendar(&self, name: &str, color: &str) -> Result<String, SyncError> {
        each!(self, source => source.create_calendar(name, color).await)
    }

    async fn update_calendar(
        &self,
        calendar_id: &str,
        name: &str,
        color: &str,
    ) -> Result<(), SyncError> {
        each!(self, source => source.update_calendar(calendar_id, name, color).await)
    }

    async fn delete_calendar(&self, calendar_id: &str) -> Result<(), SyncError> {
        each!(self, source => source.delete_calendar(calendar_id).await)
    }
}
