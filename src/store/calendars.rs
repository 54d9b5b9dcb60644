//! Calendars: reads for listings, and the writes the calendar actor performs inside its
//! transactions. Every mutating transaction first locks the calendar row
//! ([`lock`], `SELECT … FOR UPDATE` on PostgreSQL; SQLite's `BEGIN IMMEDIATE` already
//! serializes writers), so checks and writes see one consistent state even with several
//! server processes.

use chrono::{DateTime, Utc};
use entities::{calendar_members, calendars};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect,
};
use uuid::Uuid;

use super::statements::Unique;
use super::{Database, WriteTxn};
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::domain::roles::Role;

/// A calendar to create.
#[derive(Debug, Clone)]
pub struct NewCalendar {
    /// Its owner.
    pub creator_id: UserId,
    /// Name.
    pub name: String,
    /// Colour.
    pub color: String,
}

/// Creates a calendar with its creator as owner, in one transaction.
pub async fn create(
    db: &Database,
    new: NewCalendar,
    now: DateTime<Utc>,
) -> Result<calendars::Model, DbErr> {
    let txn = db.begin_write().await?;
    let calendar = calendars::ActiveModel {
        id: Set(CalendarId::generate()),
        creator_id: Set(new.creator_id.clone()),
        name: Set(new.name),
        color: Set(new.color),
        is_default: Set(false),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await?;
    calendar_members::ActiveModel {
        id: Set(Uuid::new_v4()),
        calendar_id: Set(calendar.id),
        user_id: Set(new.creator_id),
        role: Set(Role::Owner.as_str().to_owned()),
        reminder: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await?;
    txn.commit().await?;
    Ok(calendar)
}

/// The calendar with this id.
pub async fn find(
    db: &impl ConnectionTrait,
    id: CalendarId,
) -> Result<Option<calendars::Model>, DbErr> {
    calendars::Entity::find_by_id(id).unique(db).await
}

/// Locks the calendar row for the rest of the transaction and returns it.
pub async fn lock(
    txn: &impl ConnectionTrait,
    id: CalendarId,
) -> Result<Option<calendars::Model>, DbErr> {
    calendars::Entity::find_by_id(id)
        .lock_exclusive()
        .unique(txn)
        .await
}

/// Locks the rows of `ids` that exist, in the order of their ids (`FOR UPDATE`), on
/// PostgreSQL. Nothing on SQLite, whose one writer holds the whole database.
///
/// **The lock order.** Every write transaction on PostgreSQL takes its row locks in one
/// global order, so that no two can each hold what the other waits for: first every
/// calendar it will write to or whose members it relies on, by id; then the events' rows,
/// by id; then the rows hanging off them (links, attendees, history). A calendar's
/// events version rises when the transaction commits, in a row of its own beside the
/// calendar's (migrations `m20261129_000025` and `m20261130_000026`), taken in the order of
/// the ids then, so a write of events never takes a calendar's row for update: a batch of edits
/// ([`super::events::change_locks::lock_for_changes`]) takes its calendars `FOR KEY SHARE`,
/// which two batches can hold together and which lets neither's commit wait for the
/// other's whole transaction, and confirms the members it read in its last statement
/// ([`super::events::change_locks::confirm_members`]). The writers that change a calendar's
/// memberships or its events wholesale take it `FOR UPDATE`, here, and so wait for those
/// batches at their start rather than in the middle: [`lock_for_membership_loss`] (leave,
/// remove), [`lock_for_deletion`] (calendar deletion). The batch of creations
/// ([`super::events::calendar_roles::lock_with_roles`]) locks its calendars in the same
/// order. A lock taken out of order anyway (a link added in between) can still deadlock;
/// the database breaks it and the command runs again, counted in
/// `svc_db_transaction_retries_total`.
pub async fn lock_in_order(txn: &impl ConnectionTrait, ids: &[CalendarId]) -> Result<(), DbErr> {
    if ids.is_empty() || txn.get_database_backend() != sea_orm::DbBackend::Postgres {
        return Ok(());
    }
    let ids: std::collections::BTreeSet<CalendarId> = ids.iter().copied().collect();
    calendars::Entity::find()
        .select_only()
        .column(calendars::Column::Id)
        .filter(calendars::Column::Id.is_in(ids))
        .order_by_asc(calendars::Column::Id)
        .lock(sea_orm::sea_query::LockType::Update)
        .into_tuple::<CalendarId>()
        .all(txn)
        .await?;
    Ok(())
}

/// Locks, in the order of [`lock_in_order`], every calendar `user` losing their membership
/// of `home` writes to (`home`, and the calendars of each event whose links `user` made from
/// `home`: those links go and the events' revisions rise), then takes `home`'s row for
/// update. `None`: no such calendar.
pub async fn lock_for_membership_loss(
    txn: &impl ConnectionTrait,
    home: CalendarId,
    user: &UserId,
) -> Result<Option<calendars::Model>, DbErr> {
    if txn.get_database_backend() == sea_orm::DbBackend::Postgres {
        let made = super::events::links_made_from(txn, home, user).await?;
        let events: Vec<EventId> = made.into_keys().collect();
        let mut touched: Vec<CalendarId> = super::events::links_of(txn, &events)
            .await?
            .into_values()
            .flatten()
            .collect();
        touched.push(home);
        lock_in_order(txn, &touched).await?;
    }
    lock(txn, home).await
}

/// Locks, in the order of [`lock_in_order`], every calendar deleting `id` writes to: `id`
/// and each calendar sharing an event with it (the events homed in `id` go, the others are
/// unlinked from it; either raises their calendars' versions).
pub async fn lock_for_deletion(txn: &impl ConnectionTrait, id: CalendarId) -> Result<(), DbErr> {
    if txn.get_database_backend() != sea_orm::DbBackend::Postgres {
        return Ok(());
    }
    let mut touched: Vec<CalendarId> = super::events::links_of_events_in(txn, id)
        .await?
        .into_values()
        .flatten()
        .collect();
    touched.push(id);
    lock_in_order(txn, &touched).await
}

/// The calendars `user_id` belongs to, with their role in each.
pub async fn list_for_user(
    db: &Database,
    user_id: &UserId,
) -> Result<Vec<(calendars::Model, Role)>, DbErr> {
    let rows = calendar_members::Entity::find()
        .filter(calendar_members::Column::UserId.eq(user_id))
        .find_also_related(calendars::Entity)
        .all(db.conn())
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(membership, calendar)| {
            Some((
                calendar?,
                Role::parse(&membership.role).unwrap_or(Role::Viewer),
            ))
        })
        .collect())
}

