//! A user's reminder override for one event (explicit choices only; clearing deletes it).

use ids::{EventId, UserId};
use sea_orm::entity::prelude::*;

/// One override.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "event_reminders")]
pub struct Model {
    /// The user.
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: UserId,
    /// The event.
    #[sea_orm(primary_key, auto_increment = false)]
    pub event_id: EventId,
    /// The reminder rule (`{minutesBefore, allDay}`).
    pub rule: Json,
    /// Last change.
    pub updated_at: DateTimeUtc,
}

/// Relations of an override.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The user.
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::UserId",
        to = "super::users::Column::Id",
        on_delete = "Cascade"
    )]
    User,
    /// The event.
    #[sea_orm(
        belongs_to = "super::events::Entity",
        from = "Column::EventId",
        to = "super::events::Column::Id",
        on_delete = "Cascade"
    )]
    Event,
}

impl ActiveModelBehavior for ActiveModel {}
