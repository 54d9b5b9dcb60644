//! A publication of an event as a page anyone with its address can read (and answer).

use ids::{EventId, UserId};
use sea_orm::entity::prelude::*;

/// A publication; live while `revoked_at` is null.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "event_shares")]
pub struct Model {
    /// The page's address and credential: 128 random bits, hex.
    #[sea_orm(primary_key, auto_increment = false)]
    pub token: String,
    /// The event.
    pub event_id: EventId,
    /// Who published it.
    pub created_by: UserId,
    /// `link` (anyone with the address) or `public` (the same, and it may be indexed).
    pub mode: String,
    /// Whether the page may say crawlers are welcome (only with `public`).
    pub indexable: bool,
    /// What readers learn of who is coming: `counts`, `names` or `hidden`.
    pub attendee_visibility: String,
    /// The page's look: JSON of the closed set of choices.
    pub theme: String,
    /// Published.
    pub created_at: DateTimeUtc,
    /// Last changed.
    pub updated_at: DateTimeUtc,
    /// When it was revoked (the token stays dead).
    pub revoked_at: Option<DateTimeUtc>,
}

/// `event_shares` relations.
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
}

impl Related<super::events::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Event.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
