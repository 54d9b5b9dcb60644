//! A user's settings document and its revision.

use ids::UserId;
use sea_orm::entity::prelude::*;

/// Settings of one user.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "user_settings")]
pub struct Model {
    /// The user.
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: UserId,
    /// The settings value (JSON object).
    pub value: Json,
    /// Incremented on every change (compare-and-swap).
    pub revision: i64,
    /// Creation time.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
}

/// Relations of a settings row.
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
}

impl ActiveModelBehavior for ActiveModel {}
