//! Delivering an account's outbox: the rows the event commands committed with their changes,
//! in commit order per event, through the account's adapter ([`Source`]).
//!
//! The rows of one event in one mirror are delivered together and their last one says what
//! the provider must end up with: `put` writes the event as it is now (new, or over the item
//! it was written to before, conditionally on that item's tag), `delete` removes the item
//! captured at commit (conditionally too). A row leaves the outbox only when the provider
//! accepted it, or when it is given up (refused for good, or still failing after
//! [`OutboxPolicy::give_up_after`](super::OutboxPolicy)) and reported to the calendar's
//! members with a `provider_delivery` frame. Transient failures are retried with
//! exponential backoff (or the provider's `Retry-After`), across restarts: the rows stay in
//! the database; a rate limit also defers the rest of the round to when the provider asked.
//! A conflict (`412`, or the item gone meanwhile) never overwrites the provider: its version
//! is read back and applied locally as a new revision, and the change is reported as
//! conflicted. Refused credentials mark the account `reconnect_required` and stop its
//! deliveries, keeping the rows.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use entities::provider_outbox;
use serde_json::json;

use super::Mirrors;
use super::accounts::Connected;
use super::apply::{Target, apply};
use super::pull::announce_external_sync;
use super::source::{Source, SyncError, Written};
use crate::domain::frames::Frame;
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::domain::providers::AccountKey;
use crate::error::AppError;
use crate::providers::ProviderError;
use crate::store::{calendars as calendar_store, events as event_store, members, mirrors, outbox};

/// Rows claimed per round.
const CLAIM_BATCH: u64 = 100;

/// What one delivery round did.
#[derive(Debug, Default)]
pub struct Delivered {
    /// Rows the provider accepted (or that had nothing left to do).
    pub done: usize,
    /// Rows to try again later.
    pub retrying: usize,
    /// The provider refused the credentials: deliveries stop until the account reconnects.
    pub held: bool,
    /// The provider asked to be left alone (a rate limit) for this long: nothing more goes
    /// to it from this account until then, deliveries nor pulls.
    pub pause: Option<std::time::Duration>,
}

/// How one event's rows ended.
enum Outcome {
    /// Delivered (or nothing left to deliver).
    Done,
    /// The provider had changed it: its version was applied locally.
    Conflict,
    /// Refused for good.
    GivenUp(String),
    /// Try again later.
    Retry(ProviderError),
}

/// Delivers what is due of `account`'s outbox (one claim of up to [`CLAIM_BATCH`] rows).
pub async fn deliver<S: Source>(
    env: &Mirrors,
    source: &S,
    account: &Connected,
) -> Result<Delivered, AppError> {
    let mut report = Delivered::default();
    if account.held() {
        report.held = true;
        return Ok(report);
    }
    let services = &env.services;
    let key = account.key();
    let provider = key.provider.as_str();
    let lease =
        chrono::Duration::from_std(env.outbox.lease).unwrap_or(chrono::Duration::minutes(5));
    let rows = outbox::claim(
        &services.db,
        provider,
        &key.id,
        &env.instance_id,
        lease,
        CLAIM_BATCH,
    )
    .await?;
    if rows.is_empty() {
        return Ok(report);
    }
    let mut groups: Vec<((CalendarId, EventId), Vec<provider_outbox::Model>)> = Vec::new();
    let mut index: HashMap<(CalendarId, EventId), usize> = HashMap::new();
    for row in rows {
        let key = (row.calendar_id, row.event_id);
        let at = *index.entry(key).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[at].1.push(row);
    }
    let mut conflicts = Vec::new();
    // When the provider asked to be left alone (a rate limit), the rest of the round waits.
    let mut paused_until: Option<DateTime<Utc>> = None;
    for ((calendar_id, event_id), rows) in groups {
        let ids: Vec<i64> = rows.iter().map(|row| row.id).collect();
        if report.held {
            outbox::retry_later(&services.db, &ids, Utc::now(), "reconnect required").await?;
            report.retrying += ids.len();
            continue;
        }
        if let Some(until) = paused_until {
            outbox::retry_later(&services.db, &ids, until, "rate limited").await?;
            report.retrying += ids.len();
            continue;
        }
        let Some(last) = rows.last() else {
            continue;
        };
        let outcome = deliver_one(env, source, account.owner(), last).await?;
        match outcome {
            Outcome::Done => {
                outbox::finish(&services.db, &ids, &env.instance_id).await?;
                report.done += ids.len();
            }
            Outcome::Conflict => {
                outbox::finish(&services.db, &ids, &env.instance_id).await?;
                report.done += ids.len();
                conflicts.push(calendar_id);
                report_delivery(env, calendar_id, event_id, "conflict", None).await?;
            }
            Outcome::GivenUp(reason) => {
                services.metrics.sync_failed(provider, "push");
                outbox::finish(&services.db, &ids, &env.instance_id).await?;
                report.done += ids.len();
                tracing::warn!(reason = %reason, "sync.push.given_up");
                report_delivery(env, calendar_id, event_id, "failed", Some(&reason)).await?;
            }
            Outcome::Retry(err) => {
                services.metrics.sync_failed(provider, "push");
                let first = rows
                    .iter()
                    .map(|row| row.created_at)
                    .min()
                    .unwrap_or_else(Utc::now);
                let attempts = rows.iter().map(|row| row.attempts).max().unwrap_or(0);
                let age = (Utc::now() - first).to_std().unwrap_or_default();
                if let Some(code) = err.reconnect_code() {
                    env.require_reconnect(account, code).await?;
                    report.held = true;
                    outbox::retry_later(&services.db, &ids, Utc::now(), "reconnect required")
                        .await?;
                    report.retrying += ids.len();
                } else if age > env.outbox.give_up_after {
                    outbox::finish(&services.db, &ids, &env.instance_id).await?;
                    report.done += ids.len();
                    let reason = format!("gave up after {} attempts: {err}", attempts + 1);
                    tracing::warn!(reason = %reason, "sync.push.given_up");
                    report_delivery(env, calendar_id, event_id, "failed", Some(&reason)).await?;
                } else {
                    let next = Utc::now() + backoff(env, attempts, err.retry_after());
                    tracing::info!(attempts, error = %err, "sync.push.retry");
                    outbox::retry_later(&services.db, &ids, next, &err.to_string()).await?;
                    report.retrying += ids.len();
                    if let Some(wait) = err.retry_after() {
                        paused_until = Some(
                            Utc::now()
                                + chrono::Duration::from_std(wait)
                                    .unwrap_or(chrono::Duration::minutes(1)),
                        );
                        report.pause = Some(wait);
                    }
                }
            }
        }
    }
    conflicts.sort();
    conflicts.dedup();
    announce_external_sync(env, &conflicts).await?;
    Ok(report)
}

