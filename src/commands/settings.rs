//! Settings changes: replace (PUT, complete settings) and compare-and-swap patch (PATCH).
//! Each locks the user's settings row, merges the sent fields over the stored value (omitted
//! fields are kept), applies the reminder/switch coupling, bumps the revision in one
//! transaction, then sends `settings_updated {revision}` to every connection of the user.

use chrono::Utc;
use entities::user_settings;
use serde_json::{Map, Value, json};

use crate::commands::Services;
use crate::domain::frames::Frame;
use crate::domain::ids::UserId;
use crate::domain::settings;
use crate::error::AppError;
use crate::store::settings as settings_store;
use crate::views::settings::document;

/// 401 when the account vanished under a live request.
fn account_gone() -> AppError {
    AppError::Unauthorized("Your account no longer exists.".into())
}

/// The user's settings row, created with the defaults when missing.
pub async fn read(services: &Services, user_id: &UserId) -> Result<user_settings::Model, AppError> {
    settings_store::find_or_create(&services.db, user_id, Utc::now())
        .await?
        .ok_or_else(account_gone)
}

/// Applies `changes`; with `base_revision`, only if the stored revision still equals it
/// (else 409 `SettingsConflict` with the current document).
pub async fn write(
    services: &Services,
    user_id: &UserId,
    base_revision: Option<i64>,
    changes: &Map<String, Value>,
) -> Result<user_settings::Model, AppError> {
    let now = Utc::now();
    services
        .db
        .write(async |txn| {
            let row = settings_store::lock(txn, user_id, now)
                .await?
                .ok_or_else(account_gone)?;
            if base_revision.is_some_and(|base| base != row.revision) {
                return Err(AppError::Conflict {
                    error: "SettingsConflict".into(),
                    message: "Settings changed on another device.".into(),
                    current: Some(document(&row)),
                });
            }
            let value = settings::apply(&row.value, changes);
            let saved = settings_store::save(txn, row, value, now).await?;
            let frame = Frame::new("settings_updated", json!({ "revision": saved.revision }));
            services.within(txn).broadcast([user_id], &frame);
            Ok(saved)
        })
        .await
}
