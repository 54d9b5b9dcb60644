//! Leases on connected accounts, so that with several instances on one database each
//! account's sync runs on one of them at a time, and "sync now" requests that an instance
//! not holding an account passes to the one that does.
//!
//! A lease is taken (or renewed) with one conditional `UPDATE` — free, expired, or already
//! ours — which is atomic on both backends; the row is created on first use.

use chrono::{DateTime, Utc};
use entities::provider_leases::{self, Column, Entity};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ActiveValue::Set, ColumnTrait, DbErr, EntityTrait, QueryFilter};

use super::Database;
use super::statements::Unique;
use crate::domain::providers::AccountKey;

/// Makes sure `key` has a row.
async fn ensure_row(db: &Database, key: &AccountKey) -> Result<(), DbErr> {
    let row = provider_leases::ActiveModel {
        provider: Set(key.provider.as_str().to_owned()),
        account_id: Set(key.id.clone()),
        lease_owner: Set(None),
        lease_until: Set(None),
        pull_requested_at: Set(None),
        pulled_at: Set(None),
        pull_ok: Set(None),
    };
    Entity::insert(row)
        .on_conflict_do_nothing_on([Column::Provider, Column::AccountId])
        .exec_without_returning(db.conn())
        .await?;
    Ok(())
}

/// Takes or renews the lease on `key` for `owner` until `until`, if it is free, expired or
/// already `owner`'s. `true` when `owner` holds it now.
pub async fn hold(
    db: &Database,
    key: &AccountKey,
    owner: &str,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<bool, DbErr> {
    ensure_row(db, key).await?;
    let result = Entity::update_many()
        .col_expr(Column::LeaseOwner, Expr::value(owner))
        .col_expr(Column::LeaseUntil, Expr::value(until))
        .filter(Column::Provider.eq(key.provider.as_str()))
        .filter(Column::AccountId.eq(key.id.as_str()))
        .filter(
            Column::LeaseUntil
                .is_null()
                .or(Column::LeaseUntil.lt(now))
                .or(Column::LeaseOwner.eq(owner)),
        )
        .exec(db.conn())
        .await?;
    Ok(result.rows_affected == 1)
}

/// Gives up `owner`'s lease on `key` (another instance may take it at once).
pub async fn release(db: &Database, key: &AccountKey, owner: &str) -> Result<(), DbErr> {
    Entity::update_many()
        .col_expr(Column::LeaseOwner, Expr::value(Option::<String>::None))
        .col_expr(
            Column::LeaseUntil,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .filter(Column::Provider.eq(key.provider.as_str()))
        .filter(Column::AccountId.eq(key.id.as_str()))
        .filter(Column::LeaseOwner.eq(owner))
        .exec(db.conn())
        .await?;
    Ok(())
}

/// Asks the holder of `key` to pull it (recorded at `at`).
pub async fn request_pull(db: &Database, key: &AccountKey, at: DateTime<Utc>) -> Result<(), DbErr> {
    ensure_row(db, key).await?;
    Entity::update_many()
        .col_expr(Column::PullRequestedAt, Expr::value(at))
        .filter(Column::Provider.eq(key.provider.as_str()))
        .filter(Column::AccountId.eq(key.id.as_str()))
        .exec(db.conn())
        .await?;
    Ok(())
}

/// The time of a pull request on `key` not answered yet, if any.
pub async fn pull_requested(
    db: &Database,
    key: &AccountKey,
) -> Result<Option<DateTime<Utc>>, DbErr> {
    let row = find(db, key).await?;
    Ok(row.and_then(|row| {
        let requested = row.pull_requested_at?;
        row.pulled_at
            .is_none_or(|pulled| pulled < requested)
            .then_some(requested)
    }))
}

/// Records that a pull of `key` answering requests up to `pulled_at` ended (`ok`).
pub async fn record_pull(
    db: &Database,
    key: &AccountKey,
    pulled_at: DateTime<Utc>,
    ok: bool,
) -> Result<(), DbErr> {
    Entity::update_many()
        .col_expr(Column::PulledAt, Expr::value(pulled_at))
        .col_expr(Column::PullOk, Expr::value(ok))
        .filter(Column::Provider.eq(key.provider.as_str()))
        .filter(Column::AccountId.eq(key.id.as_str()))
        .exec(db.conn())
        .await?;
    Ok(())
}

/// How the first pull of `key` answering a request made at `requested` went: `None` while
/// none has ended.
pub async fn pulled_since(
    db: &Database,
    key: &AccountKey,
    requested: DateTime<Utc>,
) -> Result<Option<bool>, DbErr> {
    let row = find(db, key).await?;
    Ok(row.and_then(|row| {
        row.pulled_at
            .filter(|pulled| *pulled >= requested)
            .map(|_| row.pull_ok.unwrap_or(false))
    }))
}

/// The row of `key`, if it has one.
pub async fn find(
    db: &Database,
    key: &AccountKey,
) -> Result<Option<provider_leases::Model>, DbErr> {
    Entity::find_by_id((key.provider.as_str().to_owned(), key.id.clone()))
        .unique(db.conn())
        .await
}

/// Forgets `key` (the account was removed).
pub async fn forget(db: &Database, key: &AccountKey) -> Result<(), DbErr> {
    Entity::delete_many()
        .filter(Column::Provider.eq(key.provider.as_str()))
        .filter(Column::AccountId.eq(key.id.as_str()))
        .exec(db.conn())
        .await?;
    Ok(())
}
