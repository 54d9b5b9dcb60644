//! An event's link into a calendar.

use ids::{CalendarId, EventId, UserId};
use sea_orm::entity::prelude::*;

/// A link.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "calendar_events")]
pub struct Model {
    /// The event.
    #[sea_orm(primary_key, auto_increment = false)]
    pub event_id: EventId,
    /// The calendar.
    #[sea_orm(primary_key, auto_increment = false)]
    pub calendar_id: CalendarId,
    /// When the event was linked (delta reads).
    pub created_at: DateTimeUtc,
    /// Who linked it here; `None` for the event's home (and for links older than the
    /// column).
    pub linked_by: Option<UserId>,
}

/// Relations of a link.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The event.
    #[sea_orm(
        belongs_to = "super::events::Entity",
        from = "Column::EventId",
        to = "super::events::Column::Id",
        on_delete = "Cascade"
    )]
    Event,
    /// The calendar.
    #[sea_orm(
        belongs_to = "super::calendars::Entity",
        from = "Column::CalendarId",
        to = "super::calendars::Column::Id",
        on_delete = "Cascade"
    )]
    Calendar,
}

impl Related<super::events::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Event.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
