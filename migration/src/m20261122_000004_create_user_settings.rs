//! Per-user settings, kept as one JSON document with a revision for compare-and-swap.

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
                    .table(UserSettings::Table)
                    .col(string_len(UserSettings::UserId, 64).primary_key())
                    .col(json_binary(UserSettings::Value))
                    .col(big_integer(UserSettings::Revision).default(1))
                    .col(timestamp_with_time_zone(UserSettings::CreatedAt))
                    .col(timestamp_with_time_zone(UserSettings::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("user_settings_user_id_fk")
                            .from(UserSettings::Table, UserSettings::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(UserSettings::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum UserSettings {
    Table,
    UserId,
    Value,
    Revision,
    CreatedAt,
    UpdatedAt,
}
