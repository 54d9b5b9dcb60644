//! "This user's view of this event changed then" (they still see it, through fewer
//! calendars): read by delta reads, which return the event again.

use ids::{EventId, UserId};
use sea_orm::entity::prelude::*;

/// A change of what a user sees of an event.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "event_view_changes")]
pub struct Model {
    /// Row id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// The user.
    pub user_id: UserId,
    /// The event.
    pub event_id: EventId,
    /// When their view changed.
    pub at: DateTimeUtc,
}

/// No relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
