//! A person (or a federated shadow user) who can sign in.

use ids::UserId;
use sea_orm::entity::prelude::*;

/// A user.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "users")]
pub struct Model {
    /// 32 alphanumeric characters (better-auth's id format); `fed_<uuid>` for shadow users.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: UserId,
    /// Display name.
    pub name: String,
    /// Lower-cased email address.
    #[sea_orm(unique)]
    pub email: String,
    /// Whether the address was verified.
    pub email_verified: bool,
    /// Avatar URL.
    pub image: Option<String>,
    /// A shadow user standing for a member of another server.
    pub is_external: bool,
    /// The home server origin of a shadow user.
    pub home_server: Option<String>,
    /// Creation time.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
}

/// Relations of a user.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// Sign-in sessions.
    #[sea_orm(has_many = "super::sessions::Entity")]
    Sessions,
    /// Sign-in accounts.
    #[sea_orm(has_many = "super::accounts::Entity")]
    Accounts,
}

impl Related<super::sessions::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Sessions.def()
    }
}

impl Related<super::accounts::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Accounts.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
