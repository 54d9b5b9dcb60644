//! A user's membership of a calendar, with a role and an optional reminder rule.

use ids::{CalendarId, UserId};
use sea_orm::entity::prelude::*;

/// A membership.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "calendar_members")]
pub struct Model {
    /// Row id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// The calendar.
    pub calendar_id: CalendarId,
    /// The member.
    pub user_id: UserId,
    /// `owner`, `editor` or `viewer`.
    pub role: String,
    /// The member's reminder rule for this calendar; `None` inherits the default.
    pub reminder: Option<Json>,
    /// Join time.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
}

/// Relations of a membership.
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
    /// The member.
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::UserId",
        to = "super::users::Column::Id",
        on_delete = "Cascade"
    )]
    User,
}

impl Related<super::calendars::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Calendar.def()
    }
}

impl Related<super::users::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::User.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
