//! A user's avatar image: sniffed type and bytes, versioned by upload time.

use ids::UserId;
use sea_orm::entity::prelude::*;

/// One avatar.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "avatars")]
pub struct Model {
    /// The user.
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: UserId,
    /// `image/jpeg`, `image/png` or `image/webp`.
    pub mime: String,
    /// The image.
    pub bytes: Vec<u8>,
    /// Upload time in milliseconds: the `v` of the avatar's URL.
    pub version: i64,
    /// Upload time.
    pub updated_at: DateTimeUtc,
}

/// Relations of an avatar.
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
