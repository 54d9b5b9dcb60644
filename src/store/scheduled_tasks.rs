//! Leases on periodic tasks, so that one instance runs each tick when several share the
//! database, and the record of each task's last run.
//!
//! A lease is taken with one conditional `UPDATE` (free, expired, or already ours), which is
//! atomic on both backends; the row is created on first use.

use chrono::{DateTime, Utc};
use entities::scheduled_tasks::{self, Column, Entity};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ActiveValue::Set, ColumnTrait, DbErr, EntityTrait, QueryFilter};

use super::Database;
use super::statements::Unique;

/// Result of asking for a task's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// This instance holds the lease until it releases it or it expires.
    Acquired,
    /// Another instance holds it.
    HeldElsewhere,
}

/// Takes the lease on `task` for `owner` until `until`, if it is free or expired.
pub async fn acquire(
    db: &Database,
    task: &str,
    owner: &str,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Lease, DbErr> {
    let row = scheduled_tasks::ActiveModel {
        task: Set(task.to_owned()),
        lease_owner: Set(None),
        lease_until: Set(None),
        last_started_at: Set(None),
        last_finished_at: Set(None),
        last_outcome: Set(None),
        runs: Set(0),
    };
    Entity::insert(row)
        .on_conflict_do_nothing_on([Column::Task])
        .exec(db.conn())
        .await?;
    let result = Entity::update_many()
        .col_expr(Column::LeaseOwner, Expr::value(owner))
        .col_expr(Column::LeaseUntil, Expr::value(until))
        .col_expr(Column::LastStartedAt, Expr::value(now))
        .col_expr(Column::Runs, Expr::col(Column::Runs).add(1))
        .filter(Column::Task.eq(task))
        .filter(
            Column::LeaseUntil
                .is_null()
                .or(Column::LeaseUntil.lt(now))
                .or(Column::LeaseOwner.eq(owner)),
        )
        .exec(db.conn())
        .await?;
    Ok(if result.rows_affected == 1 {
        Lease::Acquired
    } else {
        Lease::HeldElsewhere
    })
}

/// Releases `owner`'s lease on `task` and records how the run ended.
pub async fn release(
    db: &Database,
    task: &str,
    owner: &str,
    finished_at: DateTime<Utc>,
    outcome: &str,
) -> Result<(), DbErr> {
    Entity::update_many()
        .col_expr(Column::LeaseOwner, Expr::value(Option::<String>::None))
        .col_expr(
            Column::LeaseUntil,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(Column::LastFinishedAt, Expr::value(finished_at))
        .col_expr(Column::LastOutcome, Expr::value(outcome))
        .filter(Column::Task.eq(task))
        .filter(Column::LeaseOwner.eq(owner))
        .exec(db.conn())
        .await?;
    Ok(())
}

/// The recorded state of `task`, if it has ever run.
pub async fn find(db: &Database, task: &str) -> Result<Option<scheduled_tasks::Model>, DbErr> {
    Entity::find_by_id(task.to_owned()).unique(db.conn()).await
}
