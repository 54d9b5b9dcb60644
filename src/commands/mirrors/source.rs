//! [`Source`]: a connected account's calendars at its provider, as the sync engine reads and
//! writes them, whichever provider it is. The engine ([`super::pull`], [`super::deliver`],
//! [`super::calendars`]) is written once against this trait; each provider has an adapter in
//! [`super::sources`] (CalDAV, Google Calendar, Microsoft Graph), and
//! [`super::sources::AnySource`] is whichever one an account needs.
//!
//! Items are addressed by their provider's own names: a calendar by `RemoteCalendar::id` (a
//! CalDAV collection URL, a Google calendar id, a Graph calendar id), an item by its `href`
//! (a CalDAV object URL, a Google or Graph event id). Entity tags are opaque to the engine:
//! it stores what an adapter gives and hands it back for conditional writes.

use std::collections::{HashMap, HashSet};
use std::future::Future;

use chrono::{DateTime, Utc};
use entities::{events, external_events};

use super::resources::Resource;
use crate::domain::providers::Provider;
use crate::error::AppError;
use crate::providers::ProviderError;

/// Why a sync step failed.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The provider failed or refused.
    #[error("{0}")]
    Remote(#[from] ProviderError),
    /// Bowline failed.
    #[error("{0}")]
    Local(#[from] AppError),
}

impl From<crate::store::DbErr> for SyncError {
    fn from(err: crate::store::DbErr) -> Self {
        Self::Local(err.into())
    }
}

/// A calendar at the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteCalendar {
    /// The provider's id for it.
    pub id: String,
    /// Its name there.
    pub name: Option<String>,
    /// Its colour there (`#rrggbb…`).
    pub color: Option<String>,
    /// The account may not write to it.
    pub read_only: bool,
    /// A tag that changes whenever its events change (CalDAV's sync token or ctag), where
    /// the provider has one: when it equals the mirror's cursor there is nothing to pull.
    pub version: Option<String>,
}

/// What changed in a remote calendar since a cursor.
#[derive(Debug, Default)]
pub struct Changes {
    /// Resources added or changed, read.
    pub resources: Vec<Resource>,
    /// Resources gone (only ones the mirror knows).
    pub removed: Vec<String>,
    /// Where the next pull starts.
    pub cursor: Option<String>,
}

/// Where a written event now lives at the provider.
#[derive(Debug, Clone)]
pub struct Written {
    /// The item.
    pub href: String,
    /// Its new entity tag.
    pub etag: Option<String>,
    /// Its UID.
    pub uid: Option<String>,
}

/// What the mirror holds of one resource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownItem {
    /// Its tag when it was last read or written.
    pub tag: Option<String>,
    /// The time its events span here (earliest start, latest end), as stored.
    pub span: Option<(DateTime<Utc>, DateTime<Utc>)>,
}

/// The mirror's resources (href → what it holds of each), as a pull compares them.
pub type Known = HashMap<String, KnownItem>;

/// A connected account's calendars at its provider.
pub trait Source: Sync {
    /// The provider.
    fn provider(&self) -> Provider;

    /// The account's calendars that hold events.
    fn calendars(&self) -> impl Future<Output = Result<Vec<RemoteCalendar>, SyncError>> + Send;

    /// What changed in `calendar` since `cursor` (`None`: everything, and whatever the
    /// mirror knows but the provider no longer lists is in `removed`). `known` holds the
    /// mirror's resources and tags, so unchanged ones are not read again; resources in
    /// `skip` have a local delete still to deliver and are left out.
    fn changes(
        &self,
        calendar: &RemoteCalendar,
        cursor: Option<&str>,
        known: &Known,
        skip: &HashSet<String>,
    ) -> impl Future<Output = Result<Changes, SyncError>> + Send;

    /// The resource `href` of calendar `calendar_id` as the provider holds it now (`None`:
    /// gone).
    fn resource(
        &self,
        calendar_id: &str,
        href: &str,
    ) -> impl Future<Output = Result<Option<Resource>, SyncError>> + Send;

    /// Writes `event` into calendar `calendar_id`: over `existing` (conditionally on its
    /// tag), or as a new item. An item that is there already because an earlier attempt got
    /// through unrecorded is adopted and written over.
    fn write(
        &self,
        calendar_id: &str,
        event: &events::Model,
        existing: Option<&external_events::Model>,
    ) -> impl Future<Output = Result<Written, SyncError>> + Send;

    /// Deletes item `href` of calendar `calendar_id` if its tag is still `etag`; one already
    /// gone is not an error.
    fn delete(
        &self,
        calendar_id: &str,
        href: &str,
        etag: Option<&str>,
    ) -> impl Future<Output = Result<(), SyncError>> + Send;

    /// Creates a calendar; its id.
    fn create_calendar(
        &self,
        name: &str,
        color: &str,
    ) -> impl Future<Output = Result<String, SyncError>> + Send;

    /// Renames and recolours a calendar (as far as the provider keeps colours).
    fn update_calendar(
        &self,
        calendar_id: &str,
        name: &str,
        color: &str,
    ) -> impl Future<Output = Result<(), SyncError>> + Send;

    /// Deletes a calendar.
    fn delete_calendar(
        &self,
        calendar_id: &str,
    ) -> impl Future<Output = Result<(), SyncError>> + Send;
}
