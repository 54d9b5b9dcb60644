//! Events and everything that hangs off them: their links into calendars, attendance, the
//! per-user visibility losses that delta reads report as `deletedIds`, and pending
//! change-notification mails.

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
                    .table(Events::Table)
                    .col(uuid(Events::Id).primary_key())
                    .col(string_len(Events::CreatorId, 64))
                    .col(text(Events::Organizer))
                    .col(text(Events::Title))
                    .col(string_len(Events::Color, 32))
                    .col(timestamp_with_time_zone(Events::Start))
                    .col(timestamp_with_time_zone(Events::End))
                    .col(boolean(Events::IsAllDay))
                    .col(boolean(Events::IsCanceled))
                    .col(boolean(Events::HasAttendees))
                    .col(text_null(Events::Description))
                    .col(text_null(Events::Location))
                    .col(text_null(Events::Recurrence))
                    .col(text_null(Events::Url))
                    .col(uuid_null(Events::OriginCalendarId))
                    .col(big_integer(Events::Revision).default(1))
                    .col(timestamp_with_time_zone(Events::CreatedAt))
                    .col(timestamp_with_time_zone(Events::UpdatedAt))
                    .col(timestamp_with_time_zone_null(Events::DeletedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("events_updated_at_idx")
                    .table(Events::Table)
                    .col(Events::UpdatedAt)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(CalendarEvents::Table)
                    .col(uuid(CalendarEvents::EventId))
                    .col(uuid(CalendarEvents::CalendarId))
                    .col(timestamp_with_time_zone(CalendarEvents::CreatedAt))
                    .primary_key(
                        Index::create()
                            .name("calendar_events_event_id_calendar_id_unique")
                            .col(CalendarEvents::EventId)
                            .col(CalendarEvents::CalendarId),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("calendar_events_event_id_fk")
                            .from(CalendarEvents::Table, CalendarEvents::EventId)
                            .to(Events::Table, Events::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("calendar_events_calendar_id_fk")
                            .from(CalendarEvents::Table, CalendarEvents::CalendarId)
                            .to(Calendars::Table, Calendars::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("calendar_events_calendar_id_idx")
                    .table(CalendarEvents::Table)
                    .col(CalendarEvents::CalendarId)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(EventAttendees::Table)
                    .col(uuid(EventAttendees::EventId))
                    .col(string_len(EventAttendees::UserId, 64))
                    .col(string_len(EventAttendees::Status, 16).default("going"))
                    .col(timestamp_with_time_zone(EventAttendees::CreatedAt))
                    .col(timestamp_with_time_zone(EventAttendees::UpdatedAt))
                    .primary_key(
                        Index::create()
                            .name("event_attendees_pk")
                            .col(EventAttendees::EventId)
                            .col(EventAttendees::UserId),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("event_attendees_event_id_fk")
                            .from(EventAttendees::Table, EventAttendees::EventId)
                            .to(Events::Table, Events::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("event_attendees_user_id_fk")
                            .from(EventAttendees::Table, EventAttendees::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(EventVisibilityLosses::Table)
                    .col(uuid(EventVisibilityLosses::Id).primary_key())
                    .col(string_len(EventVisibilityLosses::UserId, 64))
                    .col(uuid(EventVisibilityLosses::EventId))
                    .col(timestamp_with_time_zone(EventVisibilityLosses::At))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("event_visibility_losses_user_at_idx")
                    .table(EventVisibilityLosses::Table)
                    .col(EventVisibilityLosses::UserId)
                    .col(EventVisibilityLosses::At)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(PendingNotifications::Table)
                    .col(uuid(PendingNotifications::Id).primary_key())
                    .col(string_len(PendingNotifications::UserId, 64))
                    .col(string_len(PendingNotifications::Kind, 16))
                    .col(uuid(PendingNotifications::SubjectId))
                    .col(json_binary(PendingNotifications::Payload))
                    .col(timestamp_with_time_zone(PendingNotifications::DueAt))
                    .col(timestamp_with_time_zone_null(
                        PendingNotifications::ClaimedUntil,
                    ))
                    .col(timestamp_with_time_zone(PendingNotifications::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("pending_notifications_user_id_fk")
                            .from(PendingNotifications::Table, PendingNotifications::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("pending_notifications_user_kind_subject_unique")
                    .table(PendingNotifications::Table)
                    .col(PendingNotifications::UserId)
                    .col(PendingNotifications::Kind)
                    .col(PendingNotifications::SubjectId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("pending_notifications_due_at_idx")
                    .table(PendingNotifications::Table)
                    .col(PendingNotifications::DueAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            PendingNotifications::Table.into_iden(),
            EventVisibilityLosses::Table.into_iden(),
            EventAttendees::Table.into_iden(),
            CalendarEvents::Table.into_iden(),
            Events::Table.into_iden(),
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
enum Calendars {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Events {
    Table,
    Id,
    CreatorId,
    Organizer,
    Title,
    Color,
    Start,
    End,
    IsAllDay,
    IsCanceled,
    HasAttendees,
    Description,
    Location,
    Recurrence,
    Url,
    OriginCalendarId,
    Revision,
    CreatedAt,
    UpdatedAt,
    DeletedAt,
}

#[derive(DeriveIden)]
enum CalendarEvents {
    Table,
    EventId,
    CalendarId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum EventAttendees {
    Table,
    EventId,
    UserId,
    Status,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum EventVisibilityLosses {
    Table,
    Id,
    UserId,
    EventId,
    At,
}

#[derive(DeriveIden)]
enum PendingNotifications {
    Table,
    Id,
    UserId,
    Kind,
    SubjectId,
    Payload,
    DueAt,
    ClaimedUntil,
    CreatedAt,
}
