//! A periodic task's lease and last run (see the `scheduler` actor).

use sea_orm::entity::prelude::*;

/// One periodic task, identified by its name.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "scheduled_tasks")]
pub struct Model {
    /// Task name, e.g. `cleanup`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub task: String,
    /// Instance currently holding the lease, if any.
    pub lease_owner: Option<String>,
    /// The lease is free once this instant has passed.
    pub lease_until: Option<DateTimeUtc>,
    /// When the last run started.
    pub last_started_at: Option<DateTimeUtc>,
    /// When the last run finished.
    pub last_finished_at: Option<DateTimeUtc>,
    /// `ok` or `failed` for the last finished run.
    pub last_outcome: Option<String>,
    /// Number of runs started, over the table's lifetime.
    pub runs: i64,
}

/// `scheduled_tasks` has no relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
