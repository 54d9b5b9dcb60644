//! A web push dispatcher's durable state: how far it has sent, and which instance holds it.

use sea_orm::entity::prelude::*;

/// A dispatcher's row.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "push_dispatch")]
pub struct Model {
    /// The dispatcher (`reminders`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub name: String,
    /// Everything due before this instant has been dispatched.
    pub cursor: Option<DateTimeUtc>,
    /// The instance holding the dispatch.
    pub holder: Option<String>,
    /// Until when it holds it.
    pub lease_until: Option<DateTimeUtc>,
}

/// No relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
