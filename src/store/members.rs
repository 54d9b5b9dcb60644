//! Calendar memberships and roles.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use entities::{calendar_members, users};
use sea_orm::{ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use uuid::Uuid;

use super::WriteTxn;
use super::statements::Unique;
use crate::domain::ids::{CalendarId, UserId};
use crate::domain::roles::Role;

/// A member with their user record.
#[derive(Debug, Clone)]
pub struct Member {
    /// The user.
    pub user: users::Model,
    /// Their role.
    pub role: Role,
    /// The membership row.
    pub membership: calendar_members::Model,
}

/// `user_id`'s role in the calendar, if they are a member.
pub async fn role_of(
    db: &impl ConnectionTrait,
    calendar_id: CalendarId,
    user_id: &UserId,
) -> Result<Option<Role>, DbErr> {
    Ok(calendar_members::Entity::find()
        .filter(calendar_members::Column::CalendarId.eq(calendar_id))
        .filter(calendar_members::Column::UserId.eq(user_id))
        .unique(db)
        .await?
        .and_then(|m| Role::parse(&m.role)))
}

/// Members ordered owner, editors, viewers, then by name.
pub async fn list(
    db: &impl ConnectionTrait,
    calendar_id: CalendarId,
) -> Result<Vec<Member>, DbErr> {
    let mut by_calendar = list_for_calendars(db, &[calendar_id]).await?;
    Ok(by_calendar.remove(&calendar_id).unwrap_or_default())
}

/// Members of several calendars at once, each list ordered as in [`list`].
pub async fn list_for_calendars(
    db: &impl ConnectionTrait,
    calendar_ids: &[CalendarId],
) -> Result<HashMap<CalendarId, Vec<Member>>, DbErr> {
    if calendar_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = calendar_members::Entity::find()
        .filter(calendar_members::Column::CalendarId.is_in(calendar_ids.iter().copied()))
        .find_also_related(users::Entity)
        .all(db)
        .await?;
    let mut by_calendar: HashMap<CalendarId, Vec<Member>> = HashMap::new();
    for (membership, user) in rows {
        let Some(user) = user else { continue };
        let role = Role::parse(&membership.role).unwrap_or(Role::Viewer);
        by_calendar
            .entry(membership.calendar_id)
            .or_default()
            .push(Member {
                user,
                role,
                membership,
            });
    }
    for members in by_calendar.values_mut() {
        members.sort_by(|a, b| {
            (a.role, a.user.name.to_lowercase(), &a.user.id).cmp(&(
                b.role,
                b.user.name.to_lowercase(),
                &b.user.id,
            ))
        });
    }
    Ok(by_calendar)
}

/// The member ids of several calendars (calendar → user ids).
pub async fn ids_by_calendar(
    db: &impl ConnectionTrait,
    calendar_ids: &[CalendarId],
) -> Result<HashMap<CalendarId, Vec<UserId>>, DbErr> {
    Ok(roles_in(db, calendar_ids)
        .await?
        .into_iter()
        .map(|(calendar, members)| {
            (
                calendar,
                members.into_iter().map(|(user, _)| user).collect(),
            )
        })
        .collect())
}

/// The members of several calendars with their roles, in one query (a calendar without
/// members is absent).
pub async fn roles_in(
    db: &impl ConnectionTrait,
    calendar_ids: &[CalendarId],
) -> Result<HashMap<CalendarId, Vec<(UserId, Role)>>, DbErr> {
    let mut by_calendar: HashMap<CalendarId, Vec<(UserId, Role)>> = HashMap::new();
    if calendar_ids.is_empty() {
        return Ok(by_calendar);
    }
    let rows = calendar_members::Entity::find()
        .filter(calendar_members::Column::CalendarId.is_in(calendar_ids.iter().copied()))
        .all(db)
        .await?;
    by_calendar.extend(roles_by_calendar(rows));
    Ok(by_calendar)
}

/// Each calendar's members and roles among `rows` (a row with an unknown role is left out).
pub fn roles_by_calendar(
    rows: impl IntoIterator<Item = calendar_members::Model>,
) -> HashMap<CalendarId, Vec<(UserId, Role)>> {
    let mut by_calendar: HashMap<CalendarId, Vec<(UserId, Role)>> = HashMap::new();
    for row in rows {
        if let Some(role) = Role::parse(&row.role) {
            by_calendar
                .entry(row.calendar_id)
                .or_default()
                .push((row.user_id, role));
        }
    }
    by_calendar
}

/// The calendars `user_id` is a member of.
pub async fn calendars_of(
    db: &impl ConnectionTrait,
    user_id: &UserId,
) -> Result<std::collections::HashSet<CalendarId>, DbErr> {
    Ok(calendar_members::Entity::find()
        .filter(calendar_members::Column::UserId.eq(user_id))
        .all(db)
        .await?
        .into_iter()
        .map(|m| m.calendar_id)
        .collect())
}

/// The user ids of every member.
pub async fn member_ids(
    db: &impl ConnectionTrait,
    calendar_id: CalendarId,
) -> Result<Vec<UserId>, DbErr> {
    Ok(calendar_members::Entity::find()
        .filter(calendar_members::Column::CalendarId.eq(calendar_id))
        .all(db)
        .await?
        .into_iter()
        .map(|m| m.user_id)
        .collect())
}

/// Adds `user_id` as a viewer unless already a member; `Some(row)` when a membership resulted.
pub async fn add_viewer(
    txn: &impl ConnectionTrait,
    calendar_id: CalendarId,
    user_id: &UserId,
    now: DateTime<Utc>,
) -> Result<Option<calendar_members::Model>, DbErr> {
    let row = calendar_members::ActiveModel {
        id: Set(Uuid::new_v4()),
        calendar_id: Set(calendar_id),
        user_id: Set(user_id.to_owned()),
        role: Set(Role::Viewer.as_str().to_owned()),
        reminder: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    };
    let result = calendar_members::Entity::insert(row)
        .on_conflict_do_nothing_on([
            calendar_members::Column::CalendarId,
            calendar_members::Column::UserId,
        ])
        .exec(txn)
        .await?;
    match result {
        sea_orm::TryInsertResult::Inserted(_) => {
            calendar_members::Entity::find()
                .filter(calendar_members::Column::CalendarId.eq(calendar_id))
                .filter(calendar_members::Column::UserId.eq(user_id))
                .unique(txn)
                .await
        }
        _ => Ok(None),
    }
}

/// Sets a member's role; `false` if they are not a member.
pub async fn set_role(
    txn: &impl ConnectionTrait,
    calendar_id: CalendarId,
    user_id: &UserId,
    role: Role,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let result = calendar_members::Entity::update_many()
        .col_expr(calendar_members::Column::Role, role.as_str().into())
        .col_expr(calendar_members::Column::UpdatedAt, now.into())
        .filter(calendar_members::Column::CalendarId.eq(calendar_id))
        .filter(calendar_members::Column::UserId.eq(user_id))
        .exec(txn)
        .await?;
    Ok(result.rows_affected == 1)
}

/// Removes a membership; whether there was one. A federated shadow user left with no
/// calendar loses its member tokens in the same statement (a trigger does it, whatever
/// removes a membership); announced once `txn` commits.
pub async fn remove(
    txn: &WriteTxn,
    calendar_id: CalendarId,
    user_id: &UserId,
) -> Result<bool, DbErr> {
    let removed = calendar_members::Entity::delete_many()
        .filter(calendar_members::Column::CalendarId.eq(calendar_id))
        .filter(calendar_members::Column::UserId.eq(user_id))
        .exec(txn)
        .await?
        .rows_affected
        == 1;
    if removed
        && users::Entity::find_by_id(user_id.to_owned())
            .unique(txn)
            .await?
            .is_some_and(|user| user.is_external)
    {
        txn.credentials_changed(user_id);
    }
    Ok(removed)
}

/// Announces, once `txn` commits, a credential change of every federated shadow that is a
/// member of one of `calendar_ids`, before those calendars go: a shadow left with no
/// calendar has lost its member tokens, and its streams end.
pub async fn shadows_lose(txn: &WriteTxn, calendar_ids: &[CalendarId]) -> Result<(), DbErr> {
    if calendar_ids.is_empty() {
        return Ok(());
    }
    let shadows = calendar_members::Entity::find()
        .filter(calendar_members::Column::CalendarId.is_in(calendar_ids.iter().copied()))
        .find_also_related(users::Entity)
        .all(txn)
        .await?;
    for (membership, user) in shadows {
        if user.is_some_and(|user| user.is_external) {
            txn.credentials_changed(&membership.user_id);
        }
    }
    Ok(())
}
