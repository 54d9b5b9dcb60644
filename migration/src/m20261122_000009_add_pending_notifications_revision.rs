//! A revision on pending change notifications: every change queued into an existing row
//! raises it, and a sender deletes a row after the mail was accepted only if its revision is
//! still the one it claimed, so a change that arrives while the row's mail is in flight is
//! never lost (the row stays and is sent in the next batch).

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
            .alter_table(
                Table::alter()
                    .table(PendingNotifications::Table)
                    .add_column(big_integer(PendingNotifications::Revision).default(1))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(PendingNotifications::Table)
                    .drop_column(PendingNotifications::Revision)
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum PendingNotifications {
    Table,
    Revision,
}
