//! A participant of a scheduling poll: one per poll and address.

use ids::{PollId, PollParticipantId, UserId};
use sea_orm::entity::prelude::*;

/// A participant. The address is private: answers show the name only.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "scheduling_participants")]
pub struct Model {
    /// Row id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: PollParticipantId,
    /// Its poll.
    pub poll_id: PollId,
    /// The account that proved the address, if one did (cleared when it is deleted).
    pub user_id: Option<UserId>,
    /// The address, lower case (unique within the poll).
    pub email: String,
    /// The name shown with the answers.
    pub name: String,
    /// First answered (or opened the poll signed in).
    pub created_at: DateTimeUtc,
    /// Last answered.
    pub updated_at: DateTimeUtc,
}

/// `scheduling_participants` relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// Its poll.
    #[sea_orm(
        belongs_to = "super::scheduling_polls::Entity",
        from = "Column::PollId",
        to = "super::scheduling_polls::Column::Id",
        on_delete = "Cascade"
    )]
    Poll,
    /// The account that proved the address.
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::UserId",
        to = "super::users::Column::Id",
        on_delete = "SetNull"
    )]
    User,
    /// Their answers.
    #[sea_orm(has_many = "super::scheduling_votes::Entity")]
    Votes,
}

impl Related<super::scheduling_polls::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Poll.def()
    }
}

impl Related<super::scheduling_votes::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Votes.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