/// The delay before attempt `attempts + 1`: the base doubled per attempt, at most the
/// maximum, or the provider's `Retry-After` if longer.
fn backoff(
    env: &Mirrors,
    attempts: i32,
    retry_after: Option<std::time::Duration>,
) -> chrono::Duration {
    let exponent = u32::try_from(attempts.clamp(0, 20)).unwrap_or(20);
    let delay = env
        .outbox
        .retry_base
        .saturating_mul(2_u32.saturating_pow(exponent))
        .min(env.outbox.retry_max)
        .max(retry_after.unwrap_or_default());
    chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::hours(1))
}

/// Delivers the final intent of one event's rows.
async fn deliver_one<S: Source>(
    env: &Mirrors,
    source: &S,
    owner: &UserId,
    row: &provider_outbox::Model,
) -> Result<Outcome, AppError> {
    let db = &env.services.db;
    let Some(mirror) = mirrors::mirrors_of(db, &[row.calendar_id])
        .await?
        .remove(&row.calendar_id)
    else {
        return Ok(Outcome::Done);
    };
    if mirror.read_only {
        return Ok(Outcome::GivenUp(
            "the calendar is read-only at the provider".into(),
        ));
    }
    let remote_calendar = mirror.remote_id.as_str();
    if row.action == "delete" {
        let Some(href) = row.remote_href.as_deref() else {
            return Ok(Outcome::Done);
        };
        return match source
            .delete(remote_calendar, href, row.etag.as_deref())
            .await
        {
            Ok(()) => Ok(Outcome::Done),
            Err(SyncError::Remote(ProviderError::PreconditionFailed)) => {
                restore_remote(env, source, owner, row.calendar_id, remote_calendar, href).await
            }
            Err(SyncError::Remote(err)) => Ok(classify(err)),
            Err(SyncError::Local(err)) => Err(err),
        };
    }
    let Some(event) = event_store::find_live(db, &[row.event_id]).await?.pop() else {
        return Ok(Outcome::Done);
    };
    if !event_store::links(db, event.id)
        .await?
        .contains(&row.calendar_id)
    {
        return Ok(Outcome::Done);
    }
    let mapping = mirrors::resource_of_event(db, row.calendar_id, event.id).await?;
    if let Some(mapping) = &mapping {
        let shared = mirrors::resources_of(db, row.calendar_id)
            .await?
            .get(&mapping.remote_href)
            .map_or(1, Vec::len);
        if shared > 1 {
            return Ok(Outcome::GivenUp(
                "a recurring event with edited occurrences can't be written back to this provider yet"
                    .into(),
            ));
        }
    }
    match source
        .write(remote_calendar, &event, mapping.as_ref())
        .await
    {
        Ok(written) => {
            record_written(env, row.calendar_id, event.id, written).await?;
            Ok(Outcome::Done)
        }
        Err(SyncError::Remote(ProviderError::PreconditionFailed | ProviderError::NotFound))
            if mapping.is_some() =>
        {
            let href = mapping.map(|m| m.remote_href).unwrap_or_default();
            restore_remote(env, source, owner, row.calendar_id, remote_calendar, &href).await
        }
        Err(SyncError::Remote(ProviderError::Unsupported(reason))) => Ok(Outcome::GivenUp(reason)),
        Err(SyncError::Remote(ProviderError::PreconditionFailed)) => {
            // A new item that met one of its name: tried again (its adapter adopts it).
            Ok(Outcome::Retry(ProviderError::Unavailable {
                status: Some(412),
                retry_after: None,
            }))
        }
        Err(SyncError::Remote(err)) => Ok(classify(err)),
        Err(SyncError::Local(err)) => Err(err),
    }
}

