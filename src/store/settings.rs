//! Per-user settings documents: one row per user holding the JSON value and its revision.
//! Writers lock the row (`FOR UPDATE` on PostgreSQL; SQLite write transactions are
//! serialized) so read-modify-write and compare-and-swap hold across processes.

use chrono::{DateTime, Utc};
use entities::user_settings;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ConnectionTrait, DbErr, EntityTrait, QuerySelect,
};
use serde_json::Value;

use super::statements::Unique;
use crate::domain::ids::UserId;
use crate::domain::settings;

/// The stored settings value of a user, if any.
pub async fn value_of(db: &impl ConnectionTrait, user_id: &UserId) -> Result<Option<Value>, DbErr> {
    Ok(find(db, user_id).await?.map(|row| row.value))
}

/// The user's time zone (`timezone` of their settings; UTC when unset or unknown): floating
/// times in the calendars they import or mirror are read in it.
pub async fn zone_of(db: &impl ConnectionTrait, user_id: &UserId) -> Result<chrono_tz::Tz, DbErr> {
    let value = value_of(db, user_id).await?;
    Ok(value.as_ref().map_or(chrono_tz::Tz::UTC, settings::zone_of))
}

/// The user's settings row, if any.
pub async fn find(
    db: &impl ConnectionTrait,
    user_id: &UserId,
) -> Result<Option<user_settings::Model>, DbErr> {
    user_settings::Entity::find_by_id(user_id.to_owned())
        .unique(db)
        .await
}

/// Creates the row with the defaults unless it exists (concurrent creators agree).
pub async fn ensure(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let row = user_settings::ActiveModel {
        user_id: Set(user_id.to_owned()),
        value: Set(settings::defaults()),
        revision: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
    };
    user_settings::Entity::insert(row)
        .on_conflict_do_nothing_on([user_settings::Column::UserId])
        .exec_without_returning(db)
        .await?;
    Ok(())
}

/// The user's row, created with the defaults when missing.
pub async fn find_or_create(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    now: DateTime<Utc>,
) -> Result<Option<user_settings::Model>, DbErr> {
    if let Some(row) = find(db, user_id).await? {
        return Ok(Some(row));
    }
    ensure(db, user_id, now).await?;
    find(db, user_id).await
}

/// Locks the user's row for the rest of the transaction (created first when missing).
pub async fn lock(
    txn: &impl ConnectionTrait,
    user_id: &UserId,
    now: DateTime<Utc>,
) -> Result<Option<user_settings::Model>, DbErr> {
    ensure(txn, user_id, now).await?;
    user_settings::Entity::find_by_id(user_id.to_owned())
        .lock_exclusive()
        .unique(txn)
        .await
}

/// Stores `value` as the next revision of a locked row.
pub async fn save(
    txn: &impl ConnectionTrait,
    row: user_settings::Model,
    value: Value,
    now: DateTime<Utc>,
) -> Result<user_settings::Model, DbErr> {
    let revision = row.revision + 1;
    let mut active: user_settings::ActiveModel = row.into();
    active.value = Set(value);
    active.revision = Set(revision);
    active.updated_at = Set(now);
    active.update(txn).await
}
