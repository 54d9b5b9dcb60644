//! Sign-in accounts: the password (`credential`) and provider identities.

use chrono::{DateTime, Utc};
use entities::{accounts, users};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, SqlErr,
};

use super::Database;
use super::statements::Unique;
use crate::domain::ids::{AccountId, UserId};

/// Provider id of the password account.
pub const CREDENTIAL: &str = "credential";

/// The user's password account.
pub async fn find_credential(
    db: &Database,
    user_id: &UserId,
) -> Result<Option<accounts::Model>, DbErr> {
    accounts::Entity::find()
        .filter(accounts::Column::UserId.eq(user_id))
        .filter(accounts::Column::ProviderId.eq(CREDENTIAL))
        .unique(db.conn())
        .await
}

/// The account of `provider` with subject `account_id`, and its user.
pub async fn find_by_provider(
    db: &Database,
    provider: &str,
    account_id: &AccountId,
) -> Result<Option<(accounts::Model, users::Model)>, DbErr> {
    let found = accounts::Entity::find()
        .filter(accounts::Column::ProviderId.eq(provider))
        .filter(accounts::Column::AccountId.eq(account_id))
        .find_also_related(users::Entity)
        .unique(db.conn())
        .await?;
    Ok(found.and_then(|(account, user)| user.map(|user| (account, user))))
}

/// Links a provider identity to an existing user; `false` if that identity is linked already.
pub async fn link(
    db: &Database,
    user_id: &UserId,
    provider: &str,
    account_id: &AccountId,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let inserted = accounts::ActiveModel {
        id: Set(crate::domain::ids::new_id()),
        user_id: Set(user_id.to_owned()),
        provider_id: Set(provider.to_owned()),
        account_id: Set(account_id.to_owned()),
        password_hash: Set(None),
        scope: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    }
    .insert(db.conn())
    .await;
    match inserted {
        Ok(_) => Ok(true),
        Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
            Ok(false)
        }
        Err(err) => Err(err),
    }
}

/// All accounts of a user, oldest first.
pub async fn list_for_user(db: &Database, user_id: &UserId) -> Result<Vec<accounts::Model>, DbErr> {
    accounts::Entity::find()
        .filter(accounts::Column::UserId.eq(user_id))
        .order_by_asc(accounts::Column::CreatedAt)
        .all(db.conn())
        .await
}

/// How many accounts the user has.
pub async fn count_for_user(db: &Database, user_id: &UserId) -> Result<u64, DbErr> {
    accounts::Entity::find()
        .filter(accounts::Column::UserId.eq(user_id))
        .count(db.conn())
        .await
}

/// Deletes one account of the user; `false` if it is not theirs.
pub async fn delete_for_user(db: &Database, user_id: &UserId, id: &str) -> Result<bool, DbErr> {
    let result = accounts::Entity::delete_many()
        .filter(accounts::Column::UserId.eq(user_id))
        .filter(accounts::Column::Id.eq(id))
        .exec(db.conn())
        .await?;
    Ok(result.rows_affected > 0)
}

/// How a password reset by token ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordReset {
    /// The password is set and every session of the user ended.
    Done,
    /// The token was used, expired or is not `user_id`'s (any more).
    TokenSpent,
    /// The user is gone.
    UserGone,
}

/// Resets `user_id`'s password with the reset token `identifier` in one write: the token is
/// consumed (it must still be `user_id`'s), the password set to `password_hash` and every
/// session of the user deleted; nothing is written unless all of it is.
pub async fn reset_password(
    db: &Database,
    identifier: &str,
    user_id: &UserId,
    password_hash: &str,
    now: DateTime<Utc>,
) -> Result<PasswordReset, DbErr> {
    let txn = db.begin_write().await?;
    match super::verifications::consume(&txn, identifier, now).await? {
        Some(consumed) if consumed == user_id.as_str() => {}
        _ => return Ok(PasswordReset::TokenSpent),
    }
    if super::users::find(&txn, user_id).await?.is_none() {
        return Ok(PasswordReset::UserGone);
    }
    set_password(&txn, user_id, password_hash, now).await?;
    super::sessions::delete_all_for_user(&txn, user_id, None).await?;
    txn.commit().await?;
    Ok(PasswordReset::Done)
}

/// Sets the user's password, creating the password account if they had none.
pub async fn set_password(
    db: &impl sea_orm::ConnectionTrait,
    user_id: &UserId,
    password_hash: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let updated = accounts::Entity::update_many()
        .col_expr(accounts::Column::PasswordHash, password_hash.into())
        .col_expr(accounts::Column::UpdatedAt, now.into())
        .filter(accounts::Column::UserId.eq(user_id))
        .filter(accounts::Column::ProviderId.eq(CREDENTIAL))
        .exec(db)
        .await?;
    if updated.rows_affected == 0 {
        accounts::ActiveModel {
            id: Set(crate::domain::ids::new_id()),
            user_id: Set(user_id.clone()),
            provider_id: Set(CREDENTIAL.to_owned()),
            account_id: Set(AccountId::new(user_id.as_str())),
            password_hash: Set(Some(password_hash.to_owned())),
            scope: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
            ..Default::default()
        }
        .insert(db)
        .await?;
    }
    Ok(())
}
