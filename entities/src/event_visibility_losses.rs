//! "This user could see this event until then": written with every change that takes an
//! event out of someone's view, read by delta reads as `deletedIds`.

use ids::{EventId, UserId};
use sea_orm::entity::prelude::*;

/// A loss of visibility.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "event_visibility_losses")]
pub struct Model {
    /// Row id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// The user.
    pub user_id: UserId,
    /// The event.
    pub event_id: EventId,
    /// When it left their view.
    pub at: DateTimeUtc,
}

/// No relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
