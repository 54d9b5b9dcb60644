//! A candidate day of a scheduling poll.

use ids::{PollId, PollSlotId};
use sea_orm::entity::prelude::*;

/// A slot: 24 hours from its start.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "scheduling_slots")]
pub struct Model {
    /// Row id (what votes name).
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: PollSlotId,
    /// Its poll.
    pub poll_id: PollId,
    /// Start.
    pub start_at: DateTimeUtc,
    /// End (a day after the start).
    pub end_at: DateTimeUtc,
}

/// `scheduling_slots` relations.
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
    /// The answers about it.
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
