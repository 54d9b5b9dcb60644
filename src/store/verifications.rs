//! One-time tokens, stored as `<purpose>:<sha256 of the token>`.
//!
//! [`consume`] deletes the row and returns its value in one statement pair inside a
//! transaction, so a token works exactly once even when two requests race.

use chrono::{DateTime, Utc};
use entities::verifications;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter,
};

use super::Database;
use super::statements::Unique;

/// Stores a token for `value` until `expires_at`.
pub async fn create(
    db: &Database,
    identifier: &str,
    value: &str,
    expires_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    insert(db.conn(), identifier, value, expires_at, now).await
}

/// Stores `value` under `identifier` until `expires_at`, in place of whatever that
/// identifier held (one row per identifier: a new emailed code replaces the last one).
pub async fn replace(
    db: &Database,
    identifier: &str,
    value: &str,
    expires_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    db.write(async |txn| {
        verifications::Entity::delete_many()
            .filter(verifications::Column::Identifier.eq(identifier))
            .exec(txn)
            .await?;
        insert(txn, identifier, value, expires_at, now).await
    })
    .await
}

/// Stores `value` under `identifier` until `expires_at`, in `txn`.
pub async fn insert(
    txn: &impl ConnectionTrait,
    identifier: &str,
    value: &str,
    expires_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    verifications::ActiveModel {
        id: Set(crate::domain::ids::new_id()),
        identifier: Set(identifier.to_owned()),
        value: Set(value.to_owned()),
        expires_at: Set(expires_at),
        created_at: Set(now),
    }
    .insert(txn)
    .await?;
    Ok(())
}

/// Takes the row of `identifier` out (expired or not), for the caller to judge: deleted in
/// `txn`, and returned only if this transaction deleted it (a racing one gets `None`).
pub async fn take(
    txn: &impl ConnectionTrait,
    identifier: &str,
) -> Result<Option<verifications::Model>, DbErr> {
    let Some(row) = verifications::Entity::find()
        .filter(verifications::Column::Identifier.eq(identifier))
        .unique(txn)
        .await?
    else {
        return Ok(None);
    };
    let deleted = verifications::Entity::delete_many()
        .filter(verifications::Column::Id.eq(row.id.clone()))
        .exec(txn)
        .await?;
    Ok((deleted.rows_affected == 1).then_some(row))
}

/// The value of an unexpired token, without using it up.
pub async fn peek(
    db: &Database,
    identifier: &str,
    now: DateTime<Utc>,
) -> Result<Option<String>, DbErr> {
    Ok(verifications::Entity::find()
        .filter(verifications::Column::Identifier.eq(identifier))
        .filter(verifications::Column::ExpiresAt.gt(now))
        .unique(db.conn())
        .await?
        .map(|row| row.value))
}

/// Uses up a token: deletes it and returns its value if it existed and had not expired.
/// Call inside the transaction that acts on the value.
pub async fn consume(
    txn: &impl ConnectionTrait,
    identifier: &str,
    now: DateTime<Utc>,
) -> Result<Option<String>, DbErr> {
    Ok(take(txn, identifier)
        .await?
        .filter(|row| row.expires_at > now)
        .map(|row| row.value))
}

/// Deletes expired tokens (cleanup).
pub async fn delete_expired(db: &Database, now: DateTime<Utc>) -> Result<u64, DbErr> {
    Ok(verifications::Entity::delete_many()
        .filter(verifications::Column::ExpiresAt.lte(now))
        .exec(db.conn())
        .await?
        .rows_affected)
}
