//! The remote calendars of connected accounts and their local mirrors.

use ids::{AccountId, CalendarId, UserId};
use sea_orm::entity::prelude::*;

/// A remote calendar of a connected account.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "external_calendars")]
pub struct Model {
    /// Row id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// `caldav`, `google` or `microsoft`.
    pub provider: String,
    /// The account (a CalDAV account's id, a provider account's id).
    pub account_id: AccountId,
    /// The user who owns the account.
    pub user_id: UserId,
    /// The calendar at the provider (a CalDAV collection URL).
    pub remote_id: String,
    /// The local mirror; `None` once disabled.
    pub calendar_id: Option<CalendarId>,
    /// The user disconnected this mirror: discovery leaves it out.
    pub disabled: bool,
    /// The provider lets the account read only.
    pub read_only: bool,
    /// Where the last pull ended (sync token or ctag).
    pub sync_token: Option<String>,
    /// First seen.
    pub created_at: DateTimeUtc,
    /// Last changed.
    pub updated_at: DateTimeUtc,
}

/// `external_calendars` relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
