//! An event; its `id` is chosen by the client. Deleted events stay as tombstones
//! (`deleted_at`) for delta reads.

use ids::{CalendarId, EventId, UserId};
use sea_orm::entity::prelude::*;

/// An event (its `Default` is for tests: a nil id, empty texts, the epoch).
#[derive(Clone, Debug, Default, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "events")]
pub struct Model {
    /// Client-chosen UUID.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: EventId,
    /// Creator (set by the server).
    pub creator_id: UserId,
    /// Free-text organizer.
    pub organizer: String,
    /// Title.
    pub title: String,
    /// Colour.
    pub color: String,
    /// Start instant (UTC midnight of the day for all-day events).
    pub start: DateTimeUtc,
    /// End instant (the last day's midnight for all-day events).
    pub end: DateTimeUtc,
    /// All-day event.
    pub is_all_day: bool,
    /// Cancelled.
    pub is_canceled: bool,
    /// Shows attendance in clients.
    pub has_attendees: bool,
    /// Description.
    pub description: Option<String>,
    /// Location.
    pub location: Option<String>,
    /// Recurrence rule (RRULE, or iCalendar lines with EXDATE/RDATE).
    pub recurrence: Option<String>,
    /// URL.
    pub url: Option<String>,
    /// Home calendar (edit rights); unset when that calendar was deleted.
    pub origin_calendar_id: Option<CalendarId>,
    /// Incremented on every change.
    pub revision: i64,
    /// Creation time.
    pub created_at: DateTimeUtc,
    /// Last change (delta reads).
    pub updated_at: DateTimeUtc,
    /// Set when deleted.
    pub deleted_at: Option<DateTimeUtc>,
}

/// Relations of an event.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// Its links into calendars.
    #[sea_orm(has_many = "super::calendar_events::Entity")]
    Links,
}

impl Related<super::calendar_events::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Links.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
