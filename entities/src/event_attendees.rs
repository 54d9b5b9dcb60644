//! A member's attendance answer for an event (`none` is the absence of a row).

use ids::{EventId, UserId};
use sea_orm::entity::prelude::*;

/// An attendance answer.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "event_attendees")]
pub struct Model {
    /// The event.
    #[sea_orm(primary_key, auto_increment = false)]
    pub event_id: EventId,
    /// The member.
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: UserId,
    /// `going`, `maybe` or `declined`.
    pub status: String,
    /// First answer.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
}

/// Relations of an answer.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The member.
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::UserId",
        to = "super::users::Column::Id",
        on_delete = "Cascade"
    )]
    User,
}

impl Related<super::users::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::User.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
