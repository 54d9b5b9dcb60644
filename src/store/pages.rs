//! Pages: a user's private view profiles. Writers lock the owner's user row first, so one
//! user's Page changes are serialized across processes (SQLite write transactions are
//! serialized anyway); the partial unique index keeps at most one active default.

use chrono::{DateTime, Utc};
use entities::{pages, users};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect,
};
use serde_json::Value;

use super::statements::Unique;
use crate::domain::ids::{PageId, UserId};

/// Locks the owner's user row for the rest of the transaction; `false` when the user is gone.
pub async fn lock_owner(txn: &impl ConnectionTrait, user_id: &UserId) -> Result<bool, DbErr> {
    Ok(users::Entity::find_by_id(user_id.to_owned())
        .lock_exclusive()
        .unique(txn)
        .await?
        .is_some())
}

/// The user's active Pages by position (then creation).
pub async fn active(
    db: &impl ConnectionTrait,
    user_id: &UserId,
) -> Result<Vec<pages::Model>, DbErr> {
    pages::Entity::find()
        .filter(pages::Column::UserId.eq(user_id))
        .filter(pages::Column::DeletedAt.is_null())
        .order_by_asc(pages::Column::Position)
        .order_by_asc(pages::Column::CreatedAt)
        .order_by_asc(pages::Column::Id)
        .all(db)
        .await
}

/// One of the user's active Pages.
pub async fn find_active(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    id: PageId,
) -> Result<Option<pages::Model>, DbErr> {
    pages::Entity::find_by_id(id)
        .filter(pages::Column::UserId.eq(user_id))
        .filter(pages::Column::DeletedAt.is_null())
        .unique(db)
        .await
}

/// A Page to create.
#[derive(Debug, Clone)]
pub struct NewPage {
    /// Owner.
    pub user_id: UserId,
    /// Name (validated).
    pub name: String,
    /// Position.
    pub position: i32,
    /// Default flag.
    pub is_default: bool,
    /// Config (validated, canonical).
    pub config: Value,
}

/// Inserts a Page at revision 1.
pub async fn insert(
    txn: &impl ConnectionTrait,
    new: NewPage,
    now: DateTime<Utc>,
) -> Result<pages::Model, DbErr> {
    pages::ActiveModel {
        id: Set(PageId::generate()),
        user_id: Set(new.user_id),
        name: Set(new.name),
        position: Set(new.position),
        is_default: Set(new.is_default),
        config: Set(new.config),
        revision: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        deleted_at: Set(None),
    }
    .insert(txn)
    .await
}

/// Writes a changed Page: name, position, default flag, config, revision and deletion as
/// they are in `page`, with `updated_at` set to `now`.
pub async fn update(
    txn: &impl ConnectionTrait,
    page: pages::Model,
    now: DateTime<Utc>,
) -> Result<pages::Model, DbErr> {
    pages::ActiveModel {
        id: Set(page.id),
        user_id: Set(page.user_id),
        name: Set(page.name),
        position: Set(page.position),
        is_default: Set(page.is_default),
        config: Set(page.config),
        revision: Set(page.revision),
        created_at: Set(page.created_at),
        updated_at: Set(now),
        deleted_at: Set(page.deleted_at),
    }
    .update(txn)
    .await
}
