//! Settings as clients read them: the raw row (the settings fields plus `id`, `createdAt`,
//! `updatedAt`, `revision`) and the document `{revision, updatedAt, value}`.

use entities::user_settings;
use serde_json::{Value, json};

use crate::domain::settings;
use crate::domain::time::format_timestamp;

/// The raw row of `GET`/`PUT /api/v1/users/settings`.
pub fn row(row: &user_settings::Model) -> Value {
    let mut value = settings::with_defaults(&row.value);
    if let Some(fields) = value.as_object_mut() {
        fields.insert("id".into(), row.user_id.clone().into());
        fields.insert("createdAt".into(), format_timestamp(row.created_at).into());
        fields.insert("updatedAt".into(), format_timestamp(row.updated_at).into());
        fields.insert("revision".into(), row.revision.into());
    }
    value
}

/// The settings document (also the `current` of a 409).
pub fn document(row: &user_settings::Model) -> Value {
    json!({
        "revision": row.revision,
        "updatedAt": format_timestamp(row.updated_at),
        "value": settings::with_defaults(&row.value),
    })
}
