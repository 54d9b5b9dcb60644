//! Calendar invites: the invite id is the token (a UUID, the capability for previewing and
//! joining). `uses` counts memberships that resulted; a revoked invite keeps its row.

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
                    .table(Invites::Table)
                    .col(uuid(Invites::Id).primary_key())
                    .col(uuid(Invites::CalendarId))
                    .col(string_len_null(Invites::CreatedBy, 64))
                    .col(timestamp_with_time_zone_null(Invites::ExpiresAt))
                    .col(integer_null(Invites::MaxUses))
                    .col(integer(Invites::Uses).default(0))
                    .col(timestamp_with_time_zone_null(Invites::RevokedAt))
                    .col(timestamp_with_time_zone(Invites::CreatedAt))
                    .col(timestamp_with_time_zone(Invites::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("invites_calendar_id_fk")
                            .from(Invites::Table, Invites::CalendarId)
                            .to(Calendars::Table, Calendars::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("invites_created_by_fk")
                            .from(Invites::Table, Invites::CreatedBy)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::SetNull),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("invites_calendar_id_idx")
                    .table(Invites::Table)
                    .col(Invites::CalendarId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Invites::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Calendars {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Invites {
    Table,
    Id,
    CalendarId,
    CreatedBy,
    ExpiresAt,
    MaxUses,
    Uses,
    RevokedAt,
    CreatedAt,
    UpdatedAt,
}
