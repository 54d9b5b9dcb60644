//! A scheduling poll: a question about when to meet, offered as candidate days.

use ids::{CalendarId, EventId, PollId, PollSlotId, UserId};
use sea_orm::entity::prelude::*;

/// A poll; open until `closed_at` is set (by closing or deciding) or `deadline` passes.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "scheduling_polls")]
pub struct Model {
    /// Row id (the organizer's routes' `:pollId`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: PollId,
    /// The organizer's account; `None` for a poll made without one (until it is claimed).
    pub owner_id: Option<UserId>,
    /// The organizer's address, lower case (whoever proves it may claim the poll).
    pub owner_email: String,
    /// The organizer's name.
    pub owner_name: String,
    /// The question.
    pub title: String,
    /// More about it.
    pub description: Option<String>,
    /// A wall-clock hint (`HH:mm`); decided events stay all-day.
    pub approximate_start_time: Option<String>,
    /// Kept for older clients: always a day (1,440).
    pub duration_minutes: i32,
    /// The public page's address and credential: 128 random bits, hex.
    #[sea_orm(unique)]
    pub token: String,
    /// When it stops taking answers by itself.
    pub deadline: Option<DateTimeUtc>,
    /// Where the decided event lands (cleared when that calendar is deleted).
    pub calendar_id: Option<CalendarId>,
    /// The day picked.
    pub chosen_slot_id: Option<PollSlotId>,
    /// The event the decision made (not a foreign key: claimed before the event exists).
    pub event_id: Option<EventId>,
    /// When it was closed or decided.
    pub closed_at: Option<DateTimeUtc>,
    /// Created.
    pub created_at: DateTimeUtc,
    /// Last changed.
    pub updated_at: DateTimeUtc,
}

/// `scheduling_polls` relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The organizer's account.
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::OwnerId",
        to = "super::users::Column::Id",
        on_delete = "Cascade"
    )]
    Owner,
    /// The candidate days.
    #[sea_orm(has_many = "super::scheduling_slots::Entity")]
    Slots,
    /// The people who answered (or opened it signed in).
    #[sea_orm(has_many = "super::scheduling_participants::Entity")]
    Participants,
}

impl Related<super::scheduling_slots::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Slots.def()
    }
}

impl Related<super::scheduling_participants::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Participants.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
