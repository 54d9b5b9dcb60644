//! A calendar, owned by its creator and shared through memberships.
//!
//! The table also has `events_version`, kept by database triggers and read only by the
//! events read's cache (`store::event_reads::versions`), and, on SQLite, `members_version`,
//! kept the same way and read only by a batch of creations (`store::batch_roles`); they are
//! deliberately not part of the model, so no model write can ever set them back.

use ids::{CalendarId, UserId};
use sea_orm::entity::prelude::*;

/// A calendar.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "calendars")]
pub struct Model {
    /// Calendar id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: CalendarId,
    /// The owner.
    pub creator_id: UserId,
    /// Display name.
    pub name: String,
    /// `#RRGGBB`.
    pub color: String,
    /// The owner's personal calendar: undeletable, non-transferable.
    pub is_default: bool,
    /// Creation time.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
}

/// Relations of a calendar.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// Its memberships.
    #[sea_orm(has_many = "super::calendar_members::Entity")]
    Members,
}

impl Related<super::calendar_members::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Members.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
