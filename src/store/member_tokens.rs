//! Federation member tokens (looked up by hash; issued once federation lands).

use chrono::{DateTime, Duration, Utc};
use entities::{member_tokens, users};
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter};

use super::Database;
use super::Unique;

/// How long a member token authenticates.
pub const LIFETIME_DAYS: i64 = 90;

/// The shadow user a member token with this hash authenticates, if it is younger than 90
/// days and its user is external.
pub async fn find_user(
    db: &Database,
    token_hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<users::Model>, DbErr> {
    let found = member_tokens::Entity::find()
        .filter(member_tokens::Column::TokenHash.eq(token_hash))
        .filter(member_tokens::Column::CreatedAt.gt(now - Duration::days(LIFETIME_DAYS)))
        .find_also_related(users::Entity)
        .unique(db.conn())
        .await?;
    Ok(found
        .and_then(|(_, user)| user)
        .filter(|user| user.is_external))
}

/// Deletes tokens past their lifetime (cleanup).
pub async fn delete_expired(db: &Database, now: DateTime<Utc>) -> Result<u64, DbErr> {
    Ok(member_tokens::Entity::delete_many()
        .filter(member_tokens::Column::CreatedAt.lte(now - Duration::days(LIFETIME_DAYS)))
        .exec(db.conn())
        .await?
        .rows_affected)
}
