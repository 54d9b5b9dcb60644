//! Federation member tokens: bearer credentials of shadow users, stored as SHA-256 only.

use ids::UserId;
use sea_orm::entity::prelude::*;

/// A member token.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "member_tokens")]
pub struct Model {
    /// Row id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// The shadow user it authenticates.
    pub user_id: UserId,
    /// Hex SHA-256 of the token.
    #[sea_orm(unique)]
    pub token_hash: String,
    /// Issue time; tokens older than 90 days do not authenticate.
    pub created_at: DateTimeUtc,
}

/// `member_tokens` relations.
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
