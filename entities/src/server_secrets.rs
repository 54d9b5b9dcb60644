//! Secrets generated once and shared by every instance using the database.

use sea_orm::entity::prelude::*;

/// A named secret.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "server_secrets")]
pub struct Model {
    /// Its name, e.g. `auth_secret`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub name: String,
    /// The secret.
    pub value: String,
    /// When it was generated.
    pub created_at: DateTimeUtc,
}

/// `server_secrets` has no relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
