//! Provider mirrors: connected CalDAV accounts, the external calendars each connected account
//! offers (mirrored into a local calendar, or remembered as disabled so discovery does not
//! bring them back), the mapping of remote resources to local events, and the outbox of
//! provider writes that commits together with the local change it carries.
//!
//! - `caldav_accounts`: one per (user, server, username); the password is AES-256-GCM
//!   encrypted (`CALDAV_ENC_KEY`). `sync_status`/`sync_error_code` say when the server
//!   refused the credentials.
//! - `external_calendars`: one per remote calendar of an account; `calendar_id` is the local
//!   mirror (`NULL` and `disabled` once the user disconnected it). `sync_token` is the
//!   RFC 6578 token (or the ctag where a server has none) of the last pull.
//! - `external_events`: which remote resource (`remote_href`, its `etag` and `uid`) a local
//!   event of a mirror came from or was pushed to; one resource can hold several local
//!   events (a series and its edited occurrences), in `position` order.
//! - `provider_outbox`: provider writes still to deliver, in `id` order, claimed by the
//!   instance delivering them (`claimed_by`, `claimed_until`).

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
                    .table(CaldavAccounts::Table)
                    .col(uuid(CaldavAccounts::Id).primary_key())
                    .col(string_len(CaldavAccounts::UserId, 64))
                    .col(text(CaldavAccounts::ServerUrl))
                    .col(text(CaldavAccounts::Username))
                    .col(text(CaldavAccounts::EncryptedPassword))
                    .col(text(CaldavAccounts::PrincipalUrl))
                    .col(text(CaldavAccounts::HomeUrl))
                    .col(string_len_null(CaldavAccounts::SyncStatus, 32))
                    .col(text_null(CaldavAccounts::SyncErrorCode))
                    .col(timestamp_with_time_zone(CaldavAccounts::CreatedAt))
                    .col(timestamp_with_time_zone(CaldavAccounts::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("caldav_accounts_user_id_fk")
                            .from(CaldavAccounts::Table, CaldavAccounts::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("caldav_accounts_user_server_username_unique")
                    .table(CaldavAccounts::Table)
                    .col(CaldavAccounts::UserId)
                    .col(CaldavAccounts::ServerUrl)
                    .col(CaldavAccounts::Username)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ExternalCalendars::Table)
                    .col(uuid(ExternalCalendars::Id).primary_key())
                    .col(string_len(ExternalCalendars::Provider, 16))
                    .col(string_len(ExternalCalendars::AccountId, 255))
                    .col(string_len(ExternalCalendars::UserId, 64))
                    .col(text(ExternalCalendars::RemoteId))
                    .col(uuid_null(ExternalCalendars::CalendarId))
                    .col(boolean(ExternalCalendars::Disabled).default(false))
                    .col(boolean(ExternalCalendars::ReadOnly).default(false))
                    .col(text_null(ExternalCalendars::SyncToken))
                    .col(timestamp_with_time_zone(ExternalCalendars::CreatedAt))
                    .col(timestamp_with_time_zone(ExternalCalendars::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("external_calendars_user_id_fk")
                            .from(ExternalCalendars::Table, ExternalCalendars::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("external_calendars_calendar_id_fk")
                            .from(ExternalCalendars::Table, ExternalCalendars::CalendarId)
                            .to(Calendars::Table, Calendars::Id)
                            .on_delete(ForeignKeyAction::SetNull),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("external_calendars_account_remote_unique")
                    .table(ExternalCalendars::Table)
                    .col(ExternalCalendars::Provider)
                    .col(ExternalCalendars::AccountId)
                    .col(ExternalCalendars::RemoteId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("external_calendars_calendar_unique")
                    .table(ExternalCalendars::Table)
                    .col(ExternalCalendars::CalendarId)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ExternalEvents::Table)
                    .col(uuid(ExternalEvents::CalendarId))
                    .col(uuid(ExternalEvents::EventId))
                    .col(text(ExternalEvents::RemoteHref))
                    .col(integer(ExternalEvents::Position).default(0))
                    .col(text_null(ExternalEvents::Etag))
                    .col(text_null(ExternalEvents::Uid))
                    .col(timestamp_with_time_zone(ExternalEvents::UpdatedAt))
                    .primary_key(
                        Index::create()
                            .col(ExternalEvents::CalendarId)
                            .col(ExternalEvents::EventId),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("external_events_calendar_id_fk")
                            .from(ExternalEvents::Table, ExternalEvents::CalendarId)
                            .to(Calendars::Table, Calendars::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("external_events_event_id_fk")
                            .from(ExternalEvents::Table, ExternalEvents::EventId)
                            .to(Events::Table, Events::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("external_events_calendar_href_idx")
                    .table(ExternalEvents::Table)
                    .col(ExternalEvents::CalendarId)
                    .col(ExternalEvents::RemoteHref)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("external_events_event_id_idx")
                    .table(ExternalEvents::Table)
                    .col(ExternalEvents::EventId)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ProviderOutbox::Table)
                    .col(big_pk_auto(ProviderOutbox::Id))
                    .col(string_len(ProviderOutbox::Provider, 16))
                    .col(string_len(ProviderOutbox::AccountId, 255))
                    .col(uuid(ProviderOutbox::CalendarId))
                    .col(uuid(ProviderOutbox::EventId))
                    .col(string_len(ProviderOutbox::Action, 16))
                    .col(text_null(ProviderOutbox::RemoteHref))
                    .col(text_null(ProviderOutbox::Etag))
                    .col(integer(ProviderOutbox::Attempts).default(0))
                    .col(timestamp_with_time_zone(ProviderOutbox::NextAttemptAt))
                    .col(string_len_null(ProviderOutbox::ClaimedBy, 64))
                    .col(timestamp_with_time_zone_null(ProviderOutbox::ClaimedUntil))
                    .col(text_null(ProviderOutbox::LastError))
                    .col(timestamp_with_time_zone(ProviderOutbox::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("provider_outbox_account_idx")
                    .table(ProviderOutbox::Table)
                    .col(ProviderOutbox::Provider)
                    .col(ProviderOutbox::AccountId)
                    .col(ProviderOutbox::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("provider_outbox_event_idx")
                    .table(ProviderOutbox::Table)
                    .col(ProviderOutbox::EventId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            ProviderOutbox::Table.into_iden(),
            ExternalEvents::Table.into_iden(),
            ExternalCalendars::Table.into_iden(),
            CaldavAccounts::Table.into_iden(),
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
}

#[derive(DeriveIden)]
enum CaldavAccounts {
    Table,
    Id,
    UserId,
    ServerUrl,
    Username,
    EncryptedPassword,
    PrincipalUrl,
    HomeUrl,
    SyncStatus,
    SyncErrorCode,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ExternalCalendars {
    Table,
    Id,
    Provider,
    AccountId,
    UserId,
    RemoteId,
    CalendarId,
    Disabled,
    ReadOnly,
    SyncToken,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ExternalEvents {
    Table,
    CalendarId,
    EventId,
    RemoteHref,
    Position,
    Etag,
    Uid,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ProviderOutbox {
    Table,
    Id,
    Provider,
    AccountId,
    CalendarId,
    EventId,
    Action,
    RemoteHref,
    Etag,
    Attempts,
    NextAttemptAt,
    ClaimedBy,
    ClaimedUntil,
    LastError,
    CreatedAt,
}
