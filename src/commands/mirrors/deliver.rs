//! Delivering a CalDAV account's outbox: the rows the event commands committed with their
//! changes, in commit order per event.
//!
//! The rows of one event in one mirror are delivered together and their last one says what
//! the provider must end up with: `put` writes the event as it is now (`PUT` with
//! `If-None-Match: *` the first time, `If-Match: <etag>` after), `delete` removes the
//! resource captured at commit (`If-Match`). A row leaves the outbox only when the provider
//! accepted it, or when it is given up (refused for good, or still failing after
//! [`OutboxPolicy::give_up_after`](super::OutboxPolicy)) and reported to the calendar's
//! members with a `provider_delivery` frame. Transient failures are retried with
//! exponential backoff (or the server's `Retry-After`), across restarts: the rows stay in
//! the database. A `412` never overwrites the provider: the remote version is read back and
//! applied locally as a new revision, and the change is reported as conflicted. A `401`
//! marks the account `reconnect_required` and stops its deliveries, keeping the rows.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use entities::{caldav_accounts, provider_outbox};
use serde_json::json;
use uuid::Uuid;

use super::Mirrors;
use super::apply::{Target, apply};
use super::pull::announce_external_sync;
use super::resources;
use crate::domain::frames::Frame;
use crate::error::AppError;
use crate::ical::export::export_resource;
use crate::providers::caldav::{CaldavClient, CaldavError};
use crate::store::caldav_accounts as account_store;
use crate::store::{
    calendars as calendar_store, events as event_store, members, mirrors, outbox, settings,
};

/// Rows claimed per round.
const CLAIM_BATCH: u64 = 100;

/// What one delivery round did.
#[derive(Debug, Default)]
pub struct Delivered {
    /// Rows the provider accepted (or that had nothing left to do).
    pub done: usize,
    /// Rows to try again later.
    pub retrying: usize,
    /// The server refused the credentials: deliveries stop until the account reconnects.
    pub unauthorized: bool,
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
    Retry(CaldavError),
}

