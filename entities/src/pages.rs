//! A Page: a private, per-user view profile. Deleted Pages stay as soft-deleted rows; at most
//! one active Page per user is the default (a partial unique index).

use ids::{PageId, UserId};
use sea_orm::entity::prelude::*;

/// One Page.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "pages")]
pub struct Model {
    /// Server-assigned id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: PageId,
    /// The owner.
    pub user_id: UserId,
    /// Display name (1–80 characters, trimmed).
    pub name: String,
    /// Order among the owner's active Pages.
    pub position: i32,
    /// The default Page.
    pub is_default: bool,
    /// The `PageConfigV1` document.
    pub config: Json,
    /// Incremented on every change (compare-and-swap).
    pub revision: i64,
    /// Creation time.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
    /// Set when deleted.
    pub deleted_at: Option<DateTimeUtc>,
}

/// Relations of a Page.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The owner.
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::UserId",
        to = "super::users::Column::Id",
        on_delete = "Cascade"
    )]
    User,
}

impl ActiveModelBehavior for ActiveModel {}
