//! Which remote resource each local event of a mirror belongs to.

use ids::{CalendarId, EventId};
use sea_orm::entity::prelude::*;

/// A local event's place at the provider.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "external_events")]
pub struct Model {
    /// The mirror calendar.
    #[sea_orm(primary_key, auto_increment = false)]
    pub calendar_id: CalendarId,
    /// The local event.
    #[sea_orm(primary_key, auto_increment = false)]
    pub event_id: EventId,
    /// The remote resource (a CalDAV object URL).
    pub remote_href: String,
    /// The event's place among the resource's events (0: the series or the only one).
    pub position: i32,
    /// The resource's entity tag when last read or written.
    pub etag: Option<String>,
    /// The resource's UID.
    pub uid: Option<String>,
    /// Last changed.
    pub updated_at: DateTimeUtc,
}

/// `external_events` relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
