//! `calendar_events.linked_by`: who put an event into a calendar other than its home (the
//! user who linked it, or who created it there together with its home). The home calendar
//! governs an event, so a member who loses it loses the links they made elsewhere.
//!
//! The event's own link into its home stays `NULL`, as do links made before this column
//! existed (nobody can tell who made them). The index holds only the links someone made.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum CalendarEvents {
    Table,
    LinkedBy,
}

const INDEX: &str = "calendar_events_linked_by";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// All or nothing.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(CalendarEvents::Table)
                    .add_column(ColumnDef::new(CalendarEvents::LinkedBy).text().null())
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(&format!(
                "CREATE INDEX {INDEX} ON calendar_events (linked_by) WHERE linked_by IS NOT NULL"
            ))
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared(&format!("DROP INDEX {INDEX}"))
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(CalendarEvents::Table)
                    .drop_column(CalendarEvents::LinkedBy)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }
}
