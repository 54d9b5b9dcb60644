//! Provider mirrors: connected CalDAV accounts, the remote calendars of each account with
//! their local mirrors, which remote resource each mirrored event belongs to, and the outbox
//! of provider writes.
//!
//! Outbox rows are written by the event commands in the same transaction as the change they
//! carry ([`enqueue`]). The account's sync actor claims them ([`claim`]): on PostgreSQL with
//! `FOR UPDATE SKIP LOCKED` and a lease, so two server processes never deliver one row
//! twice; a row leaves only when delivered ([`finish`]) or given up.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use entities::{caldav_accounts, external_calendars, external_events, provider_outbox};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbBackend, DbErr,
    EntityTrait, QueryFilter, QueryOrder, QuerySelect, Statement, Value,
};
use uuid::Uuid;

use super::Database;

/// The `provider` value of CalDAV rows.
pub const CALDAV: &str = "caldav";

/// The CalDAV accounts of `user_id`, oldest first.
pub async fn caldav_accounts_of(
    db: &impl ConnectionTrait,
    user_id: &str,
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
    id: Uuid,
) -> Result<Option<caldav_accounts::Model>, DbErr> {
    caldav_accounts::Entity::find_by_id(id).one(db).await
}

/// What discovery found for a new or reconnected account.
#[derive(Debug, Clone)]
pub struct CaldavAccountInput {
    /// The user.
    pub user_id: String,
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
                id: Set(Uuid::new_v4()),
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
    id: Uuid,
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
pub async fn delete_caldav_account(txn: &impl ConnectionTrait, id: Uuid) -> Result<(), DbErr> {
    caldav_accounts::Entity::delete_by_id(id).exec(txn).await?;
    Ok(())
}

/// The remote calendars known for an account (mirrored or disabled).
pub async fn calendars_of_account(
    db: &impl ConnectionTrait,
    provider: &str,
    account_id: &str,
) -> Result<Vec<external_calendars::Model>, DbErr> {
    external_calendars::Entity::find()
        .filter(external_calendars::Column::Provider.eq(provider))
        .filter(external_calendars::Column::AccountId.eq(account_id))
        .order_by_asc(external_calendars::Column::CreatedAt)
        .order_by_asc(external_calendars::Column::Id)
        .all(db)
        .await
}

/// The mirror rows of local calendars, by calendar.
pub async fn mirrors_of(
    db: &impl ConnectionTrait,
    calendars: &[Uuid],
) -> Result<HashMap<Uuid, external_calendars::Model>, DbErr> {
    let mut found = HashMap::new();
    for chunk in calendars.chunks(500) {
        for row in external_calendars::Entity::find()
            .filter(external_calendars::Column::CalendarId.is_in(chunk.iter().copied()))
            .all(db)
            .await?
        {
            if let Some(calendar) = row.calendar_id {
                found.insert(calendar, row);
            }
        }
    }
    Ok(found)
}

/// Records a new remote calendar mirrored into `calendar_id`.
pub async fn insert_mirror(
    txn: &impl ConnectionTrait,
    row: external_calendars::Model,
) -> Result<(), DbErr> {
    external_calendars::ActiveModel::from(row)
        .insert(txn)
        .await?;
    Ok(())
}

/// Where the last pull of a mirror ended.
pub async fn set_sync_token(
    txn: &impl ConnectionTrait,
    id: Uuid,
    token: Option<&str>,
) -> Result<(), DbErr> {
    external_calendars::Entity::update_many()
        .col_expr(
            external_calendars::Column::SyncToken,
            Expr::value(token.map(str::to_owned)),
        )
        .col_expr(
            external_calendars::Column::UpdatedAt,
            Expr::value(Utc::now()),
        )
        .filter(external_calendars::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Marks a mirror disabled (kept so discovery does not bring it back) and forgets its local
/// calendar.
pub async fn disable_mirror(txn: &impl ConnectionTrait, id: Uuid) -> Result<(), DbErr> {
    external_calendars::Entity::update_many()
        .col_expr(external_calendars::Column::Disabled, Expr::value(true))
        .col_expr(
            external_calendars::Column::CalendarId,
            Expr::value(Option::<Uuid>::None),
        )
        .col_expr(
            external_calendars::Column::SyncToken,
            Expr::value(Option::<String>::None),
        )
        .col_expr(
            external_calendars::Column::UpdatedAt,
            Expr::value(Utc::now()),
        )
        .filter(external_calendars::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Forgets remote calendars (gone at the provider, or their account disconnected).
pub async fn delete_mirrors(txn: &impl ConnectionTrait, ids: &[Uuid]) -> Result<(), DbErr> {
    if ids.is_empty() {
        return Ok(());
    }
    external_calendars::Entity::delete_many()
        .filter(external_calendars::Column::Id.is_in(ids.iter().copied()))
        .exec(txn)
        .await?;
    Ok(())
}

/// The resources of a mirror: href → its events' rows in position order.
pub async fn resources_of(
    db: &impl ConnectionTrait,
    calendar_id: Uuid,
) -> Result<HashMap<String, Vec<external_events::Model>>, DbErr> {
    let rows = external_events::Entity::find()
        .filter(external_events::Column::CalendarId.eq(calendar_id))
        .order_by_asc(external_events::Column::RemoteHref)
        .order_by_asc(external_events::Column::Position)
        .all(db)
        .await?;
    let mut by_href: HashMap<String, Vec<external_events::Model>> = HashMap::new();
    for row in rows {
        by_href
            .entry(row.remote_href.clone())
            .or_default()
            .push(row);
    }
    Ok(by_href)
}

/// Where an event lives in mirror `calendar_id`, if it was read from or pushed there.
pub async fn resource_of_event(
    db: &impl ConnectionTrait,
    calendar_id: Uuid,
    event_id: Uuid,
) -> Result<Option<external_events::Model>, DbErr> {
    external_events::Entity::find_by_id((calendar_id, event_id))
        .one(db)
        .await
}

/// Every resource row of an event (one per mirror it is in).
pub async fn resources_of_event(
    db: &impl ConnectionTrait,
    event_id: Uuid,
) -> Result<Vec<external_events::Model>, DbErr> {
    external_events::Entity::find()
        .filter(external_events::Column::EventId.eq(event_id))
        .all(db)
        .await
}

/// The rows of the events of one resource, replacing what was recorded for it.
pub async fn replace_resource(
    txn: &impl ConnectionTrait,
    calendar_id: Uuid,
    href: &str,
    rows: Vec<external_events::Model>,
) -> Result<(), DbErr> {
    forget_resource(txn, calendar_id, href).await?;
    if rows.is_empty() {
        return Ok(());
    }
    external_events::Entity::insert_many(rows.into_iter().map(external_events::ActiveModel::from))
        .exec_without_returning(txn)
        .await?;
    Ok(())
}

/// Forgets a resource's rows.
pub async fn forget_resource(
    txn: &impl ConnectionTrait,
    calendar_id: Uuid,
    href: &str,
) -> Result<(), DbErr> {
    external_events::Entity::delete_many()
        .filter(external_events::Column::CalendarId.eq(calendar_id))
        .filter(external_events::Column::RemoteHref.eq(href))
        .exec(txn)
        .await?;
    Ok(())
}

/// Forgets where an event lives in a mirror.
pub async fn forget_event(
    txn: &impl ConnectionTrait,
    calendar_id: Uuid,
    event_id: Uuid,
) -> Result<(), DbErr> {
    external_events::Entity::delete_by_id((calendar_id, event_id))
        .exec(txn)
        .await?;
    Ok(())
}

/// A provider write to deliver.
#[derive(Debug, Clone)]
pub struct OutboxWrite {
    /// Provider.
    pub provider: String,
    /// Account.
    pub account_id: String,
    /// Mirror calendar.
    pub calendar_id: Uuid,
    /// Event.
    pub event_id: Uuid,
    /// `put` or `delete`.
    pub action: &'static str,
    /// For deletes: the resource and its tag, captured now (the mapping goes with the
    /// change).
    pub remote: Option<(String, Option<String>)>,
}

/// Writes outbox rows (in the caller's transaction).
pub async fn enqueue(
    txn: &impl ConnectionTrait,
    writes: &[OutboxWrite],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    if writes.is_empty() {
        return Ok(());
    }
    let rows = writes.iter().map(|write| provider_outbox::ActiveModel {
        provider: Set(write.provider.clone()),
        account_id: Set(write.account_id.clone()),
        calendar_id: Set(write.calendar_id),
        event_id: Set(write.event_id),
        action: Set(write.action.to_owned()),
        remote_href: Set(write.remote.as_ref().map(|(href, _)| href.clone())),
        etag: Set(write.remote.as_ref().and_then(|(_, etag)| etag.clone())),
        attempts: Set(0),
        next_attempt_at: Set(now),
        claimed_by: Set(None),
        claimed_until: Set(None),
        last_error: Set(None),
        created_at: Set(now),
        ..Default::default()
    });
    provider_outbox::Entity::insert_many(rows)
        .exec_without_returning(txn)
        .await?;
    Ok(())
}

/// Claims up to `limit` due rows of an account for `instance` until `now + lease`: rows
/// nobody holds (or whose holder's lease ran out), oldest first. On PostgreSQL the rows are
/// locked `FOR UPDATE SKIP LOCKED` while claimed, so concurrent claimers never take the
/// same row; SQLite's single writer serializes claims.
pub async fn claim(
    db: &Database,
    provider: &str,
    account_id: &str,
    instance: &str,
    lease: Duration,
    limit: u64,
) -> Result<Vec<provider_outbox::Model>, DbErr> {
    let now = Utc::now();
    let txn = db.begin_write().await?;
    let backend = txn.get_database_backend();
    let due = provider_outbox::Column::ClaimedUntil
        .is_null()
        .or(provider_outbox::Column::ClaimedUntil.lt(now));
    let mut query = provider_outbox::Entity::find()
        .filter(provider_outbox::Column::Provider.eq(provider))
        .filter(provider_outbox::Column::AccountId.eq(account_id))
        .filter(provider_outbox::Column::NextAttemptAt.lte(now))
        .filter(due)
        .order_by_asc(provider_outbox::Column::Id)
        .limit(limit);
    if backend == DbBackend::Postgres {
        query = query.lock_with_behavior(
            sea_orm::sea_query::LockType::Update,
            sea_orm::sea_query::LockBehavior::SkipLocked,
        );
    }
    let rows = query.all(&txn).await?;
    if rows.is_empty() {
        txn.commit().await?;
        return Ok(rows);
    }
    let until = now + lease;
    provider_outbox::Entity::update_many()
        .col_expr(provider_outbox::Column::ClaimedBy, Expr::value(instance))
        .col_expr(provider_outbox::Column::ClaimedUntil, Expr::value(until))
        .filter(provider_outbox::Column::Id.is_in(rows.iter().map(|row| row.id)))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    Ok(rows)
}

/// Removes delivered (or given-up) rows, if `instance` still holds them.
pub async fn finish(db: &impl ConnectionTrait, ids: &[i64], instance: &str) -> Result<(), DbErr> {
    if ids.is_empty() {
        return Ok(());
    }
    provider_outbox::Entity::delete_many()
        .filter(provider_outbox::Column::Id.is_in(ids.iter().copied()))
        .filter(provider_outbox::Column::ClaimedBy.eq(instance))
        .exec(db)
        .await?;
    Ok(())
}

/// Releases rows that failed to be delivered: tried again from `next_attempt_at`.
pub async fn retry_later(
    db: &impl ConnectionTrait,
    ids: &[i64],
    next_attempt_at: DateTime<Utc>,
    error: &str,
) -> Result<(), DbErr> {
    if ids.is_empty() {
        return Ok(());
    }
    provider_outbox::Entity::update_many()
        .col_expr(
            provider_outbox::Column::Attempts,
            Expr::col(provider_outbox::Column::Attempts).add(1),
        )
        .col_expr(
            provider_outbox::Column::NextAttemptAt,
            Expr::value(next_attempt_at),
        )
        .col_expr(
            provider_outbox::Column::ClaimedBy,
            Expr::value(Option::<String>::None),
        )
        .col_expr(
            provider_outbox::Column::ClaimedUntil,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(provider_outbox::Column::LastError, Expr::value(error))
        .filter(provider_outbox::Column::Id.is_in(ids.iter().copied()))
        .exec(db)
        .await?;
    Ok(())
}

/// Drops the pending writes of mirrors being removed (in the caller's transaction).
pub async fn drop_writes_for_calendars(
    txn: &impl ConnectionTrait,
    calendars: &[Uuid],
) -> Result<(), DbErr> {
    if calendars.is_empty() {
        return Ok(());
    }
    provider_outbox::Entity::delete_many()
        .filter(provider_outbox::Column::CalendarId.is_in(calendars.iter().copied()))
        .exec(txn)
        .await?;
    Ok(())
}

/// Pending rows and the oldest one's creation, per provider.
pub async fn outbox_depth(
    db: &impl ConnectionTrait,
) -> Result<Vec<(String, i64, Option<DateTime<Utc>>)>, DbErr> {
    let backend = db.get_database_backend();
    let rows = db
        .query_all_raw(Statement::from_sql_and_values(
            backend,
            "SELECT provider, count(*) AS pending, min(created_at) AS oldest \
             FROM provider_outbox GROUP BY provider",
            Vec::<Value>::new(),
        ))
        .await?;
    rows.into_iter()
        .map(|row| {
            Ok((
                row.try_get::<String>("", "provider")?,
                row.try_get::<i64>("", "pending")?,
                row.try_get::<Option<DateTime<Utc>>>("", "oldest")?,
            ))
        })
        .collect()
}

/// Whether an account still has rows to deliver.
pub async fn has_pending(
    db: &impl ConnectionTrait,
    provider: &str,
    account_id: &str,
) -> Result<bool, DbErr> {
    Ok(provider_outbox::Entity::find()
        .filter(provider_outbox::Column::Provider.eq(provider))
        .filter(provider_outbox::Column::AccountId.eq(account_id))
        .one(db)
        .await?
        .is_some())
}

/// The earliest moment an account's rows are due again (to set the actor's timer).
pub async fn next_due(
    db: &impl ConnectionTrait,
    provider: &str,
    account_id: &str,
) -> Result<Option<DateTime<Utc>>, DbErr> {
    Ok(provider_outbox::Entity::find()
        .filter(provider_outbox::Column::Provider.eq(provider))
        .filter(provider_outbox::Column::AccountId.eq(account_id))
        .order_by_asc(provider_outbox::Column::NextAttemptAt)
        .one(db)
        .await?
        .map(|row| {
            Ord::max(
                row.next_attempt_at,
                row.claimed_until.unwrap_or(row.next_attempt_at),
            )
        }))
}

/// A remote calendar to mirror into a new local calendar.
#[derive(Debug, Clone)]
pub struct NewMirror {
    /// Provider.
    pub provider: String,
    /// Account.
    pub account_id: String,
    /// The account's owner (owner of the new calendar).
    pub owner: String,
    /// The calendar at the provider.
    pub remote_id: String,
    /// Name.
    pub name: String,
    /// Colour.
    pub color: String,
    /// Whether the provider lets the account write.
    pub read_only: bool,
}

/// Creates the local calendar of a new mirror (the owner its only member) and records the
/// mirror, in the caller's transaction.
pub async fn create_mirror(
    txn: &impl ConnectionTrait,
    new: NewMirror,
    now: DateTime<Utc>,
) -> Result<(entities::calendars::Model, external_calendars::Model), DbErr> {
    use crate::domain::roles::Role;
    use entities::{calendar_members, calendars};
    let calendar = calendars::ActiveModel {
        id: Set(Uuid::new_v4()),
        creator_id: Set(new.owner.clone()),
        name: Set(new.name),
        color: Set(new.color),
        is_default: Set(false),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(txn)
    .await?;
    calendar_members::ActiveModel {
        id: Set(Uuid::new_v4()),
        calendar_id: Set(calendar.id),
        user_id: Set(new.owner.clone()),
        role: Set(Role::Owner.as_str().to_owned()),
        reminder: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(txn)
    .await?;
    let mirror = external_calendars::ActiveModel {
        id: Set(Uuid::new_v4()),
        provider: Set(new.provider),
        account_id: Set(new.account_id),
        user_id: Set(new.owner),
        remote_id: Set(new.remote_id),
        calendar_id: Set(Some(calendar.id)),
        disabled: Set(false),
        read_only: Set(new.read_only),
        sync_token: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(txn)
    .await?;
    Ok((calendar, mirror))
}

/// Pending outbox deletes of a mirror, by resource (a pull must not bring those back).
pub async fn pending_deletes(
    db: &impl ConnectionTrait,
    calendar_id: Uuid,
) -> Result<std::collections::HashSet<String>, DbErr> {
    Ok(provider_outbox::Entity::find()
        .filter(provider_outbox::Column::CalendarId.eq(calendar_id))
        .filter(provider_outbox::Column::Action.eq("delete"))
        .all(db)
        .await?
        .into_iter()
        .filter_map(|row| row.remote_href)
        .collect())
}
