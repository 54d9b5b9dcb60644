//! Calendar, member and invite documents, in the shapes the existing clients read.

use chrono::{DateTime, Utc};
use entities::{calendar_members, calendars, invites};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::schemas::RoleSchema;
use super::{optional_timestamp, timestamp};
use crate::domain::ids::UserId;
use crate::domain::roles::Role;
use crate::store::members::Member;
use crate::store::mirrors::ProviderLink;

/// A calendar: its row, its members and (in listings and frames) the reader's role. The
/// provider fields are null for native calendars.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CalendarView {
    /// Id.
    pub id: Uuid,
    /// Creation time.
    #[serde(serialize_with = "timestamp")]
    pub created_at: DateTime<Utc>,
    /// Last change.
    #[serde(serialize_with = "timestamp")]
    pub updated_at: DateTime<Utc>,
    /// Owner.
    #[serde(rename = "creatorID")]
    pub creator_id: String,
    /// Name.
    pub name: String,
    /// Colour.
    pub color: String,
    /// The owner's personal calendar.
    pub is_default: bool,
    /// Members, owner first.
    pub members: Vec<MemberSummary>,
    /// The reader's role (absent where the document is not for one reader).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = RoleSchema)]
    pub role: Option<&'static str>,
    /// Connected provider (`google`, `microsoft`, `caldav`), null for native calendars.
    #[schema(value_type = Option<super::events::ProviderName>)]
    pub provider: Option<String>,
    /// Provider account id.
    pub account_id: Option<String>,
    /// Provider account label.
    pub account_label: Option<String>,
    /// CalDAV server URL.
    pub server_url: Option<String>,
    /// Provider sync status (the account owner's view only; null for other members).
    pub sync_status: Option<String>,
    /// Provider sync error.
    pub sync_error_code: Option<String>,
}

/// A calendar's row alone, as a federation accept returns it: `{id, createdAt, updatedAt,
/// creatorID, name, color, isDefault}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CalendarRowView {
    /// Id.
    pub id: Uuid,
    /// Creation time.
    #[serde(serialize_with = "timestamp")]
    pub created_at: DateTime<Utc>,
    /// Last change.
    #[serde(serialize_with = "timestamp")]
    pub updated_at: DateTime<Utc>,
    /// Owner.
    #[serde(rename = "creatorID")]
    pub creator_id: String,
    /// Name.
    pub name: String,
    /// Colour.
    pub color: String,
    /// The owner's personal calendar.
    pub is_default: bool,
}

impl From<&calendars::Model> for CalendarRowView {
    fn from(calendar: &calendars::Model) -> Self {
        Self {
            id: calendar.id.uuid(),
            created_at: calendar.created_at,
            updated_at: calendar.updated_at,
            creator_id: calendar.creator_id.to_string(),
            name: calendar.name.clone(),
            color: calendar.color.clone(),
            is_default: calendar.is_default,
        }
    }
}

/// A member in a calendar document: `{id, name, email}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemberSummary {
    /// User id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Email.
    pub email: String,
}

/// A member in the members listing: `{id, name, image, role}` (never an email).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemberView {
    /// User id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Avatar URL.
    pub image: Option<String>,
    /// Role.
    #[schema(value_type = RoleSchema)]
    pub role: &'static str,
}

/// A member in a public invite preview: `{id, name, image}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PreviewMember {
    /// User id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Avatar URL.
    pub image: Option<String>,
}

/// An invite: `{id, createdAt, updatedAt, calendarID, expiresAt, maxUses, uses}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InviteView {
    /// The token.
    pub id: Uuid,
    /// Creation time.
    #[serde(serialize_with = "timestamp")]
    pub created_at: DateTime<Utc>,
    /// Last change.
    #[serde(serialize_with = "timestamp")]
    pub updated_at: DateTime<Utc>,
    /// The calendar.
    #[serde(rename = "calendarID")]
    pub calendar_id: Uuid,
    /// Expiry, null for never.
    #[serde(serialize_with = "optional_timestamp")]
    pub expires_at: Option<DateTime<Utc>>,
    /// Use limit, null for unlimited.
    #[schema(minimum = 1)]
    pub max_uses: Option<i32>,
    /// Memberships created.
    #[schema(minimum = 0)]
    pub uses: i32,
}

/// A membership created by joining: `{id, createdAt, updatedAt, userID, calendarID, role,
/// reminder}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MembershipView {
    /// Row id.
    pub id: Uuid,
    /// Creation time.
    #[serde(serialize_with = "timestamp")]
    pub created_at: DateTime<Utc>,
    /// Last change.
    #[serde(serialize_with = "timestamp")]
    pub updated_at: DateTime<Utc>,
    /// Member.
    #[serde(rename = "userID")]
    pub user_id: String,
    /// Calendar.
    #[serde(rename = "calendarID")]
    pub calendar_id: Uuid,
    /// Role.
    #[schema(value_type = RoleSchema)]
    pub role: String,
    /// Reminder rule (null: inherit).
    pub reminder: Option<serde_json::Value>,
}

impl CalendarView {
    /// The document of `calendar` with `members`, as `reader_role` sees it.
    pub fn new(calendar: &calendars::Model, members: &[Member], reader_role: Option<Role>) -> Self {
        Self {
            id: calendar.id.uuid(),
            created_at: calendar.created_at,
            updated_at: calendar.updated_at,
            creator_id: calendar.creator_id.to_string(),
            name: calendar.name.clone(),
            color: calendar.color.clone(),
            is_default: calendar.is_default,
            members: members
                .iter()
                .map(|m| MemberSummary {
                    id: m.user.id.to_string(),
                    name: m.user.name.clone(),
                    email: m.user.email.clone(),
                })
                .collect(),
            role: reader_role.map(Role::as_str),
            provider: None,
            account_id: None,
            account_label: None,
            server_url: None,
            sync_status: None,
            sync_error_code: None,
        }
    }

    /// The document with its mirror's account, as `reader` sees it: the sync status only
    /// for the account's owner (other members are never asked to reconnect).
    pub fn with_provider(mut self, link: Option<&ProviderLink>, reader: &UserId) -> Self {
        let Some(link) = link else {
            return self;
        };
        self.provider = Some(link.provider.clone());
        self.account_id = Some(link.account_id.to_string());
        self.account_label = link.account_label.clone();
        self.server_url = link.server_url.clone();
        if link.owner == *reader {
            self.sync_status = link.sync_status.clone();
            self.sync_error_code = link.sync_error_code.clone();
        }
        self
    }
}

impl MemberView {
    /// The listing entry of `member`.
    pub fn new(member: &Member) -> Self {
        Self {
            id: member.user.id.to_string(),
            name: member.user.name.clone(),
            image: member.user.image.clone(),
            role: member.role.as_str(),
        }
    }
}

impl From<&invites::Model> for InviteView {
    fn from(invite: &invites::Model) -> Self {
        Self {
            id: invite.id.uuid(),
            created_at: invite.created_at,
            updated_at: invite.updated_at,
            calendar_id: invite.calendar_id.uuid(),
            expires_at: invite.expires_at,
            max_uses: invite.max_uses,
            uses: invite.uses,
        }
    }
}

impl From<&calendar_members::Model> for MembershipView {
    fn from(row: &calendar_members::Model) -> Self {
        Self {
            id: row.id,
            created_at: row.created_at,
            updated_at: row.updated_at,
            user_id: row.user_id.to_string(),
            calendar_id: row.calendar_id.uuid(),
            role: row.role.clone(),
            reminder: row.reminder.clone(),
        }
    }
}
