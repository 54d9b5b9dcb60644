//! Scheduling polls ("when can everyone meet?"): a question, its candidate days, the people
//! who answered and their answers.
//!
//! - `scheduling_polls`: one per poll. `owner_id` is the organizer's account (none for a
//!   poll made without one; the poll goes with the account), `owner_email` the organizer's
//!   address (whoever proves it may claim the poll). `token` (128 random bits, hex) is the
//!   public page's address and the only credential a participant needs. `calendar_id` is
//!   where the decided event lands (cleared when that calendar is deleted). `chosen_slot_id`
//!   and `event_id` are set together when a day is picked, in the same statement that
//!   closes the poll; neither is a foreign key, because the decision is claimed before its
//!   event exists (and the event stays when the poll goes).
//! - `scheduling_slots`: the candidate days, each 24 hours from its start.
//! - `scheduling_participants`: one per (poll, address); `user_id` is the account that
//!   proved the address, cleared when that account is deleted.
//! - `scheduling_votes`: one answer (`yes`, `if-needed`, `no`) per (slot, participant).

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
                    .table(SchedulingPolls::Table)
                    .col(uuid(SchedulingPolls::Id).primary_key())
                    .col(string_len_null(SchedulingPolls::OwnerId, 64))
                    .col(text(SchedulingPolls::OwnerEmail))
                    .col(text(SchedulingPolls::OwnerName))
                    .col(text(SchedulingPolls::Title))
                    .col(text_null(SchedulingPolls::Description))
                    .col(string_len_null(SchedulingPolls::ApproximateStartTime, 5))
                    .col(integer(SchedulingPolls::DurationMinutes))
                    .col(string_len(SchedulingPolls::Token, 64))
                    .col(timestamp_with_time_zone_null(SchedulingPolls::Deadline))
                    .col(uuid_null(SchedulingPolls::CalendarId))
                    .col(uuid_null(SchedulingPolls::ChosenSlotId))
                    .col(uuid_null(SchedulingPolls::EventId))
                    .col(timestamp_with_time_zone_null(SchedulingPolls::ClosedAt))
                    .col(timestamp_with_time_zone(SchedulingPolls::CreatedAt))
                    .col(timestamp_with_time_zone(SchedulingPolls::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("scheduling_polls_owner_id_fk")
                            .from(SchedulingPolls::Table, SchedulingPolls::OwnerId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("scheduling_polls_calendar_id_fk")
                            .from(SchedulingPolls::Table, SchedulingPolls::CalendarId)
                            .to(Calendars::Table, Calendars::Id)
                            .on_delete(ForeignKeyAction::SetNull),
                    )
                    .to_owned(),
            )
            .await?;
        for (name, column, unique) in [
            (
                "scheduling_polls_token_unique",
                SchedulingPolls::Token,
                true,
            ),
            ("scheduling_polls_owner_id", SchedulingPolls::OwnerId, false),
            (
                "scheduling_polls_owner_email",
                SchedulingPolls::OwnerEmail,
                false,
            ),
            (
                "scheduling_polls_calendar_id",
                SchedulingPolls::CalendarId,
                false,
            ),
        ] {
            let mut index = Index::create();
            index.name(name).table(SchedulingPolls::Table).col(column);
            if unique {
                index.unique();
            }
            manager.create_index(index.to_owned()).await?;
        }

        manager
            .create_table(
                Table::create()
                    .table(SchedulingSlots::Table)
                    .col(uuid(SchedulingSlots::Id).primary_key())
                    .col(uuid(SchedulingSlots::PollId))
                    .col(timestamp_with_time_zone(SchedulingSlots::StartAt))
                    .col(timestamp_with_time_zone(SchedulingSlots::EndAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("scheduling_slots_poll_id_fk")
                            .from(SchedulingSlots::Table, SchedulingSlots::PollId)
                            .to(SchedulingPolls::Table, SchedulingPolls::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("scheduling_slots_poll_start")
                    .table(SchedulingSlots::Table)
                    .col(SchedulingSlots::PollId)
                    .col(SchedulingSlots::StartAt)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(SchedulingParticipants::Table)
                    .col(uuid(SchedulingParticipants::Id).primary_key())
                    .col(uuid(SchedulingParticipants::PollId))
                    .col(string_len_null(SchedulingParticipants::UserId, 64))
                    .col(text(SchedulingParticipants::Email))
                    .col(text(SchedulingParticipants::Name))
                    .col(timestamp_with_time_zone(SchedulingParticipants::CreatedAt))
                    .col(timestamp_with_time_zone(SchedulingParticipants::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("scheduling_participants_poll_id_fk")
                            .from(
                                SchedulingParticipants::Table,
                                SchedulingParticipants::PollId,
                            )
                            .to(SchedulingPolls::Table, SchedulingPolls::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("scheduling_participants_user_id_fk")
                            .from(
                                SchedulingParticipants::Table,
                                SchedulingParticipants::UserId,
                            )
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::SetNull),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("scheduling_participants_poll_email_unique")
                    .table(SchedulingParticipants::Table)
                    .col(SchedulingParticipants::PollId)
                    .col(SchedulingParticipants::Email)
                    .unique()
                    .to_owned(),
            )
            .await?;
        for (name, column) in [
            (
                "scheduling_participants_user_id",
                SchedulingParticipants::UserId,
            ),
            (
                "scheduling_participants_email",
                SchedulingParticipants::Email,
            ),
        ] {
            manager
                .create_index(
                    Index::create()
                        .name(name)
                        .table(SchedulingParticipants::Table)
                        .col(column)
                        .to_owned(),
                )
                .await?;
        }

        manager
            .create_table(
                Table::create()
                    .table(SchedulingVotes::Table)
                    .col(uuid(SchedulingVotes::SlotId))
                    .col(uuid(SchedulingVotes::ParticipantId))
                    .col(string_len(SchedulingVotes::Value, 16))
                    .col(timestamp_with_time_zone(SchedulingVotes::CreatedAt))
                    .primary_key(
                        Index::create()
                            .col(SchedulingVotes::SlotId)
                            .col(SchedulingVotes::ParticipantId),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("scheduling_votes_slot_id_fk")
                            .from(SchedulingVotes::Table, SchedulingVotes::SlotId)
                            .to(SchedulingSlots::Table, SchedulingSlots::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("scheduling_votes_participant_id_fk")
                            .from(SchedulingVotes::Table, SchedulingVotes::ParticipantId)
                            .to(SchedulingParticipants::Table, SchedulingParticipants::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("scheduling_votes_participant_id")
                    .table(SchedulingVotes::Table)
                    .col(SchedulingVotes::ParticipantId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(SchedulingVotes::Table).to_owned())
            .await?;
        manager
            .drop_table(
                Table::drop()
                    .table(SchedulingParticipants::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(SchedulingSlots::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(SchedulingPolls::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum SchedulingPolls {
    Table,
    Id,
    OwnerId,
    OwnerEmail,
    OwnerName,
    Title,
    Description,
    ApproximateStartTime,
    DurationMinutes,
    Token,
    Deadline,
    CalendarId,
    ChosenSlotId,
    EventId,
    ClosedAt,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum SchedulingSlots {
    Table,
    Id,
    PollId,
    StartAt,
    EndAt,
}

#[derive(DeriveIden)]
enum SchedulingParticipants {
    Table,
    Id,
    PollId,
    UserId,
    Email,
    Name,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum SchedulingVotes {
    Table,
    SlotId,
    ParticipantId,
    Value,
    CreatedAt,
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
