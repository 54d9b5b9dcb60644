//! `scheduled_tasks`: one row per periodic task (cleanup, later provider sync and mail
//! drains). The row is the task's lease, so that when several Bowline instances share one
//! database only one of them runs a given tick, and it records the last run for operators.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ScheduledTasks::Table)
                    .col(string_len(ScheduledTasks::Task, 64).primary_key())
                    .col(string_len_null(ScheduledTasks::LeaseOwner, 64))
                    .col(timestamp_with_time_zone_null(ScheduledTasks::LeaseUntil))
                    .col(timestamp_with_time_zone_null(ScheduledTasks::LastStartedAt))
                    .col(timestamp_with_time_zone_null(
                        ScheduledTasks::LastFinishedAt,
                    ))
                    .col(string_len_null(ScheduledTasks::LastOutcome, 32))
                    .col(big_integer(ScheduledTasks::Runs).default(0))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(ScheduledTasks::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum ScheduledTasks {
    Table,
    Task,
    LeaseOwner,
    LeaseUntil,
    LastStartedAt,
    LastFinishedAt,
    LastOutcome,
    Runs,
}
