//! Published event pages: `event_shares`, one row per publication of an event.
//!
//! `token` (128 random bits, hex) is the page's address and the only credential a reader
//! needs. An event has at most one live share (`revoked_at IS NULL`, a partial unique
//! index); a revoked row stays so that its token stays dead. `theme` is the page's look,
//! JSON of a closed set of choices checked before it is written. Rows go with their event's
//! tombstone and with the user who published them.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// All or nothing.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(EventShares::Table)
                    .col(string_len(EventShares::Token, 64).primary_key())
                    .col(uuid(EventShares::EventId))
                    .col(string_len(EventShares::CreatedBy, 64))
                    .col(string_len(EventShares::Mode, 16))
                    .col(boolean(EventShares::Indexable).default(false))
                    .col(string_len(EventShares::AttendeeVisibility, 16).default("counts"))
                    .col(text(EventShares::Theme))
                    .col(timestamp_with_time_zone(EventShares::CreatedAt))
                    .col(timestamp_with_time_zone(EventShares::UpdatedAt))
                    .col(timestamp_with_time_zone_null(EventShares::RevokedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("event_shares_event_id_fk")
                            .from(EventShares::Table, EventShares::EventId)
                            .to(Events::Table, Events::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("event_shares_created_by_fk")
                            .from(EventShares::Table, EventShares::CreatedBy)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("event_shares_created_by")
                    .table(EventShares::Table)
                    .col(EventShares::CreatedBy)
                    .to_owned(),
            )
            .await?;
        // One live publication per event; both databases take a partial index.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX event_shares_live_event_unique \
                 ON event_shares (event_id) WHERE revoked_at IS NULL",
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("event_shares_event_id")
                    .table(EventShares::Table)
                    .col(EventShares::EventId)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(EventShares::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum EventShares {
    Table,
    Token,
    EventId,
    CreatedBy,
    Mode,
    Indexable,
    AttendeeVisibility,
    Theme,
    CreatedAt,
    UpdatedAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum Events {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}
