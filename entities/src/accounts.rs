//! A way to sign in: the password (`credential`) or a provider identity (`google`, `apple`,
//! `microsoft`); a Google or Microsoft identity linked with calendar consent also holds the
//! tokens its calendars are mirrored with.

use ids::{AccountId, UserId};
use sea_orm::entity::prelude::*;

/// An account.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "accounts")]
pub struct Model {
    /// Account row id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// Owner.
    pub user_id: UserId,
    /// `credential`, `google`, `apple`, `microsoft`.
    pub provider_id: String,
    /// The provider's subject id (`sub`); the user id for `credential`.
    pub account_id: AccountId,
    /// argon2id PHC string, for `credential` accounts.
    pub password_hash: Option<String>,
    /// Granted scopes, comma-separated.
    pub scope: Option<String>,
    /// OAuth access token, sealed with `CALDAV_ENC_KEY` (calendar-linked accounts).
    pub access_token: Option<String>,
    /// OAuth refresh token, sealed likewise.
    pub refresh_token: Option<String>,
    /// When the access token expires.
    pub access_token_expires_at: Option<DateTimeUtc>,
    /// The account's email at the provider.
    pub label: Option<String>,
    /// `reconnect_required` once the provider refused the refresh token; `None` otherwise.
    pub sync_status: Option<String>,
    /// The provider's error code (`invalid_grant`).
    pub sync_error_code: Option<String>,
    /// Link time.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
}

/// Relations of an account.
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
