//! Connected CalDAV accounts: the server, the user name, the sealed password and what
//! discovery found, and whether the server still accepts the credentials.

use crate::domain::ids::{CaldavAccountId, UserId};
use chrono::{DateTime, Utc};
use entities::caldav_accounts;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder,
};

/// The CalDAV accounts of `user_id`, oldest first.
pub async fn caldav_accounts_of(
    db: &impl ConnectionTrait,
    user_id: &UserId,
) -> Result<Vec<caldav_accounts::Model>, DbErr> {
    caldav_accounts::Entity::find()
        .filter(caldav_accounts::Column::UserId.eq(user_id))
        .order_by_asc(caldav_accounts::Column::CreatedAt)
        .order_by_asc(caldav_accounts::Column::Id)
        .all(db)
        .await
}

/// Every CalDAV account (the sync actors to start).
pub async fn all_caldav_accounts(
    db: &impl ConnectionTrait,
) -> Result<Vec<caldav_accounts::Model>, DbErr> {
    caldav_accounts::Entity::find()
        .order_by_asc(caldav_accounts::Column::Id)
        .all(db)
        .await
}

/// One CalDAV account.
pub async fn caldav_account(
    db: &impl ConnectionTrait,
    id: CaldavAccountId,
) -> Result<Option<caldav_accounts::Model>, DbErr> {
    caldav_accounts::Entity::find_by_id(id).one(db).await
}

/// What discovery found for a new or reconnected account.
#[derive(Debug, Clone)]
pub struct CaldavAccountInput {
    /// The user.
    pub user_id: UserId,
    /// The server URL as given.
    pub server_url: String,
    /// The user name there.
    pub username: String,
    /// The sealed password.
    pub encrypted_password: String,
    /// The principal.
    pub principal_url: String,
    /// The calendar home.
    pub home_url: String,
}

/// Stores the account, or (same user, server and user name) replaces its password and
/// discovery results and clears a reconnect status.
pub async fn save_caldav_account(
    txn: &impl ConnectionTrait,
    input: CaldavAccountInput,
    now: DateTime<Utc>,
) -> Result<caldav_accounts::Model, DbErr> {
    let existing = caldav_accounts::Entity::find()
        .filter(caldav_accounts::Column::UserId.eq(&input.user_id))
        .filter(caldav_accounts::Column::ServerUrl.eq(&input.server_url))
        .filter(caldav_accounts::Column::Username.eq(&input.username))
        .one(txn)
        .await?;
    match existing {
        Some(account) => {
            let mut active: caldav_accounts::ActiveModel = account.into();
            active.encrypted_password = Set(input.encrypted_password);
            active.principal_url = Set(input.principal_url);
            active.home_url = Set(input.home_url);
            active.sync_status = Set(None);
            active.sync_error_code = Set(None);
            active.updated_at = Set(now);
            active.update(txn).await
        }
        None => {
            caldav_accounts::ActiveModel {
                id: Set(CaldavAccountId::generate()),
                user_id: Set(input.user_id),
                server_url: Set(input.server_url),
                username: Set(input.username),
                encrypted_password: Set(input.encrypted_password),
                principal_url: Set(input.principal_url),
                home_url: Set(input.home_url),
                sync_status: Set(None),
                sync_error_code: Set(None),
                created_at: Set(now),
                updated_at: Set(now),
            }
            .insert(txn)
            .await
        }
    }
}

/// Sets (or, with `None`, clears) an account's reconnect status.
pub async fn set_caldav_status(
    db: &impl ConnectionTrait,
    id: CaldavAccountId,
    status: Option<(&str, &str)>,
) -> Result<(), DbErr> {
    caldav_accounts::Entity::update_many()
        .col_expr(
            caldav_accounts::Column::SyncStatus,
            Expr::value(status.map(|(s, _)| s.to_owned())),
        )
        .col_expr(
            caldav_accounts::Column::SyncErrorCode,
            Expr::value(status.map(|(_, c)| c.to_owned())),
        )
        .col_expr(caldav_accounts::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(caldav_accounts::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Deletes an account's row (its mirrors are removed by the caller in the same
/// transaction).
pub async fn delete_caldav_account(
    txn: &impl ConnectionTrait,
    id: CaldavAccountId,
) -> Result<(), DbErr> {
    caldav_accounts::Entity::delete_by_id(id).exec(txn).await?;
    Ok(())
}
