//! Connected CalDAV accounts: the server, the user name and the AES-256-GCM encrypted
//! password, with what discovery found (principal, calendar home).

use ids::{CaldavAccountId, UserId};
use sea_orm::entity::prelude::*;

/// A CalDAV account.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "caldav_accounts")]
pub struct Model {
    /// Row id (the wire's `accountId`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: CaldavAccountId,
    /// The Bowline user who connected it.
    pub user_id: UserId,
    /// The server URL as the user gave it.
    pub server_url: String,
    /// The user name on that server.
    pub username: String,
    /// `base64(iv):base64(tag):base64(ciphertext)` under `CALDAV_ENC_KEY`.
    pub encrypted_password: String,
    /// The principal discovery found.
    pub principal_url: String,
    /// The calendar home discovery found.
    pub home_url: String,
    /// `reconnect_required` once the server refused the credentials; `None` while fine.
    pub sync_status: Option<String>,
    /// Why (`unauthorized`).
    pub sync_error_code: Option<String>,
    /// Connected at.
    pub created_at: DateTimeUtc,
    /// Last changed.
    pub updated_at: DateTimeUtc,
}

/// `caldav_accounts` relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
