//! A calendar invite; its id is the token.

use ids::{CalendarId, InviteId, UserId};
use sea_orm::entity::prelude::*;

/// An invite.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "invites")]
pub struct Model {
    /// The token (a UUID).
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: InviteId,
    /// The calendar it opens.
    pub calendar_id: CalendarId,
    /// Who created it (unset once that user is gone).
    pub created_by: Option<UserId>,
    /// Unusable from this instant; `None` never expires.
    pub expires_at: Option<DateTimeUtc>,
    /// Memberships it may create; `None` is unlimited.
    pub max_uses: Option<i32>,
    /// Memberships it created.
    pub uses: i32,
    /// Set when revoked.
    pub revoked_at: Option<DateTimeUtc>,
    /// Creation time.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
}

/// Relations of an invite.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The calendar.
    #[sea_orm(
        belongs_to = "super::calendars::Entity",
        from = "Column::CalendarId",
        to = "super::calendars::Column::Id",
        on_delete = "Cascade"
    )]
    Calendar,
}

impl Related<super::calendars::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Calendar.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
