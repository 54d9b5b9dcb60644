//! A browser's web push subscription: where its push service takes messages for it, and
//! the keys they are encrypted to. It belongs to the session that subscribed it.

use ids::UserId;
use sea_orm::entity::prelude::*;

/// A push subscription.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "push_subscriptions")]
pub struct Model {
    /// Row id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// Whose reminders it receives.
    pub user_id: UserId,
    /// The session that subscribed it (signing it out removes the subscription).
    pub session_id: String,
    /// The push service's https URL for this browser (unique).
    pub endpoint: String,
    /// The browser's P-256 public key, base64url.
    pub p256dh: String,
    /// The browser's authentication secret, base64url.
    pub auth: String,
    /// Subscribed.
    pub created_at: DateTimeUtc,
    /// Subscribed again, or last accepted a message.
    pub last_seen_at: DateTimeUtc,
}

/// `push_subscriptions` relations.
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
