//! A user's connection to another server's calendar (federation, home side): the shadow
//! user made there and the sealed member token that acts as it.

use ids::{ConnectionId, UserId};
use sea_orm::entity::prelude::*;

/// A federated connection.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "federation_connections")]
pub struct Model {
    /// Row id (the gateway's `:connectionId`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: ConnectionId,
    /// The local user it belongs to.
    pub user_id: UserId,
    /// The other server's origin (`https://host[:port]`).
    pub server: String,
    /// The shadow user's id on that server.
    pub remote_user_id: String,
    /// The member token, AES-256-GCM sealed under `CALDAV_ENC_KEY`.
    pub token: String,
    /// When that server stops accepting the token.
    pub token_expires_at: DateTimeUtc,
    /// Created.
    pub created_at: DateTimeUtc,
    /// Last changed (connected again, or the token rotated).
    pub updated_at: DateTimeUtc,
}

/// `federation_connections` relations.
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
