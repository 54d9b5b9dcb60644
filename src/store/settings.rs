//! Per-user settings documents.

use entities::user_settings;
use sea_orm::{ConnectionTrait, DbErr, EntityTrait};
use serde_json::Value;

/// The stored settings value of a user, if any.
pub async fn value_of(db: &impl ConnectionTrait, user_id: &str) -> Result<Option<Value>, DbErr> {
    Ok(user_settings::Entity::find_by_id(user_id.to_owned())
        .one(db)
        .await?
        .map(|row| row.value))
}
