//! Federated connections: a user's link to a calendar server of another operator, made by
//! accepting an invite there.
//!
//! - `federation_connections`: one per (user, server origin). `remote_user_id` is the shadow
//!   user the other server made for this user; `token` is the member token it issued,
//!   AES-256-GCM sealed (`CALDAV_ENC_KEY`), never plain; `token_expires_at` is when that
//!   server stops accepting it (rotated ahead of it).

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
                    .table(FederationConnections::Table)
                    .col(uuid(FederationConnections::Id).primary_key())
                    .col(string_len(FederationConnections::UserId, 64))
                    .col(text(FederationConnections::Server))
                    .col(text(FederationConnections::RemoteUserId))
                    .col(text(FederationConnections::Token))
                    .col(timestamp_with_time_zone(
                        FederationConnections::TokenExpiresAt,
                    ))
                    .col(timestamp_with_time_zone(FederationConnections::CreatedAt))
                    .col(timestamp_with_time_zone(FederationConnections::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("federation_connections_user_id_fk")
                            .from(FederationConnections::Table, FederationConnections::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("federation_connections_user_server_unique")
                    .table(FederationConnections::Table)
                    .col(FederationConnections::UserId)
                    .col(FederationConnections::Server)
                    .unique()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(FederationConnections::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum FederationConnections {
    Table,
    Id,
    UserId,
    Server,
    RemoteUserId,
    Token,
    TokenExpiresAt,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}