/// Delivers what is due of `account`'s outbox (one claim of up to [`CLAIM_BATCH`] rows).
pub async fn deliver_caldav(
    env: &Mirrors,
    account: &caldav_accounts::Model,
) -> Result<Delivered, AppError> {
    let mut report = Delivered::default();
    if account.sync_status.is_some() {
        return Ok(report);
    }
    let services = &env.services;
    let account_id = account.id.to_string();
    let lease =
        chrono::Duration::from_std(env.outbox.lease).unwrap_or(chrono::Duration::minutes(5));
    let rows = outbox::claim(
        &services.db,
        mirrors::CALDAV,
        &account_id,
        &env.instance_id,
        lease,
        CLAIM_BATCH,
    )
    .await?;
    if rows.is_empty() {
        return Ok(report);
    }
    let client = env.caldav_client(account)?;
    let mut groups: Vec<((Uuid, Uuid), Vec<provider_outbox::Model>)> = Vec::new();
    let mut index: HashMap<(Uuid, Uuid), usize> = HashMap::new();
    for row in rows {
        let key = (row.calendar_id, row.event_id);
        let at = *index.entry(key).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[at].1.push(row);
    }
    let mut conflicts = Vec::new();
    for ((calendar_id, event_id), rows) in groups {
        let ids: Vec<i64> = rows.iter().map(|row| row.id).collect();
        if report.unauthorized {
            outbox::retry_later(services.db.conn(), &ids, Utc::now(), "unauthorized").await?;
            report.retrying += ids.len();
            continue;
        }
        let Some(last) = rows.last() else {
            continue;
        };
        let outcome = deliver_one(env, &client, account, last).await?;
        match outcome {
            Outcome::Done => {
                outbox::finish(services.db.conn(), &ids, &env.instance_id).await?;
                report.done += ids.len();
            }
            Outcome::Conflict => {
                outbox::finish(services.db.conn(), &ids, &env.instance_id).await?;
                report.done += ids.len();
                conflicts.push(calendar_id);
                report_delivery(env, calendar_id, event_id, "conflict", None).await?;
            }
            Outcome::GivenUp(reason) => {
                services.metrics.sync_failed("caldav", "push");
                outbox::finish(services.db.conn(), &ids, &env.instance_id).await?;
                report.done += ids.len();
                tracing::warn!(reason = %reason, "sync.push.given_up");
                report_delivery(env, calendar_id, event_id, "failed", Some(&reason)).await?;
            }
            Outcome::Retry(err) => {
                services.metrics.sync_failed("caldav", "push");
                let first = rows
                    .iter()
                    .map(|row| row.created_at)
                    .min()
                    .unwrap_or_else(Utc::now);
                let attempts = rows.iter().map(|row| row.attempts).max().unwrap_or(0);
                let age = (Utc::now() - first).to_std().unwrap_or_default();
                if matches!(err, CaldavError::Unauthorized) {
                    account_store::set_caldav_status(
                        services.db.conn(),
                        account.id,
                        Some(("reconnect_required", "unauthorized")),
                    )
                    .await?;
                    report.unauthorized = true;
                    outbox::retry_later(services.db.conn(), &ids, Utc::now(), "unauthorized")
                        .await?;
                    report.retrying += ids.len();
                } else if age > env.outbox.give_up_after {
                    outbox::finish(services.db.conn(), &ids, &env.instance_id).await?;
                    report.done += ids.len();
                    let reason = format!("gave up after {} attempts: {err}", attempts + 1);
                    tracing::warn!(reason = %reason, "sync.push.given_up");
                    report_delivery(env, calendar_id, event_id, "failed", Some(&reason)).await?;
                } else {
                    let next = Utc::now() + backoff(env, attempts, err.retry_after());
                    tracing::info!(attempts, error = %err, "sync.push.retry");
                    outbox::retry_later(services.db.conn(), &ids, next, &err.to_string()).await?;
                    report.retrying += ids.len();
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
/// maximum, or the server's `Retry-After` if longer.
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
async fn deliver_one(
    env: &Mirrors,
    client: &CaldavClient,
    account: &caldav_accounts::Model,
    row: &provider_outbox::Model,
) -> Result<Outcome, AppError> {
    let db = env.services.db.conn();
    let Some(mirror) = mirrors::mirrors_of(db, &[row.calendar_id])
        .await?
        .remove(&row.calendar_id)
    else {
        return Ok(Outcome::Done);
    };
    let collection = match url::Url::parse(&mirror.remote_id) {
        Ok(url) => url,
        Err(err) => return Ok(Outcome::GivenUp(format!("stored calendar URL: {err}"))),
    };
    if mirror.read_only {
        return Ok(Outcome::GivenUp(
            "the calendar is read-only at the provider".into(),
        ));
    }
    if row.action == "delete" {
        let Some(href) = row.remote_href.as_deref() else {
            return Ok(Outcome::Done);
        };
        let Ok(url) = url::Url::parse(href) else {
            return Ok(Outcome::Done);
        };
        return match client.delete(&url, row.etag.as_deref()).await {
            Ok(()) | Err(CaldavError::NotFound) => Ok(Outcome::Done),
            Err(CaldavError::PreconditionFailed) => {
                restore_remote(env, client, account, row.calendar_id, &url).await
            }
            Err(err) => Ok(classify(err)),
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
    match mapping {
        Some(mapping) => {
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
            let Ok(url) = url::Url::parse(&mapping.remote_href) else {
                return Ok(Outcome::GivenUp("stored resource URL is invalid".into()));
            };
            let uid = mapping.uid.clone().unwrap_or_else(|| event.id.to_string());
            let ics = export_resource(&event, &uid);
            let written = match mapping.etag.as_deref() {
                Some(etag) => client.update(&url, &ics, etag).await,
                None => client.create(&url, &ics).await,
            };
            match written {
                Ok(etag) => {
                    record_written(env, client, row.calendar_id, event.id, &url, etag, &uid)
                        .await?;
                    Ok(Outcome::Done)
                }
                Err(CaldavError::PreconditionFailed) => {
                    restore_remote(env, client, account, row.calendar_id, &url).await
                }
                Err(err) => Ok(classify(err)),
            }
        }
        None => {
            let Ok(url) = collection.join(&format!("{}.ics", event.id)) else {
                return Ok(Outcome::GivenUp("cannot name the new resource".into()));
            };
            let uid = event.id.to_string();
            let ics = export_resource(&event, &uid);
            match client.create(&url, &ics).await {
                Ok(etag) => {
                    record_written(env, client, row.calendar_id, event.id, &url, etag, &uid)
                        .await?;
                    Ok(Outcome::Done)
                }
                Err(CaldavError::PreconditionFailed) => {
                    // Already there: an earlier attempt was accepted before this process
                    // could record it. Adopt it and write the current state over it.
                    match client.get(&url).await {
                        Ok(Some(existing)) => {
                            let written = match existing.etag.as_deref() {
                                Some(etag) => client.update(&url, &ics, etag).await,
                                None => Err(CaldavError::PreconditionFailed),
                            };
                            match written {
                                Ok(etag) => {
                                    record_written(
                                        env,
                                        client,
                                        row.calendar_id,
                                        event.id,
                                        &url,
                                        etag,
                                        &uid,
                                    )
                                    .await?;
                                    Ok(Outcome::Done)
                                }
                                Err(err) => Ok(classify(err)),
                            }
                        }
                        Ok(None) => Ok(Outcome::Retry(CaldavError::PreconditionFailed)),
                        Err(err) => Ok(classify(err)),
                    }
                }
                Err(err) => Ok(classify(err)),
            }
        }
    }
}

/// Records where an event now lives and its new tag (read back when the server sent none);
/// if the event left the mirror meanwhile, queues the resource's delete instead.
async fn record_written(
    env: &Mirrors,
    client: &CaldavClient,
    calendar_id: Uuid,
    event_id: Uuid,
    url: &url::Url,
    etag: Option<String>,
    uid: &str,
) -> Result<(), AppError> {
    let etag = match etag {
        Some(etag) => Some(etag),
        None => client
            .get(url)
            .await
            .ok()
            .flatten()
            .and_then(|object| object.etag),
    };
    let txn = env.services.db.begin_write().await?;
    // The event left the mirror while it was being written (deleted or unlinked before its
    // resource was known, so no delete was queued): queue the resource's delete now.
    let still_there = match event_store::find_live(&txn, &[event_id]).await?.pop() {
        Some(event) => event_store::links(&txn, event.id)
            .await?
            .contains(&calendar_id),
        None => false,
    };
    if !still_there {
        let Some((provider, account_id)) = outbox::targets(&env.services.db, &txn, &[calendar_id])
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
            remote: Some((url.to_string(), etag)),
        };
        outbox::enqueue(&txn, &[write], Utc::now()).await?;
        txn.commit().await?;
        return Ok(());
    }
    mirrors::replace_resource(
        &txn,
        calendar_id,
        url.as_str(),
        vec![entities::external_events::Model {
            calendar_id,
            event_id,
            remote_href: url.to_string(),
            position: 0,
            etag,
            uid: Some(uid.to_owned()),
            updated_at: Utc::now(),
        }],
    )
    .await?;
    txn.commit().await?;
    Ok(())
}

/// A `412`: the provider changed the resource meanwhile. Its version is read back and
/// applied to the mirror (or the event is taken out if it is gone there).
async fn restore_remote(
    env: &Mirrors,
    client: &CaldavClient,
    account: &caldav_accounts::Model,
    calendar_id: Uuid,
    url: &url::Url,
) -> Result<Outcome, AppError> {
    let object = match client.get(url).await {
        Ok(object) => object,
        Err(err) => return Ok(classify(err)),
    };
    let href = url.to_string();
    let zone = settings::zone_of(env.services.db.conn(), &account.user_id).await?;
    let (read, removed) = match object {
        Some(object) => {
            let (read, _) = env
                .cpu
                .run("reading a remote event", move || {
                    resources::read(vec![object], zone)
                })
                .await?;
            (read, Vec::new())
        }
        None => (Vec::new(), vec![href]),
    };
    let txn = env.services.db.begin_write().await?;
    let Some(calendar) = calendar_store::lock(&txn, calendar_id).await? else {
        return Ok(Outcome::Done);
    };
    let target = Target {
        calendar: &calendar,
        owner: &account.user_id,
    };
    apply(&txn, target, &read, &removed, Utc::now()).await?;
    txn.commit().await?;
    tracing::info!("sync.push.conflict");
    Ok(Outcome::Conflict)
}

/// What a failed write means for its rows.
fn classify(err: CaldavError) -> Outcome {
    if err.is_transient() || matches!(err, CaldavError::Unauthorized) {
        Outcome::Retry(err)
    } else {
        Outcome::GivenUp(err.to_string())
    }
}

/// Tells the calendar's members that a change could not be delivered as made.
async fn report_delivery(
    env: &Mirrors,
    calendar_id: Uuid,
    event_id: Uuid,
    state: &'static str,
    reason: Option<&str>,
) -> Result<(), AppError> {
    let users = members::member_ids(env.services.db.conn(), calendar_id).await?;
    let frame = Frame::new(
        "provider_delivery",
        json!({
            "calendarID": calendar_id,
            "eventID": event_id,
            "state": state,
            "error": reason,
        }),
    );
    env.services
        .broadcast(users.iter().map(String::as_str), &frame);
    Ok(())
}

/// The next moment an account's outbox has something due, if any.
pub async fn next_due(env: &Mirrors, account_id: Uuid) -> Result<Option<DateTime<Utc>>, AppError> {
    Ok(outbox::next_due(
        env.services.db.conn(),
        mirrors::CALDAV,
        &account_id.to_string(),
    )
    .await?)
}
