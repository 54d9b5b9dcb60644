//! One participant's answer about one candidate day of a scheduling poll.

use ids::{PollParticipantId, PollSlotId};
use sea_orm::entity::prelude::*;

/// An answer: `yes`, `if-needed` or `no`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "scheduling_votes")]
pub struct Model {
    /// The day.
    #[sea_orm(primary_key, auto_increment = false)]
    pub slot_id: PollSlotId,
    /// Who answered.
    #[sea_orm(primary_key, auto_increment = false)]
    pub participant_id: PollParticipantId,
    /// `yes`, `if-needed` or `no`.
    pub value: String,
    /// When it was given.
    pub created_at: DateTimeUtc,
}

/// `scheduling_votes` relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The day.
    #[sea_orm(
        belongs_to = "super::scheduling_slots::Entity",
        from = "Column::SlotId",
        to = "super::scheduling_slots::Column::Id",
        on_delete = "Cascade"
    )]
    Slot,
    /// Who answered.
    #[sea_orm(
        belongs_to = "super::scheduling_participants::Entity",
        from = "Column::ParticipantId",
        to = "super::scheduling_participants::Column::Id",
        on_delete = "Cascade"
    )]
    Participant,
}

impl Related<super::scheduling_slots::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Slot.def()
    }
}

impl Related<super::scheduling_participants::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Participant.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
