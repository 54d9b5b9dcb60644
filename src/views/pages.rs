//! The `PageDocument`: a Page as its owner reads it, with calendars the owner can no longer
//! access dropped from its config.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use entities::pages;
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use crate::domain::pages::without_inaccessible;

/// One Page.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageDocument {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Position among the owner's active Pages.
    pub position: i32,
    /// The default Page.
    pub is_default: bool,
    /// `PageConfigV1`.
    #[schema(value_type = super::page_config::PageConfigV1)]
    pub config: Value,
    /// Revision (compare-and-swap).
    pub revision: i64,
    /// Creation time.
    #[serde(serialize_with = "super::timestamp")]
    pub created_at: DateTime<Utc>,
    /// Last change.
    #[serde(serialize_with = "super::timestamp")]
    pub updated_at: DateTime<Utc>,
}

impl PageDocument {
    /// The document of `page` for a reader with access to `calendars` (ids as text).
    pub fn new(page: &pages::Model, calendars: &HashSet<String>) -> Self {
        Self {
            id: page.id.uuid(),
            name: page.name.clone(),
            position: page.position,
            is_default: page.is_default,
            config: without_inaccessible(&page.config, calendars),
            revision: page.revision,
            created_at: page.created_at,
            updated_at: page.updated_at,
        }
    }
}
