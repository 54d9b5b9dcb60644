//! Google and Microsoft accounts linked with calendar consent: sign-in `accounts` rows that
//! also hold sealed OAuth tokens, the account's label at the provider, and whether the
//! provider still accepts the refresh token. A row without a refresh token (a plain sign-in
//! identity, or one whose tokens were revoked) mirrors nothing.

use chrono::{DateTime, Utc};
use entities::accounts;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder, SqlErr,
};

use crate::domain::ids::{AccountId, UserId};
use crate::domain::providers::Provider;

/// The account of `provider` with the provider's subject id `account_id`.
pub async fn find(
    db: &impl ConnectionTrait,
    provider: Provider,
    account_id: &AccountId,
) -> Result<Option<accounts::Model>, DbErr> {
    accounts::Entity::find()
        .filter(accounts::Column::ProviderId.eq(provider.as_str()))
        .filter(accounts::Column::AccountId.eq(account_id))
        .one(db)
        .await
}

/// The user's accounts of `provider`, oldest first.
pub async fn of_user(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    provider: Provider,
) -> Result<Vec<accounts::Model>, DbErr> {
    accounts::Entity::find()
        .filter(accounts::Column::UserId.eq(user_id))
        .filter(accounts::Column::ProviderId.eq(provider.as_str()))
        .order_by_asc(accounts::Column::CreatedAt)
        .order_by_asc(accounts::Column::Id)
        .all(db)
        .await
}

/// Every Google and Microsoft account that holds a refresh token (the sync actors to start).
pub async fn all_connected(db: &impl ConnectionTrait) -> Result<Vec<accounts::Model>, DbErr> {
    accounts::Entity::find()
        .filter(
            accounts::Column::ProviderId
                .is_in([Provider::Google.as_str(), Provider::Microsoft.as_str()]),
        )
        .filter(accounts::Column::RefreshToken.is_not_null())
        .order_by_asc(accounts::Column::Id)
        .all(db)
        .await
}

/// Tokens from a code exchange, sealed.
#[derive(Debug, Clone)]
pub struct SealedTokens {
    /// The access token.
    pub access_token: String,
    /// The refresh token, when the provider issued one.
    pub refresh_token: Option<String>,
    /// When the access token expires.
    pub expires_at: Option<DateTime<Utc>>,
    /// The granted scopes, comma-separated (better-auth's stored form).
    pub scope: Option<String>,
    /// The account's email at the provider.
    pub label: Option<String>,
}

/// What linking did.
#[derive(Debug, Clone)]
pub enum Linked {
    /// A new account row.
    Created(accounts::Model),
    /// The user's existing account of that identity, its tokens replaced and its reconnect
    /// status cleared.
    Updated(accounts::Model),
    /// The identity belongs to another user: nothing changed.
    OtherUser,
}

/// Links the identity (`provider`, `account_id`) to `user_id` with `tokens`, or refreshes the
/// tokens of the user's existing link (a refresh token not sent again is kept).
pub async fn link_with_tokens(
    txn: &impl ConnectionTrait,
    user_id: &UserId,
    provider: Provider,
    account_id: &AccountId,
    tokens: SealedTokens,
    now: DateTime<Utc>,
) -> Result<Linked, DbErr> {
    if let Some(existing) = find(txn, provider, account_id).await? {
        if existing.user_id != *user_id {
            return Ok(Linked::OtherUser);
        }
        let refresh_token = tokens.refresh_token.or(existing.refresh_token.clone());
        let mut active: accounts::ActiveModel = existing.into();
        active.access_token = Set(Some(tokens.access_token));
        active.refresh_token = Set(refresh_token);
        active.access_token_expires_at = Set(tokens.expires_at);
        active.scope = Set(tokens.scope);
        active.label = Set(tokens.label);
        active.sync_status = Set(None);
        active.sync_error_code = Set(None);
        active.updated_at = Set(now);
        return active.update(txn).await.map(Linked::Updated);
    }
    let inserted = accounts::ActiveModel {
        id: Set(crate::domain::ids::new_id()),
        user_id: Set(user_id.to_owned()),
        provider_id: Set(provider.as_str().to_owned()),
        account_id: Set(account_id.to_owned()),
        password_hash: Set(None),
        scope: Set(tokens.scope),
        access_token: Set(Some(tokens.access_token)),
        refresh_token: Set(tokens.refresh_token),
        access_token_expires_at: Set(tokens.expires_at),
        label: Set(tokens.label),
        sync_status: Set(None),
        sync_error_code: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(txn)
    .await;
    match inserted {
        Ok(account) => Ok(Linked::Created(account)),
        // Linked by someone else at the same moment.
        Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
            Ok(Linked::OtherUser)
        }
        Err(err) => Err(err),
    }
}

