//! What delta reads need beyond the events themselves: per-user *visibility losses* (the
//! user stopped seeing an event without it being deleted; reported as `deletedIds`) and
//! per-user *view changes* (the user still sees the event, through fewer calendars; the
//! event is returned again), and the cleanup of both after
//! [`EVENT_HISTORY_DAYS`](super::maintenance::EVENT_HISTORY_DAYS).

use std::collections::HashSet;

use crate::domain::ids::{EventId, UserId};
use chrono::{DateTime, Utc};
use entities::{event_view_changes, event_visibility_losses, events};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryTrait,
};

use crate::store::WriteTxn;
use uuid::Uuid;

/// Records many `(user, event)` visibility losses at once.
pub async fn record_loss_pairs(
    txn: &impl ConnectionTrait,
    losses: &[(UserId, EventId)],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    for chunk in losses.chunks(500) {
        let rows = chunk
            .iter()
            .map(|(user, event)| event_visibility_losses::ActiveModel {
                id: Set(Uuid::new_v4()),
                user_id: Set(user.clone()),
                event_id: Set(*event),
                at: Set(now),
            });
        event_visibility_losses::Entity::insert_many(rows)
            .exec(txn)
            .await?;
    }
    Ok(())
}

/// Records that each `(user, event)` pair's view changed: the user still sees the event,
/// through other calendars than before.
pub async fn record_view_changes(
    txn: &impl ConnectionTrait,
    changes: &[(UserId, EventId)],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    for chunk in changes.chunks(500) {
        let rows = chunk
            .iter()
            .map(|(user, event)| event_view_changes::ActiveModel {
                id: Set(Uuid::new_v4()),
                user_id: Set(user.clone()),
                event_id: Set(*event),
                at: Set(now),
            });
        event_view_changes::Entity::insert_many(rows)
            .exec(txn)
            .await?;
    }
    Ok(())
}

/// Records that `users` can no longer see `event_id`.
pub async fn record_losses<'a>(
    txn: &WriteTxn,
    users: impl IntoIterator<Item = &'a UserId>,
    event_id: EventId,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let rows: Vec<_> = users
        .into_iter()
        .map(|user| event_visibility_losses::ActiveModel {
            id: Set(Uuid::new_v4()),
            user_id: Set(user.clone()),
            event_id: Set(event_id),
            at: Set(now),
        })
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    txn.defer(event_visibility_losses::Entity::insert_many(rows).into_query())
        .await
}

/// The events that left `user_id`'s view after `since` and at or before `until` (a delta
/// read's horizon; a loss after it is the next delta read's), and are not visible again now.
pub async fn deleted_since(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Vec<EventId>, DbErr> {
    let lost: HashSet<EventId> = event_visibility_losses::Entity::find()
        .filter(event_visibility_losses::Column::UserId.eq(user_id))
        .filter(event_visibility_losses::Column::At.gt(since))
        .filter(event_visibility_losses::Column::At.lte(until))
        .all(db)
        .await?
        .into_iter()
        .map(|loss| loss.event_id)
        .collect();
    if lost.is_empty() {
        return Ok(Vec::new());
    }
    let lost: Vec<EventId> = lost.into_iter().collect();
    let still_visible = super::visible_among(db, user_id, &lost).await?;
    let mut deleted: Vec<EventId> = lost
        .into_iter()
        .filter(|id| !still_visible.contains(id))
        .collect();
    deleted.sort();
    Ok(deleted)
}

/// Deletes tombstones, visibility losses and view changes older than `before` (cleanup):
/// clients that have not synced for that long reload fully.
pub async fn delete_history_before(
    db: &impl ConnectionTrait,
    before: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let losses = event_visibility_losses::Entity::delete_many()
        .filter(event_visibility_losses::Column::At.lt(before))
        .exec(db)
        .await?
        .rows_affected;
    let view_changes = event_view_changes::Entity::delete_many()
        .filter(event_view_changes::Column::At.lt(before))
        .exec(db)
        .await?
        .rows_affected;
    let tombstones = events::Entity::delete_many()
        .filter(events::Column::DeletedAt.lt(before))
        .exec(db)
        .await?
        .rows_affected;
    Ok(losses + view_changes + tombstones)
}
