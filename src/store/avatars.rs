//! Avatar images, stored in the database next to the user, and the user's `image` URL that
//! points at the current version.

use chrono::{DateTime, Utc};
use entities::{avatars, users};
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect,
};

use super::Database;
use super::statements::Unique;
use crate::domain::avatars::AvatarImage;
use crate::domain::ids::UserId;

/// Stores the user's avatar (replacing any earlier one) under a new version (the upload
/// time in milliseconds, always above the previous version) and points the user's `image`
/// at `url_of(version)`, in one transaction. Returns that URL; `None` when the user no
/// longer exists.
pub async fn save(
    db: &Database,
    user_id: &UserId,
    image: AvatarImage,
    url_of: impl FnOnce(i64) -> String,
    now: DateTime<Utc>,
) -> Result<Option<String>, DbErr> {
    let txn = db.begin_write().await?;
    let previous = avatars::Entity::find_by_id(user_id.to_owned())
        .lock_exclusive()
        .unique(&txn)
        .await?
        .map_or(i64::MIN, |avatar| avatar.version);
    let version = now.timestamp_millis().max(previous.saturating_add(1));
    let url = url_of(version);
    let updated = users::Entity::update_many()
        .col_expr(users::Column::Image, url.as_str().into())
        .col_expr(users::Column::UpdatedAt, now.into())
        .filter(users::Column::Id.eq(user_id))
        .exec(&txn)
        .await?;
    if updated.rows_affected == 0 {
        return Ok(None);
    }
    let row = avatars::ActiveModel {
        user_id: Set(user_id.to_owned()),
        mime: Set(image.mime.to_owned()),
        bytes: Set(image.bytes),
        version: Set(version),
        updated_at: Set(now),
    };
    avatars::Entity::insert(row)
        .on_conflict(
            OnConflict::column(avatars::Column::UserId)
                .update_columns([
                    avatars::Column::Mime,
                    avatars::Column::Bytes,
                    avatars::Column::Version,
                    avatars::Column::UpdatedAt,
                ])
                .to_owned(),
        )
        .exec_without_returning(&txn)
        .await?;
    txn.commit().await?;
    db.credentials_changed(user_id);
    Ok(Some(url))
}

/// The user's avatar, if any.
pub async fn find(
    db: &impl ConnectionTrait,
    user_id: &UserId,
) -> Result<Option<avatars::Model>, DbErr> {
    avatars::Entity::find_by_id(user_id.to_owned())
        .unique(db)
        .await
}
