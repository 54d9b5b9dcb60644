//! Reminder rules: per-calendar rules live on the caller's membership row (null inherits),
//! per-event overrides are their own rows (clearing deletes the row).

use std::collections::HashSet;

use crate::domain::ids::{CalendarId, EventId, UserId};
use chrono::{DateTime, Utc};
use entities::{calendar_members, event_reminders};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use serde_json::Value;

/// The user's explicit per-calendar rules.
pub async fn calendar_rules(
    db: &impl ConnectionTrait,
    user_id: &UserId,
) -> Result<Vec<(CalendarId, Value)>, DbErr> {
    Ok(calendar_members::Entity::find()
        .filter(calendar_members::Column::UserId.eq(user_id))
        .filter(calendar_members::Column::Reminder.is_not_null())
        .all(db)
        .await?
        .into_iter()
        .filter_map(|m| Some((m.calendar_id, m.reminder.filter(|r| !r.is_null())?)))
        .collect())
}

/// The user's per-event overrides on events they can still see.
pub async fn event_rules(
    db: &impl ConnectionTrait,
    user_id: &UserId,
) -> Result<Vec<(EventId, Value)>, DbErr> {
    let rules = event_reminders::Entity::find()
        .filter(event_reminders::Column::UserId.eq(user_id))
        .all(db)
        .await?;
    let ids: Vec<EventId> = rules.iter().map(|r| r.event_id).collect();
    let visible: HashSet<EventId> = super::events::visible_among(db, user_id, &ids).await?;
    Ok(rules
        .into_iter()
        .filter(|r| visible.contains(&r.event_id))
        .map(|r| (r.event_id, r.rule))
        .collect())
}

/// Sets (or with `None` clears) the member's rule for a calendar; `false` when the user is
/// not a member.
pub async fn set_calendar_rule(
    db: &impl ConnectionTrait,
    calendar_id: CalendarId,
    user_id: &UserId,
    rule: Option<Value>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let result = calendar_members::Entity::update_many()
        .col_expr(calendar_members::Column::Reminder, rule.into())
        .col_expr(calendar_members::Column::UpdatedAt, now.into())
        .filter(calendar_members::Column::CalendarId.eq(calendar_id))
        .filter(calendar_members::Column::UserId.eq(user_id))
        .exec(db)
        .await?;
    Ok(result.rows_affected > 0)
}

/// Sets the user's override for an event.
pub async fn set_event_rule(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    event_id: EventId,
    rule: Value,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let row = event_reminders::ActiveModel {
        user_id: Set(user_id.to_owned()),
        event_id: Set(event_id),
        rule: Set(rule),
        updated_at: Set(now),
    };
    event_reminders::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([
                event_reminders::Column::UserId,
                event_reminders::Column::EventId,
            ])
            .update_columns([
                event_reminders::Column::Rule,
                event_reminders::Column::UpdatedAt,
            ])
            .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(())
}

/// Clears the user's override for an event.
pub async fn clear_event_rule(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    event_id: EventId,
) -> Result<(), DbErr> {
    event_reminders::Entity::delete_many()
        .filter(event_reminders::Column::UserId.eq(user_id))
        .filter(event_reminders::Column::EventId.eq(event_id))
        .exec(db)
        .await?;
    Ok(())
}
