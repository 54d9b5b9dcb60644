//! A change-notification waiting for its batch: one row per (person, kind, event); the
//! batch's due time is fixed by the person's first pending change.

use ids::UserId;
use sea_orm::entity::prelude::*;

/// A pending notification.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "pending_notifications")]
pub struct Model {
    /// Row id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// Recipient.
    pub user_id: UserId,
    /// `moved` or `cancelled`.
    pub kind: String,
    /// The event.
    pub subject_id: Uuid,
    /// What to say (title, times).
    pub payload: Json,
    /// When the batch is sent.
    pub due_at: DateTimeUtc,
    /// An instance is sending it until then.
    pub claimed_until: Option<DateTimeUtc>,
    /// First queued.
    pub created_at: DateTimeUtc,
    /// Raised by every change queued into this row; a sender deletes the row only if it is
    /// still the revision it claimed.
    pub revision: i64,
}

/// Relations of a pending notification.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The recipient.
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
