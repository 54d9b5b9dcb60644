//! Federation member tokens: issued to a shadow user once (only the SHA-256 is kept),
//! exchanged by compare-and-swap, looked up by hash, and cleaned up past their lifetime.

use chrono::{DateTime, Duration, Utc};
use entities::{member_tokens, users};
use rand::RngCore;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter,
};
use uuid::Uuid;

use super::Database;
use super::statements::Unique;
use crate::domain::digest::sha256_hex;
use crate::domain::federation::{
    MEMBER_TOKEN_DAYS as LIFETIME_DAYS, member_token, member_token_expiry,
};
use crate::domain::ids::UserId;

/// A token just issued: its text (shown once) and when it stops authenticating.
#[derive(Debug, Clone)]
pub struct Issued {
    /// `mt1_…`.
    pub token: String,
    /// Creation + 90 days.
    pub expires_at: DateTime<Utc>,
}

/// Issues a new token to `user_id` (its row created at `now`).
pub async fn issue(
    txn: &impl ConnectionTrait,
    user_id: &UserId,
    now: DateTime<Utc>,
) -> Result<Issued, DbErr> {
    let mut random = [0u8; 32];
    rand::rng().fill_bytes(&mut random);
    let token = member_token(now, &random);
    member_tokens::ActiveModel {
        id: Set(Uuid::new_v4()),
        user_id: Set(user_id.to_owned()),
        token_hash: Set(sha256_hex(&token)),
        created_at: Set(now),
    }
    .insert(txn)
    .await?;
    Ok(Issued {
        token,
        expires_at: member_token_expiry(now),
    })
}

/// The compare-and-swap exchange of the token hashed `presented` (a live token of
/// `user_id`) for a new one: the presented row is deleted — none deleted means another
/// exchange won, and `None` comes back — then every other token of the user, then the new
/// one is issued. Run it in the caller's transaction.
pub async fn exchange(
    txn: &impl ConnectionTrait,
    user_id: &UserId,
    presented: &str,
    now: DateTime<Utc>,
) -> Result<Option<Issued>, DbErr> {
    let won = member_tokens::Entity::delete_many()
        .filter(member_tokens::Column::TokenHash.eq(presented))
        .filter(member_tokens::Column::UserId.eq(user_id))
        .filter(member_tokens::Column::CreatedAt.gt(now - Duration::days(LIFETIME_DAYS)))
        .exec(txn)
        .await?
        .rows_affected
        == 1;
    if !won {
        return Ok(None);
    }
    member_tokens::Entity::delete_many()
        .filter(member_tokens::Column::UserId.eq(user_id))
        .exec(txn)
        .await?;
    issue(txn, user_id, now).await.map(Some)
}

/// The shadow user a member token with this hash authenticates, if it is younger than 90
/// days and its user is external, with when the token stops authenticating.
pub async fn find_user(
    db: &Database,
    token_hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<(users::Model, DateTime<Utc>)>, DbErr> {
    find_user_in(db.conn(), token_hash, now).await
}

/// [`find_user`] inside a transaction.
pub async fn find_user_in(
    db: &impl ConnectionTrait,
    token_hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<(users::Model, DateTime<Utc>)>, DbErr> {
    let found = member_tokens::Entity::find()
        .filter(member_tokens::Column::TokenHash.eq(token_hash))
        .filter(member_tokens::Column::CreatedAt.gt(now - Duration::days(LIFETIME_DAYS)))
        .find_also_related(users::Entity)
        .unique(db)
        .await?;
    Ok(found.and_then(|(token, user)| {
        let expires_at = token.created_at + Duration::days(LIFETIME_DAYS);
        user.filter(|user| user.is_external)
            .map(|user| (user, expires_at))
    }))
}

/// Which of these token hashes still authenticate at `now`, with when each stops.
pub async fn live(
    db: &Database,
    token_hashes: &[String],
    now: DateTime<Utc>,
) -> Result<Vec<(String, DateTime<Utc>)>, DbErr> {
    if token_hashes.is_empty() {
        return Ok(Vec::new());
    }
    let rows = member_tokens::Entity::find()
        .filter(member_tokens::Column::TokenHash.is_in(token_hashes.iter().cloned()))
        .filter(member_tokens::Column::CreatedAt.gt(now - Duration::days(LIFETIME_DAYS)))
        .all(db.conn())
        .await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            (
                row.token_hash,
                row.created_at + Duration::days(LIFETIME_DAYS),
            )
        })
        .collect())
}

/// Deletes tokens past their lifetime (cleanup).
pub async fn delete_expired(db: &Database, now: DateTime<Utc>) -> Result<u64, DbErr> {
    Ok(member_tokens::Entity::delete_many()
        .filter(member_tokens::Column::CreatedAt.lte(now - Duration::days(LIFETIME_DAYS)))
        .exec(db.conn())
        .await?
        .rows_affected)
}
