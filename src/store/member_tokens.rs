//! Federation member tokens (looked up by hash; issued once federation lands).

use chrono::{DateTime, Duration, Utc};
use entities::{member_tokens, users};
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter};

use super::Database;
use super::Unique;

/// How long a member token authenticates.
pub const LIFETIME_DAYS: i64 = 90;

/// The shadow user a member token with this hash authenticates, if it is younger than 90
/// days and its user is external, with when the token stops authenticating.
pub async fn find_user(
    db: &Database,
    token_hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<(users::Model, DateTime<Utc>)>, DbErr> {
    let found = member_tokens::Entity::find()
        .filter(member_tokens::Column::TokenHash.eq(token_hash))
        .filter(member_tokens::Column::CreatedAt.gt(now - Duration::days(LIFETIME_DAYS)))
        .find_also_related(users::Entity)
        .unique(db.conn())
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
