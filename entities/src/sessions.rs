//! A signed-in device. Only the SHA-256 of its token is stored.

use ids::UserId;
use sea_orm::entity::prelude::*;

/// A session.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "sessions")]
pub struct Model {
    /// Session id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// Hex SHA-256 of the session token.
    #[sea_orm(unique)]
    pub token_hash: String,
    /// Owner.
    pub user_id: UserId,
    /// The session is invalid from this instant.
    pub expires_at: DateTimeUtc,
    /// `false` for a "don't remember me" session: one day, never extended.
    pub remember: bool,
    /// Client address at sign-in (`""` when unknown).
    pub ip_address: String,
    /// Client `User-Agent` at sign-in (`""` when absent).
    pub user_agent: String,
    /// Sign-in time.
    pub created_at: DateTimeUtc,
    /// Last extension.
    pub updated_at: DateTimeUtc,
}

/// Relations of a session.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// Its user.
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
