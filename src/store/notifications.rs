//! Pending change-notification mails.
//!
//! Rows are written in the transaction of the change. A person's first pending row fixes
//! the batch's due time (`BATCH_DELAY_MS` later) and later changes join that batch without
//! moving it; repeated changes of one event update the row's payload and raise its
//! revision. Sending claims rows with a lease (`claimed_until`), so two instances never send
//! the same batch, and a failed send simply leaves the claim to expire as the retry delay.
//! Once the mail was accepted (or abandoned after 24 hours) a row is deleted only if its
//! revision is the one claimed: a change that arrived while the mail was in flight keeps
//! its row, which is released and sent in the next batch.

use chrono::{DateTime, Duration, Utc};
use entities::pending_notifications::{self, Column, Entity};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, QueryFilter,
    QuerySelect, QueryTrait,
};
use serde_json::Value;
use uuid::Uuid;

use super::{Database, WriteTxn};
use crate::domain::events::ChangeNews;
use crate::domain::ids::{EventId, UserId};

/// Queues `news` about `event_id` for `user_id`; returns when the user's batch is due.
pub async fn queue(
    txn: &impl ConnectionTrait,
    user_id: &UserId,
    news: ChangeNews,
    event_id: EventId,
    payload: Value,
    delay: Duration,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, DbErr> {
    // The earliest due time as an aggregate (always one row) rather than `one()`, whose
    // `LIMIT` parameter makes SQLite prepare the statement again on every execution.
    let open_batch: Option<DateTime<Utc>> = Entity::find()
        .select_only()
        .column_as(Column::DueAt.min(), "due_at")
        .filter(Column::UserId.eq(user_id))
        .filter(Column::ClaimedUntil.is_null())
        .into_tuple::<Option<DateTime<Utc>>>()
        .all(txn)
        .await?
        .into_iter()
        .next()
        .flatten();
    let due_at = open_batch.unwrap_or(now + delay);
    let row = pending_notifications::ActiveModel {
        id: Set(Uuid::new_v4()),
        user_id: Set(user_id.to_owned()),
        kind: Set(news.as_str().to_owned()),
        subject_id: Set(event_id.uuid()),
        payload: Set(payload),
        due_at: Set(due_at),
        claimed_until: Set(None),
        created_at: Set(now),
        revision: Set(1),
    };
    // An existing row takes the newer payload, one revision up. A claimed row (its mail in
    // flight, or waiting to be retried) joins the person's open batch: it is sent again once
    // released.
    let existing_due = Expr::col((Entity, Column::DueAt));
    let claimed = Expr::col((Entity, Column::ClaimedUntil)).is_not_null();
    Entity::insert(row)
        .on_conflict(
            OnConflict::columns([Column::UserId, Column::Kind, Column::SubjectId])
                .update_column(Column::Payload)
                .value(
                    Column::Revision,
                    Expr::col((Entity, Column::Revision)).add(1),
                )
                .value(
                    Column::DueAt,
                    Expr::case(claimed, Expr::value(due_at)).finally(existing_due),
                )
                .to_owned(),
        )
        .exec(txn)
        .await?;
    Ok(due_at)
}

/// Drops what is pending about events that no longer exist.
pub async fn drop_for_events(txn: &WriteTxn, event_ids: &[EventId]) -> Result<(), DbErr> {
    for chunk in event_ids.chunks(500) {
        let delete = Entity::delete_many()
            .filter(Column::SubjectId.is_in(chunk.iter().copied()))
            .into_query();
        txn.defer(delete).await?;
    }
    Ok(())
}

/// When the next row becomes sendable (due and not claimed): the earliest due time of
/// rows free by then, or the earliest end of a claim that outlasts its row's due time (a
/// batch another instance claimed — and perhaps died with — is sent once the claim ends).
pub async fn next_wakeup(db: &Database) -> Result<Option<DateTime<Utc>>, DbErr> {
    // Aggregates (always one row) read with `all()`, as in `queue`.
    let earliest = |column: Column, condition: Condition| {
        Entity::find()
            .select_only()
            .column_as(column.min(), "at")
            .filter(condition)
            .into_tuple::<Option<DateTime<Utc>>>()
    };
    let claim_outlasts_due = Expr::col(Column::ClaimedUntil).gt(Expr::col(Column::DueAt));
    let free = earliest(
        Column::DueAt,
        Condition::any()
            .add(Column::ClaimedUntil.is_null())
            .add(claim_outlasts_due.clone().not()),
    )
    .all(db.conn())
    .await?
    .into_iter()
    .next()
    .flatten();
    let claimed = earliest(
        Column::ClaimedUntil,
        Condition::all().add(claim_outlasts_due),
    )
    .all(db.conn())
    .await?
    .into_iter()
    .next()
    .flatten();
    Ok(free.into_iter().chain(claimed).min())
}

/// The mail queue at `now`: how many batches wait (one per recipient with pending rows),
/// and the due time of the most overdue one (`None` when none is past its due time).
pub async fn queue_state(
    db: &Database,
    now: DateTime<Utc>,
) -> Result<(u64, Option<DateTime<Utc>>), DbErr> {
    // Aggregates (always one row) read with `all()`, as in `queue`.
    let batches = Entity::find()
        .select_only()
        .column_as(Expr::col(Column::UserId).count_distinct(), "batches")
        .into_tuple::<i64>()
        .all(db.conn())
        .await?
        .into_iter()
        .next()
        .unwrap_or(0);
    let overdue = Entity::find()
        .select_only()
        .column_as(Column::DueAt.min(), "at")
        .filter(Column::DueAt.lte(now))
        .into_tuple::<Option<DateTime<Utc>>>()
        .all(db.conn())
        .await?
        .into_iter()
        .next()
        .flatten();
    Ok((u64::try_from(batches).unwrap_or(0), overdue))
}

/// Claims every row that is due and not claimed, until `lease` from now.
pub async fn claim_due(
    db: &Database,
    now: DateTime<Utc>,
    lease: Duration,
) -> Result<Vec<pending_notifications::Model>, DbErr> {
    let txn = db.begin_write().await?;
    let claimable = Condition::all().add(Column::DueAt.lte(now)).add(
        Condition::any()
            .add(Column::ClaimedUntil.is_null())
            .add(Column::ClaimedUntil.lte(now)),
    );
    let rows = Entity::find()
        .filter(claimable.clone())
        .lock_exclusive()
        .all(&txn)
        .await?;
    if !rows.is_empty() {
        Entity::update_many()
            .col_expr(Column::ClaimedUntil, Expr::value(now + lease))
            .filter(Column::Id.is_in(rows.iter().map(|row| row.id)))
            .exec(&txn)
            .await?;
    }
    txn.commit().await?;
    Ok(rows)
}

/// Deletes claimed rows whose mail was accepted, abandoned or not wanted, unless a change
/// arrived since they were claimed (their revision moved): those are released instead, to
/// be sent with the person's next batch.
pub async fn finish(db: &Database, rows: &[pending_notifications::Model]) -> Result<(), DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    let txn = db.begin_write().await?;
    for chunk in rows.chunks(200) {
        let unchanged = chunk.iter().fold(Condition::any(), |any, row| {
            any.add(
                Condition::all()
                    .add(Column::Id.eq(row.id))
                    .add(Column::Revision.eq(row.revision)),
            )
        });
        Entity::delete_many().filter(unchanged).exec(&txn).await?;
        Entity::update_many()
            .col_expr(
                Column::ClaimedUntil,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(Column::Id.is_in(chunk.iter().map(|row| row.id)))
            .exec(&txn)
            .await?;
    }
    txn.commit().await
}

/// Leaves rows claimed until `retry_at`: they are tried again then.
pub async fn retry_at(db: &Database, ids: &[Uuid], retry_at: DateTime<Utc>) -> Result<(), DbErr> {
    Entity::update_many()
        .col_expr(Column::ClaimedUntil, Expr::value(retry_at))
        .filter(Column::Id.is_in(ids.iter().copied()))
        .exec(db.conn())
        .await?;
    Ok(())
}