/// Records where an event now lives and its new tag; if the event left the mirror
/// meanwhile, queues the item's delete instead.
async fn record_written(
    env: &Mirrors,
    calendar_id: CalendarId,
    event_id: EventId,
    written: Written,
) -> Result<(), AppError> {
    env.services
        .db
        .write(async |txn| {
            // Under the calendar's lock, as the event commands take it: a delete or unlink of
            // the event either committed before (and is seen here) or sees the item recorded
            // here.
            if calendar_store::lock(txn, calendar_id).await?.is_none() {
                return Ok(());
            }
            // The event left the mirror while it was being written (deleted or unlinked before
            // its item was known, so no delete was queued): queue the item's delete now.
            let still_there = match event_store::find_live(txn, &[event_id]).await?.pop() {
                Some(event) => event_store::links(txn, event.id)
                    .await?
                    .contains(&calendar_id),
                None => false,
            };
            if !still_there {
                let Some((provider, account_id)) =
                    outbox::targets(&env.services.db, txn, &[calendar_id])
                        .await?
                        .remove(&calendar_id)
                else {
                    return Ok(());
                };
                let write = outbox::OutboxWrite {
                    provider,
                    account_id,
                    calendar_id,
                    event_id,
                    action: "delete",
                    remote: Some((written.href, written.etag)),
                };
                outbox::enqueue(txn, &[write], Utc::now()).await?;
                return Ok(());
            }
            // An event moved to another item (Google's re-insert under a new id) leaves its old
            // one.
            if let Some(old) = mirrors::resource_of_event(txn, calendar_id, event_id).await?
                && old.remote_href != written.href
            {
                mirrors::forget_event(txn, calendar_id, event_id).await?;
            }
            mirrors::replace_resource(
                txn,
                calendar_id,
                &written.href,
                vec![entities::external_events::Model {
                    calendar_id,
                    event_id,
                    remote_href: written.href.clone(),
                    position: 0,
                    etag: written.etag,
                    uid: written.uid,
                    updated_at: Utc::now(),
                }],
            )
            .await?;
            Ok::<_, AppError>(())
        })
        .await
}

/// A conflict: the provider changed (or removed) the item meanwhile. Its version is read
/// back and applied to the mirror (or the event is taken out if it is gone there).
async fn restore_remote<S: Source>(
    env: &Mirrors,
    source: &S,
    owner: &UserId,
    calendar_id: CalendarId,
    remote_calendar: &str,
    href: &str,
) -> Result<Outcome, AppError> {
    let (read, removed) = match source.resource(remote_calendar, href).await {
        Ok(Some(resource)) => (vec![resource], Vec::new()),
        Ok(None) => (Vec::new(), vec![href.to_owned()]),
        Err(SyncError::Remote(err)) => return Ok(classify(err)),
        Err(SyncError::Local(err)) => return Err(err),
    };
    let applied = env
        .services
        .db
        .write(async |txn| {
            let Some(calendar) = calendar_store::lock(txn, calendar_id).await? else {
                return Ok(false);
            };
            let target = Target {
                calendar: &calendar,
                owner,
            };
            let now = txn.stamp().await?;
            apply(txn, target, &read, &removed, now).await?;
            Ok::<_, AppError>(true)
        })
        .await?;
    if !applied {
        return Ok(Outcome::Done);
    }
    tracing::info!("sync.push.conflict");
    Ok(Outcome::Conflict)
}

/// What a failed write means for its rows.
fn classify(err: ProviderError) -> Outcome {
    if err.is_transient() || err.needs_reconnect() {
        Outcome::Retry(err)
    } else {
        Outcome::GivenUp(err.to_string())
    }
}

/// Tells the calendar's members that a change could not be delivered as made.
async fn report_delivery(
    env: &Mirrors,
    calendar_id: CalendarId,
    event_id: EventId,
    state: &'static str,
    reason: Option<&str>,
) -> Result<(), AppError> {
    // In a transaction of its own, as `external_sync` ([`announce_external_sync`]): the two
    // leave in the order they are sent.
    env.services
        .db
        .write(async |txn| {
            let users = members::member_ids(txn, calendar_id).await?;
            let frame = Frame::new(
                "provider_delivery",
                json!({
                    "calendarID": calendar_id,
                    "eventID": event_id,
                    "state": state,
                    "error": reason,
                }),
            );
            env.services.within(txn).broadcast(&users, &frame);
            Ok::<_, AppError>(())
        })
        .await
}

/// The next moment an account's outbox has something due, if any.
pub async fn next_due(env: &Mirrors, key: &AccountKey) -> Result<Option<DateTime<Utc>>, AppError> {
    Ok(outbox::next_due(&env.services.db, key.provider.as_str(), &key.id).await?)
}
