//! Sending the batched change notifications that are due: one mail per person with every
//! move and cancellation pending for them, in their time zone. Rows go only once the SMTP
//! server accepted the mail (and only if no newer change arrived meanwhile); a failed send
//! is retried after `MAIL_RETRY_MS`, each row until it is 24 hours old, then abandoned (and
//! logged). People who turned `eventChanged` off get nothing, and their rows are dropped, as
//! are rows about events the person can no longer see.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use entities::pending_notifications;
use serde_json::Value;
use uuid::Uuid;

use super::MailError;
use super::templates::{self, ChangeItem};
use crate::domain::ids::{EventId, UserId};
use crate::error::AppError;
use crate::store::Database;
use crate::store::{events, notifications, settings, users};

/// How long one instance holds claimed rows while sending.
const CLAIM_LEASE: Duration = Duration::minutes(2);
/// Rows this old are abandoned when their send fails.
const RETRY_HORIZON: Duration = Duration::hours(24);

/// What sending the batches needs.
#[derive(Debug, Clone, Copy)]
pub struct Sender<'a> {
    /// The database.
    pub db: &'a Database,
    /// The mail transport.
    pub mail: &'a super::MailService,
    /// The server's public origin (named in the mails).
    pub base_url: &'a str,
    /// How long a failed send waits before it is tried again (`MAIL_RETRY_MS`).
    pub retry_ms: u64,
}

/// Sends every due batch once.
pub async fn send_due(ctx: Sender<'_>) -> Result<(), AppError> {
    let now = Utc::now();
    let rows = notifications::claim_due(ctx.db, now, CLAIM_LEASE).await?;
    let mut by_user: BTreeMap<UserId, Vec<pending_notifications::Model>> = BTreeMap::new();
    for row in rows {
        by_user.entry(row.user_id.clone()).or_default().push(row);
    }
    for (user_id, rows) in by_user {
        send_batch(ctx, &user_id, rows, now).await?;
    }
    Ok(())
}

async fn send_batch(
    ctx: Sender<'_>,
    user_id: &UserId,
    rows: Vec<pending_notifications::Model>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let Some(user) = users::find(ctx.db, user_id).await? else {
        notifications::finish(ctx.db, &rows).await?;
        return Ok(());
    };
    let preferences = settings::value_of(ctx.db, user_id).await?;
    let wanted = preferences
        .as_ref()
        .and_then(|s| s.pointer("/notificationEmails/eventChanged"))
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if !wanted {
        notifications::finish(ctx.db, &rows).await?;
        return Ok(());
    }
    // Only news of events the person can still see (a member of a calendar they are in).
    let subjects: Vec<EventId> = rows
        .iter()
        .map(|row| EventId::from_uuid(row.subject_id))
        .collect();
    let visible = events::visible_among(ctx.db, user_id, &subjects).await?;
    let (rows, unseen): (Vec<_>, Vec<_>) = rows
        .into_iter()
        .partition(|row| visible.contains(&EventId::from_uuid(row.subject_id)));
    notifications::finish(ctx.db, &unseen).await?;
    if rows.is_empty() {
        return Ok(());
    }
    let zone = preferences
        .as_ref()
        .and_then(|s| s.get("timezone"))
        .and_then(Value::as_str)
        .and_then(|tz| tz.parse::<chrono_tz::Tz>().ok())
        .unwrap_or(chrono_tz::UTC);
    let items: Vec<ChangeItem> = rows.iter().filter_map(ChangeItem::from_row).collect();
    let mail = templates::event_changes(
        &templates::server_name(ctx.base_url),
        &user.email,
        &items,
        zone,
    );
    match ctx.mail.send(&mail).await {
        Ok(()) => notifications::finish(ctx.db, &rows).await?,
        Err(MailError::Invalid(reason)) => {
            tracing::warn!(reason, "notifications.dropped_invalid");
            notifications::finish(ctx.db, &rows).await?;
        }
        Err(err) => {
            // Each row has its own horizon: a batch may hold news of different ages.
            let (expired, retried): (Vec<_>, Vec<_>) = rows
                .into_iter()
                .partition(|row| now - row.created_at > RETRY_HORIZON);
            if !expired.is_empty() {
                tracing::error!(error = %err, rows = expired.len(), "notifications.abandoned");
                notifications::finish(ctx.db, &expired).await?;
            }
            if !retried.is_empty() {
                let retry = Duration::milliseconds(i64::try_from(ctx.retry_ms).unwrap_or(60_000));
                tracing::warn!(error = %err, rows = retried.len(), "notifications.retrying");
                let ids: Vec<Uuid> = retried.iter().map(|row| row.id).collect();
                notifications::retry_at(ctx.db, &ids, now + retry).await?;
            }
        }
    }
    Ok(())
}
