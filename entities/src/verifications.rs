//! One-time tokens (password reset, account deletion), stored by the hash of the token.

use sea_orm::entity::prelude::*;

/// A pending one-time token.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "verifications")]
pub struct Model {
    /// Row id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// `<purpose>:<sha256 of the token>`.
    #[sea_orm(unique)]
    pub identifier: String,
    /// What the token grants, usually the user id.
    pub value: String,
    /// Unusable from this instant.
    pub expires_at: DateTimeUtc,
    /// Issue time.
    pub created_at: DateTimeUtc,
}

/// `verifications` has no relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
