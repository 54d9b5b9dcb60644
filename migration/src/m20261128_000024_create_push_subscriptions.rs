//! Reminders sent as web push.
//!
//! - `push_subscriptions`: one per browser endpoint (unique), with the keys its messages are
//!   encrypted to. It belongs to the session that subscribed it: signing that session out,
//!   revoking it or deleting the account removes it.
//! - `push_dispatch`: the dispatcher's durable state, one row per dispatcher (`reminders`):
//!   how far it has sent (`cursor`), and which instance holds it until when (`holder`,
//!   `lease_until`), so that with several instances each reminder is sent by one.

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
                    .table(PushSubscriptions::Table)
                    .col(uuid(PushSubscriptions::Id).primary_key())
                    .col(string_len(PushSubscriptions::UserId, 64))
                    .col(string_len(PushSubscriptions::SessionId, 64))
                    .col(string_len(PushSubscriptions::Endpoint, 2048))
                    .col(string_len(PushSubscriptions::P256dh, 256))
                    .col(string_len(PushSubscriptions::Auth, 256))
                    .col(timestamp_with_time_zone(PushSubscriptions::CreatedAt))
                    .col(timestamp_with_time_zone(PushSubscriptions::LastSeenAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("push_subscriptions_user_id_fk")
                            .from(PushSubscriptions::Table, PushSubscriptions::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("push_subscriptions_session_id_fk")
                            .from(PushSubscriptions::Table, PushSubscriptions::SessionId)
                            .to(Sessions::Table, Sessions::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("push_subscriptions_endpoint_unique")
                    .table(PushSubscriptions::Table)
                    .col(PushSubscriptions::Endpoint)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("push_subscriptions_user_id")
                    .table(PushSubscriptions::Table)
                    .col(PushSubscriptions::UserId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("push_subscriptions_session_id")
                    .table(PushSubscriptions::Table)
                    .col(PushSubscriptions::SessionId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(PushDispatch::Table)
                    .col(string_len(PushDispatch::Name, 64).primary_key())
                    .col(timestamp_with_time_zone_null(PushDispatch::Cursor))
                    .col(string_len_null(PushDispatch::Holder, 128))
                    .col(timestamp_with_time_zone_null(PushDispatch::LeaseUntil))
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(PushDispatch::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(PushSubscriptions::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum PushSubscriptions {
    Table,
    Id,
    UserId,
    SessionId,
    Endpoint,
    P256dh,
    Auth,
    CreatedAt,
    LastSeenAt,
}

#[derive(DeriveIden)]
enum PushDispatch {
    Table,
    Name,
    Cursor,
    Holder,
    LeaseUntil,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Sessions {
    Table,
    Id,
}