/// Renames and/or recolours.
pub async fn update_meta(
    txn: &impl ConnectionTrait,
    calendar: calendars::Model,
    name: String,
    color: String,
    now: DateTime<Utc>,
) -> Result<calendars::Model, DbErr> {
    let mut active: calendars::ActiveModel = calendar.into();
    active.name = Set(name);
    active.color = Set(color);
    active.updated_at = Set(now);
    active.update(txn).await
}

/// Moves ownership to `new_owner` (roles are changed by the caller).
pub async fn set_creator(
    txn: &impl ConnectionTrait,
    calendar: calendars::Model,
    new_owner: &UserId,
    now: DateTime<Utc>,
) -> Result<calendars::Model, DbErr> {
    let mut active: calendars::ActiveModel = calendar.into();
    active.creator_id = Set(new_owner.clone());
    active.updated_at = Set(now);
    active.update(txn).await
}

/// Bumps `updated_at` (membership changed).
pub async fn touch(
    txn: &impl ConnectionTrait,
    id: CalendarId,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    calendars::Entity::update_many()
        .col_expr(calendars::Column::UpdatedAt, now.into())
        .filter(calendars::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Deletes the calendar (memberships and invites cascade; a federated shadow left with no
/// calendar loses its member tokens, [`super::members::shadows_lose`]).
pub async fn delete(txn: &WriteTxn, id: CalendarId) -> Result<bool, DbErr> {
    super::members::shadows_lose(txn, &[id]).await?;
    Ok(calendars::Entity::delete_by_id(id)
        .exec(txn)
        .await?
        .rows_affected
        == 1)
}
