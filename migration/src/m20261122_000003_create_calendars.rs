//! Calendars and their members. Every user has exactly one default (personal) calendar,
//! enforced by a partial unique index; a membership is unique per (calendar, user).

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
                    .table(Calendars::Table)
                    .col(uuid(Calendars::Id).primary_key())
                    .col(string_len(Calendars::CreatorId, 64))
                    .col(text(Calendars::Name))
                    .col(string_len(Calendars::Color, 32))
                    .col(boolean(Calendars::IsDefault).default(false))
                    .col(timestamp_with_time_zone(Calendars::CreatedAt))
                    .col(timestamp_with_time_zone(Calendars::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("calendars_creator_id_fk")
                            .from(Calendars::Table, Calendars::CreatorId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("calendars_creator_id_idx")
                    .table(Calendars::Table)
                    .col(Calendars::CreatorId)
                    .to_owned(),
            )
            .await?;
        // Partial index: the same text on both backends.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX calendars_one_default_per_creator \
                 ON calendars (creator_id) WHERE is_default",
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(CalendarMembers::Table)
                    .col(uuid(CalendarMembers::Id).primary_key())
                    .col(uuid(CalendarMembers::CalendarId))
                    .col(string_len(CalendarMembers::UserId, 64))
                    .col(string_len(CalendarMembers::Role, 16))
                    .col(json_binary_null(CalendarMembers::Reminder))
                    .col(timestamp_with_time_zone(CalendarMembers::CreatedAt))
                    .col(timestamp_with_time_zone(CalendarMembers::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("calendar_members_calendar_id_fk")
                            .from(CalendarMembers::Table, CalendarMembers::CalendarId)
                            .to(Calendars::Table, Calendars::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("calendar_members_user_id_fk")
                            .from(CalendarMembers::Table, CalendarMembers::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("calendar_members_calendar_user_unique")
                    .table(CalendarMembers::Table)
                    .col(CalendarMembers::CalendarId)
                    .col(CalendarMembers::UserId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("calendar_members_user_id_idx")
                    .table(CalendarMembers::Table)
                    .col(CalendarMembers::UserId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(CalendarMembers::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(Calendars::Table).to_owned())
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
    CreatorId,
    Name,
    Color,
    IsDefault,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum CalendarMembers {
    Table,
    Id,
    CalendarId,
    UserId,
    Role,
    Reminder,
    CreatedAt,
    UpdatedAt,
}
