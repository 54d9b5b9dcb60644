//! Sessions: created at sign-in, found by the hash of their token, extended, revoked.

use std::time::Instant;

use chrono::{DateTime, Utc};
use entities::{sessions, users};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder,
};

use super::statements::Unique;
use super::{Database, WriteTxn};
use crate::domain::ids::UserId;

/// A session to create.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// Owner.
    pub user_id: UserId,
    /// Hex SHA-256 of the token handed to the client.
    pub token_hash: String,
    /// Expiry.
    pub expires_at: DateTime<Utc>,
    /// `false` for "don't remember me".
    pub remember: bool,
    /// Client address (`""` if unknown).
    pub ip_address: String,
    /// Client `User-Agent`.
    pub user_agent: String,
}

/// Inserts a session.
pub async fn create(
    db: &impl ConnectionTrait,
    new: NewSession,
    now: DateTime<Utc>,
) -> Result<sessions::Model, DbErr> {
    sessions::ActiveModel {
        id: Set(crate::domain::ids::new_id()),
        token_hash: Set(new.token_hash),
        user_id: Set(new.user_id),
        expires_at: Set(new.expires_at),
        remember: Set(new.remember),
        ip_address: Set(new.ip_address),
        user_agent: Set(new.user_agent),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(db)
    .await
}

/// The session with this token hash and its user, expired or not; from the
/// [`super::session_cache`] when it was found there lately.
pub async fn find_by_token_hash(
    db: &Database,
    token_hash: &str,
) -> Result<Option<(sessions::Model, users::Model)>, DbErr> {
    let lookup = match db.sessions.get(token_hash, Instant::now()) {
        Ok(found) => return Ok(Some(found)),
        Err(lookup) => lookup,
    };
    let found = sessions::Entity::find()
        .filter(sessions::Column::TokenHash.eq(token_hash))
        .find_also_related(users::Entity)
        .unique(db.conn())
        .await?
        .and_then(|(session, user)| user.map(|user| (session, user)));
    if let Some(found) = &found {
        db.sessions.put(lookup, token_hash, found, Instant::now());
    }
    Ok(found)
}

/// Moves the expiry of `user_id`'s session `id`.
pub async fn extend(
    db: &Database,
    user_id: &UserId,
    id: &str,
    expires_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    sessions::Entity::update_many()
        .col_expr(sessions::Column::ExpiresAt, expires_at.into())
        .col_expr(sessions::Column::UpdatedAt, now.into())
        .filter(sessions::Column::Id.eq(id))
        .exec(db.conn())
        .await?;
    db.credentials_changed(user_id);
    Ok(())
}

/// The user's sessions that have not expired, oldest first.
pub async fn list_active(
    db: &Database,
    user_id: &UserId,
    now: DateTime<Utc>,
) -> Result<Vec<sessions::Model>, DbErr> {
    sessions::Entity::find()
        .filter(sessions::Column::UserId.eq(user_id))
        .filter(sessions::Column::ExpiresAt.gt(now))
        .order_by_asc(sessions::Column::CreatedAt)
        .all(db.conn())
        .await
}

/// Which of the sessions `ids` are live at `now`, with when each expires.
pub async fn live(
    db: &Database,
    ids: &[String],
    now: DateTime<Utc>,
) -> Result<Vec<(String, DateTime<Utc>)>, DbErr> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = sessions::Entity::find()
        .filter(sessions::Column::Id.is_in(ids.iter().cloned()))
        .filter(sessions::Column::ExpiresAt.gt(now))
        .all(db.conn())
        .await?;
    Ok(rows.into_iter().map(|s| (s.id, s.expires_at)).collect())
}

/// Deletes one session of `user_id` by id; `false` if there was none.
pub async fn delete_for_user(db: &Database, user_id: &UserId, id: &str) -> Result<bool, DbErr> {
    let result = sessions::Entity::delete_many()
        .filter(sessions::Column::UserId.eq(user_id))
        .filter(sessions::Column::Id.eq(id))
        .exec(db.conn())
        .await?;
    db.credentials_changed(user_id);
    Ok(result.rows_affected > 0)
}

/// Deletes one session of `user_id` by token hash; `false` if there was none.
pub async fn delete_by_token_hash_for_user(
    db: &Database,
    user_id: &UserId,
    token_hash: &str,
) -> Result<bool, DbErr> {
    let result = sessions::Entity::delete_many()
        .filter(sessions::Column::UserId.eq(user_id))
        .filter(sessions::Column::TokenHash.eq(token_hash))
        .exec(db.conn())
        .await?;
    db.credentials_changed(user_id);
    Ok(result.rows_affected > 0)
}

/// Deletes `user_id`'s session `id`.
pub async fn delete(db: &Database, user_id: &UserId, id: &str) -> Result<(), DbErr> {
    sessions::Entity::delete_by_id(id.to_owned())
        .exec(db.conn())
        .await?;
    db.credentials_changed(user_id);
    Ok(())
}

/// Deletes every session of `user_id`, except `keep` when given, in `txn`; the cached
/// sessions are forgotten once it commits. Outside a transaction, [`end_all_for_user`].
pub async fn delete_all_for_user(
    txn: &WriteTxn,
    user_id: &UserId,
    keep: Option<&str>,
) -> Result<u64, DbErr> {
    txn.credentials_changed(user_id);
    delete_rows_of_user(txn, user_id, keep).await
}

async fn delete_rows_of_user(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    keep: Option<&str>,
) -> Result<u64, DbErr> {
    let mut query = sessions::Entity::delete_many().filter(sessions::Column::UserId.eq(user_id));
    if let Some(keep) = keep {
        query = query.filter(sessions::Column::Id.ne(keep));
    }
    Ok(query.exec(db).await?.rows_affected)
}

/// Deletes every session of `user_id`, except `keep` when given, and forgets the cached
/// ones; outside a transaction.
pub async fn end_all_for_user(
    db: &Database,
    user_id: &UserId,
    keep: Option<&str>,
) -> Result<u64, DbErr> {
    let ended = delete_rows_of_user(db.conn(), user_id, keep).await?;
    db.credentials_changed(user_id);
    Ok(ended)
}

/// Deletes expired sessions (cleanup).
pub async fn delete_expired(db: &Database, now: DateTime<Utc>) -> Result<u64, DbErr> {
    Ok(sessions::Entity::delete_many()
        .filter(sessions::Column::ExpiresAt.lte(now))
        .exec(db.conn())
        .await?
        .rows_affected)
}
