//! Per-user state beyond settings: per-event reminder overrides (one per user and event),
//! Pages (private view profiles, soft-deleted, at most one active default per user through a
//! partial unique index) and avatar images (bytes in the database, one per user).

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
                    .table(EventReminders::Table)
                    .col(string_len(EventReminders::UserId, 64))
                    .col(uuid(EventReminders::EventId))
                    .col(json_binary(EventReminders::Rule))
                    .col(timestamp_with_time_zone(EventReminders::UpdatedAt))
                    .primary_key(
                        Index::create()
                            .col(EventReminders::UserId)
                            .col(EventReminders::EventId),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("event_reminders_user_id_fk")
                            .from(EventReminders::Table, EventReminders::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("event_reminders_event_id_fk")
                            .from(EventReminders::Table, EventReminders::EventId)
                            .to(Events::Table, Events::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("event_reminders_event_id_idx")
                    .table(EventReminders::Table)
                    .col(EventReminders::EventId)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Pages::Table)
                    .col(uuid(Pages::Id).primary_key())
                    .col(string_len(Pages::UserId, 64))
                    .col(string_len(Pages::Name, 80))
                    .col(integer(Pages::Position))
                    .col(boolean(Pages::IsDefault).default(false))
                    .col(json_binary(Pages::Config))
                    .col(big_integer(Pages::Revision).default(1))
                    .col(timestamp_with_time_zone(Pages::CreatedAt))
                    .col(timestamp_with_time_zone(Pages::UpdatedAt))
                    .col(timestamp_with_time_zone_null(Pages::DeletedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("pages_user_id_fk")
                            .from(Pages::Table, Pages::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("pages_user_position_idx")
                    .table(Pages::Table)
                    .col(Pages::UserId)
                    .col(Pages::Position)
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX pages_one_active_default_per_user \
                 ON pages (user_id) WHERE is_default AND deleted_at IS NULL",
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Avatars::Table)
                    .col(string_len(Avatars::UserId, 64).primary_key())
                    .col(string_len(Avatars::Mime, 32))
                    .col(blob(Avatars::Bytes))
                    .col(big_integer(Avatars::Version))
                    .col(timestamp_with_time_zone(Avatars::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("avatars_user_id_fk")
                            .from(Avatars::Table, Avatars::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            Avatars::Table.into_iden(),
            Pages::Table.into_iden(),
            EventReminders::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Events {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum EventReminders {
    Table,
    UserId,
    EventId,
    Rule,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Pages {
    Table,
    Id,
    UserId,
    Name,
    Position,
    IsDefault,
    Config,
    Revision,
    CreatedAt,
    UpdatedAt,
    DeletedAt,
}

#[derive(DeriveIden)]
enum Avatars {
    Table,
    UserId,
    Mime,
    Bytes,
    Version,
    UpdatedAt,
}