/// Stores the tokens of a refresh (sealed); a refresh token is replaced only when the
/// provider sent a new one.
pub async fn store_refreshed(
    db: &impl ConnectionTrait,
    id: &str,
    access_token: &str,
    expires_at: Option<DateTime<Utc>>,
    refresh_token: Option<&str>,
) -> Result<(), DbErr> {
    let mut update = accounts::Entity::update_many()
        .col_expr(accounts::Column::AccessToken, Expr::value(access_token))
        .col_expr(
            accounts::Column::AccessTokenExpiresAt,
            Expr::value(expires_at),
        )
        .col_expr(accounts::Column::UpdatedAt, Expr::value(Utc::now()));
    if let Some(refresh_token) = refresh_token {
        update = update.col_expr(accounts::Column::RefreshToken, Expr::value(refresh_token));
    }
    update.filter(accounts::Column::Id.eq(id)).exec(db).await?;
    Ok(())
}

/// The provider refused the refresh token: the account needs its owner to link it again.
/// Its tokens are forgotten and `code` (the provider's error code) is kept for its owner.
pub async fn require_reconnect(
    db: &impl ConnectionTrait,
    id: &str,
    code: &str,
) -> Result<(), DbErr> {
    accounts::Entity::update_many()
        .col_expr(
            accounts::Column::AccessToken,
            Expr::value(Option::<String>::None),
        )
        .col_expr(
            accounts::Column::RefreshToken,
            Expr::value(Option::<String>::None),
        )
        .col_expr(
            accounts::Column::AccessTokenExpiresAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(
            accounts::Column::SyncStatus,
            Expr::value("reconnect_required"),
        )
        .col_expr(accounts::Column::SyncErrorCode, Expr::value(code))
        .col_expr(accounts::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(accounts::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Forgets an account's calendar tokens and scope (revoked, or disconnected while the
/// sign-in identity stays), leaving its status clear.
pub async fn clear_tokens(db: &impl ConnectionTrait, id: &str) -> Result<(), DbErr> {
    accounts::Entity::update_many()
        .col_expr(
            accounts::Column::AccessToken,
            Expr::value(Option::<String>::None),
        )
        .col_expr(
            accounts::Column::RefreshToken,
            Expr::value(Option::<String>::None),
        )
        .col_expr(
            accounts::Column::AccessTokenExpiresAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(accounts::Column::Scope, Expr::value(Option::<String>::None))
        .col_expr(
            accounts::Column::SyncStatus,
            Expr::value(Option::<String>::None),
        )
        .col_expr(
            accounts::Column::SyncErrorCode,
            Expr::value(Option::<String>::None),
        )
        .col_expr(accounts::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(accounts::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Deletes the account row (unlinking the identity).
pub async fn delete(db: &impl ConnectionTrait, id: &str) -> Result<(), DbErr> {
    accounts::Entity::delete_by_id(id.to_owned())
        .exec(db)
        .await?;
    Ok(())
}

/// How many sign-in accounts the user has (an identity is unlinked only if another remains).
pub async fn sign_in_methods(db: &impl ConnectionTrait, user_id: &UserId) -> Result<u64, DbErr> {
    use sea_orm::PaginatorTrait;
    accounts::Entity::find()
        .filter(accounts::Column::UserId.eq(user_id))
        .count(db)
        .await
}
