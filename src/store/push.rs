//! Web push: browsers' subscriptions (one per endpoint, owned by the session that made it)
//! and the dispatcher's durable state (its cursor and the lease that lets one instance at a
//! time send).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use entities::{push_dispatch, push_subscriptions};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder,
};
use uuid::Uuid;

use super::Database;
use crate::domain::ids::UserId;

/// A browser to push to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// The push service's URL for it.
    pub endpoint: String,
    /// Its P-256 public key, base64url.
    pub p256dh: String,
    /// Its authentication secret, base64url.
    pub auth: String,
}

/// A new or renewed subscription.
#[derive(Debug, Clone)]
pub struct NewSubscription<'a> {
    /// The subscribing user.
    pub user: &'a UserId,
    /// The session that subscribed it.
    pub session_id: &'a str,
    /// The browser.
    pub subscription: Subscription,
}

/// Stores a subscription. Subscribing an endpoint again renews its keys, and moves it to
/// whoever subscribed it last (a shared browser's next user).
pub async fn subscribe(
    db: &Database,
    new: NewSubscription<'_>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let row = push_subscriptions::ActiveModel {
        id: Set(Uuid::new_v4()),
        user_id: Set(new.user.clone()),
        session_id: Set(new.session_id.to_owned()),
        endpoint: Set(new.subscription.endpoint),
        p256dh: Set(new.subscription.p256dh),
        auth: Set(new.subscription.auth),
        created_at: Set(now),
        last_seen_at: Set(now),
    };
    db.write(async |txn| {
        push_subscriptions::Entity::insert(row)
            .on_conflict(
                OnConflict::column(push_subscriptions::Column::Endpoint)
                    .update_columns([
                        push_subscriptions::Column::UserId,
                        push_subscriptions::Column::SessionId,
                        push_subscriptions::Column::P256dh,
                        push_subscriptions::Column::Auth,
                        push_subscriptions::Column::LastSeenAt,
                    ])
                    .to_owned(),
            )
            .exec_without_returning(txn)
            .await
    })
    .await?;
    Ok(())
}

/// Removes `user`'s subscription of `endpoint` (another user's is left alone).
pub async fn unsubscribe(db: &Database, user: &UserId, endpoint: &str) -> Result<bool, DbErr> {
    let removed = db
        .write(async |txn| {
            push_subscriptions::Entity::delete_many()
                .filter(push_subscriptions::Column::UserId.eq(user))
                .filter(push_subscriptions::Column::Endpoint.eq(endpoint))
                .exec(txn)
                .await
        })
        .await?;
    Ok(removed.rows_affected > 0)
}

/// Removes the subscriptions of `endpoints` (their push services said they are gone).
pub async fn remove_endpoints(db: &Database, endpoints: &[String]) -> Result<(), DbErr> {
    if endpoints.is_empty() {
        return Ok(());
    }
    db.write(async |txn| {
        for chunk in endpoints.chunks(500) {
            push_subscriptions::Entity::delete_many()
                .filter(push_subscriptions::Column::Endpoint.is_in(chunk.iter().cloned()))
                .exec(txn)
                .await?;
        }
        Ok::<_, DbErr>(())
    })
    .await
}

/// Marks `endpoints` as having accepted a message at `now`.
pub async fn mark_seen(
    db: &Database,
    endpoints: &[String],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    if endpoints.is_empty() {
        return Ok(());
    }
    db.write(async |txn| {
        for chunk in endpoints.chunks(500) {
            push_subscriptions::Entity::update_many()
                .col_expr(push_subscriptions::Column::LastSeenAt, Expr::value(now))
                .filter(push_subscriptions::Column::Endpoint.is_in(chunk.iter().cloned()))
                .exec(txn)
                .await?;
        }
        Ok::<_, DbErr>(())
    })
    .await
}

/// Every subscription, by user.
pub async fn by_user(
    db: &impl ConnectionTrait,
) -> Result<BTreeMap<UserId, Vec<Subscription>>, DbErr> {
    let rows = push_subscriptions::Entity::find()
        .order_by_asc(push_subscriptions::Column::UserId)
        .order_by_asc(push_subscriptions::Column::Endpoint)
        .all(db)
        .await?;
    let mut users: BTreeMap<UserId, Vec<Subscription>> = BTreeMap::new();
    for row in rows {
        users.entry(row.user_id).or_default().push(Subscription {
            endpoint: row.endpoint,
            p256dh: row.p256dh,
            auth: row.auth,
        });
    }
    Ok(users)
}

/// How many subscriptions there are.
pub async fn count(db: &impl ConnectionTrait) -> Result<u64, DbErr> {
    push_subscriptions::Entity::find().count(db).await
}

/// Takes (or renews) the dispatcher `name` for `holder` until `until`, unless another
/// instance holds it past `now`. With it: how far the dispatch has sent (`None`: never).
pub async fn claim(
    db: &Database,
    name: &str,
    holder: &str,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Option<Option<DateTime<Utc>>>, DbErr> {
    db.write(async |txn| {
        push_dispatch::Entity::insert(push_dispatch::ActiveModel {
            name: Set(name.to_owned()),
            cursor: Set(None),
            holder: Set(None),
            lease_until: Set(None),
        })
        .on_conflict(
            OnConflict::column(push_dispatch::Column::Name)
                .do_nothing()
                .to_owned(),
        )
        .exec_without_returning(txn)
        .await?;
        let claimed = push_dispatch::Entity::update_many()
            .col_expr(push_dispatch::Column::Holder, Expr::value(holder))
            .col_expr(push_dispatch::Column::LeaseUntil, Expr::value(until))
            .filter(push_dispatch::Column::Name.eq(name))
            .filter(
                Condition::any()
                    .add(push_dispatch::Column::Holder.is_null())
                    .add(push_dispatch::Column::Holder.eq(holder))
                    .add(push_dispatch::Column::LeaseUntil.is_null())
                    .add(push_dispatch::Column::LeaseUntil.lt(now)),
            )
            .exec(txn)
            .await?;
        if claimed.rows_affected == 0 {
            return Ok(None);
        }
        let row = push_dispatch::Entity::find_by_id(name.to_owned())
            .one(txn)
            .await?;
        Ok(Some(row.and_then(|row| row.cursor)))
    })
    .await
}

/// Records that `holder` dispatched everything due before `to`; `false` (nothing written)
/// when it no longer holds the dispatcher.
pub async fn advance(
    db: &Database,
    name: &str,
    holder: &str,
    to: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let advanced = db
        .write(async |txn| {
            push_dispatch::Entity::update_many()
                .col_expr(push_dispatch::Column::Cursor, Expr::value(to))
                .filter(push_dispatch::Column::Name.eq(name))
                .filter(push_dispatch::Column::Holder.eq(holder))
                .exec(txn)
                .await
        })
        .await?;
    Ok(advanced.rows_affected == 1)
}

/// Lets go of the dispatcher (a clean shutdown), so another instance takes it at once.
pub async fn release(db: &Database, name: &str, holder: &str) -> Result<(), DbErr> {
    db.write(async |txn| {
        push_dispatch::Entity::update_many()
            .col_expr(
                push_dispatch::Column::LeaseUntil,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .col_expr(
                push_dispatch::Column::Holder,
                Expr::value(Option::<String>::None),
            )
            .filter(push_dispatch::Column::Name.eq(name))
            .filter(push_dispatch::Column::Holder.eq(holder))
            .exec(txn)
            .await
    })
    .await?;
    Ok(())
}
