//! Per-user "view changed" markers: a user who still sees an event but through fewer
//! calendars (they left, or were removed from, one of its calendars) gets a row, so delta
//! reads return the event again with its reduced `calendars`. Kept as long as visibility
//! losses (the cleanup deletes both after 30 days).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// All or nothing, on SQLite as on PostgreSQL.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(EventViewChanges::Table)
                    .col(uuid(EventViewChanges::Id).primary_key())
                    .col(string_len(EventViewChanges::UserId, 64))
                    .col(uuid(EventViewChanges::EventId))
                    .col(timestamp_with_time_zone(EventViewChanges::At))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("event_view_changes_user_at_idx")
                    .table(EventViewChanges::Table)
                    .col(EventViewChanges::UserId)
                    .col(EventViewChanges::At)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("event_view_changes_at_idx")
                    .table(EventViewChanges::Table)
                    .col(EventViewChanges::At)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(EventViewChanges::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum EventViewChanges {
    Table,
    Id,
    UserId,
    EventId,
    At,
}
