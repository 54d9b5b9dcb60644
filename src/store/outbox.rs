//! The outbox of provider writes: rows the event commands write in the same transaction as
//! the change they carry ([`enqueue`]), claimed by the instance delivering them ([`claim`]:
//! `FOR UPDATE SKIP LOCKED` and a lease on PostgreSQL, so two processes never deliver one
//! row twice), and removed only once delivered or given up ([`finish`]).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use entities::provider_outbox;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect, Statement, Value,
};

use super::Database;
use crate::domain::ids::{AccountId, CalendarId, EventId};

/// A provider write to deliver.
#[derive(Debug, Clone)]
pub struct OutboxWrite {
    /// Provider.
    pub provider: String,
    /// Account.
    pub account_id: AccountId,
    /// Mirror calendar.
    pub calendar_id: CalendarId,
    /// Event.
    pub event_id: EventId,
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
    // 1,000 rows of 13 values per statement: well under both backends' parameter limits.
    for chunk in writes.chunks(1_000) {
        let rows = chunk.iter().map(|write| row(write, now));
        provider_outbox::Entity::insert_many(rows)
            .exec_without_returning(txn)
            .await?;
    }
    Ok(())
}

/// Claims up to `limit` due rows of an account for `instance` until `now + lease`: rows
/// nobody holds (or whose holder's lease ran out), oldest first. On PostgreSQL the rows are
/// locked `FOR UPDATE SKIP LOCKED` while claimed, so concurrent claimers never take the
/// same row; SQLite's single writer serializes claims.
pub async fn claim(
    db: &Database,
    provider: &str,
    account_id: &AccountId,
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
    let mut rows = query.all(&txn).await?;
    // An event whose earlier rows another instance is delivering waits for it, and so does
    // one with a row still waiting for its retry: an event's rows are delivered in order,
    // by one deliverer at a time, and never ahead of a provider's `Retry-After`.
    let events: Vec<EventId> = rows.iter().map(|row| row.event_id).collect();
    if !events.is_empty() {
        let held_elsewhere = provider_outbox::Column::ClaimedUntil
            .gt(now)
            .and(provider_outbox::Column::ClaimedBy.ne(instance));
        let waiting: HashSet<EventId> = provider_outbox::Entity::find()
            .filter(provider_outbox::Column::EventId.is_in(events))
            .filter(
                held_elsewhere.or(provider_outbox::Column::NextAttemptAt
                    .gt(now)
                    .and(provider_outbox::Column::Provider.eq(provider))
                    .and(provider_outbox::Column::AccountId.eq(account_id))),
            )
            .all(&txn)
            .await?
            .into_iter()
            .map(|row| row.event_id)
            .collect();
        rows.retain(|row| !waiting.contains(&row.event_id));
    }
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
    calendars: &[CalendarId],
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

/// The earliest moment an account's rows are due again (to set the actor's timer).
pub async fn next_due(
    db: &impl ConnectionTrait,
    provider: &str,
    account_id: &AccountId,
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

/// Pending outbox deletes of a mirror, by resource (a pull must not bring those back).
pub async fn pending_deletes(
    db: &impl ConnectionTrait,
    calendar_id: CalendarId,
) -> Result<HashSet<String>, DbErr> {
    Ok(provider_outbox::Entity::find()
        .filter(provider_outbox::Column::CalendarId.eq(calendar_id))
        .filter(provider_outbox::Column::Action.eq("delete"))
        .all(db)
        .await?
        .into_iter()
        .filter_map(|row| row.remote_href)
        .collect())
}

/// The mirrors among some calendars: calendar → (provider, account).
pub type MirrorTargets = HashMap<CalendarId, (String, AccountId)>;

/// The mirrors among `calendars`. Whether a calendar mirrors an account (and which) is
/// fixed when the calendar is created (a mirror's calendar is made with its mirror row, and
/// disconnecting one deletes the calendar), so the answer for each calendar is remembered
/// in `db`'s [`MirrorCache`] and most writes ask the database nothing.
pub async fn targets(
    db: &Database,
    conn: &impl ConnectionTrait,
    calendars: &[CalendarId],
) -> Result<MirrorTargets, DbErr> {
    let (mut found, unknown) = db.mirror_cache().lookup(calendars);
    if unknown.is_empty() {
        return Ok(found);
    }
    let read: MirrorTargets = super::mirrors::mirrors_of(conn, &unknown)
        .await?
        .into_iter()
        .filter(|(_, mirror)| !mirror.disabled)
        .map(|(calendar, mirror)| (calendar, (mirror.provider, mirror.account_id)))
        .collect();
    db.mirror_cache().learn(&unknown, &read);
    found.extend(read);
    Ok(found)
}

/// Which calendars mirror an account, as far as this process has asked.
#[derive(Debug, Default)]
pub struct MirrorCache {
    known: parking_lot::Mutex<HashMap<CalendarId, Option<(String, AccountId)>>>,
}

/// Calendars remembered at most (beyond it, the memory starts again).
const MIRROR_CACHE_LIMIT: usize = 100_000;

impl MirrorCache {
    /// The remembered mirrors among `calendars`, and the calendars not remembered.
    fn lookup(&self, calendars: &[CalendarId]) -> (MirrorTargets, Vec<CalendarId>) {
        let known = self.known.lock();
        let mut found = MirrorTargets::new();
        let mut unknown = Vec::new();
        for calendar in calendars {
            match known.get(calendar) {
                Some(Some(target)) => {
                    found.insert(*calendar, target.clone());
                }
                Some(None) => {}
                None => unknown.push(*calendar),
            }
        }
        (found, unknown)
    }

    /// Remembers the answer for `asked` (`read`: the mirrors among them).
    fn learn(&self, asked: &[CalendarId], read: &MirrorTargets) {
        let mut known = self.known.lock();
        if known.len() + asked.len() > MIRROR_CACHE_LIMIT {
            known.clear();
        }
        for calendar in asked {
            known.insert(*calendar, read.get(calendar).cloned());
        }
    }
}

/// The `put` rows of new events linked into mirrors: each event of `events` (id and
/// calendars) once per mirror among its calendars.
pub fn puts_for_new<'a>(
    targets: &MirrorTargets,
    events: impl IntoIterator<Item = (EventId, &'a [CalendarId])>,
) -> Vec<OutboxWrite> {
    if targets.is_empty() {
        return Vec::new();
    }
    let mut writes = Vec::new();
    for (event_id, calendars) in events {
        for calendar in calendars {
            if let Some((provider, account_id)) = targets.get(calendar) {
                writes.push(OutboxWrite {
                    provider: provider.clone(),
                    account_id: account_id.clone(),
                    calendar_id: *calendar,
                    event_id,
                    action: "put",
                    remote: None,
                });
            }
        }
    }
    writes
}

/// The insert of `writes`, to run in another write's statement or text (`None`: nothing).
pub fn insert_statement(
    writes: &[OutboxWrite],
    now: DateTime<Utc>,
) -> Option<sea_orm::sea_query::InsertStatement> {
    use sea_orm::QueryTrait;
    if writes.is_empty() {
        return None;
    }
    Some(
        provider_outbox::Entity::insert_many(writes.iter().map(|write| row(write, now)))
            .into_query(),
    )
}

fn row(write: &OutboxWrite, now: DateTime<Utc>) -> provider_outbox::ActiveModel {
    provider_outbox::ActiveModel {
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
    }
}
