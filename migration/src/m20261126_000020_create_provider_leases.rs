//! `provider_leases`: which instance runs a connected account's sync (pulls and outbox
//! deliveries) when several Bowline instances share one database, and the account's "sync
//! now" requests between them.
//!
//! One row per (provider, account). `lease_owner` holds the account until `lease_until`;
//! another instance takes it once that has passed. `pull_requested_at` is set by an instance
//! asked to sync an account it does not hold; the holder pulls and records `pulled_at` (not
//! before the request it answered) and whether the pull succeeded (`pull_ok`).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ProviderLeases::Table)
                    .col(string_len(ProviderLeases::Provider, 16))
                    .col(string_len(ProviderLeases::AccountId, 255))
                    .col(string_len_null(ProviderLeases::LeaseOwner, 64))
                    .col(timestamp_with_time_zone_null(ProviderLeases::LeaseUntil))
                    .col(timestamp_with_time_zone_null(
                        ProviderLeases::PullRequestedAt,
                    ))
                    .col(timestamp_with_time_zone_null(ProviderLeases::PulledAt))
                    .col(boolean_null(ProviderLeases::PullOk))
                    .primary_key(
                        Index::create()
                            .col(ProviderLeases::Provider)
                            .col(ProviderLeases::AccountId),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(ProviderLeases::Table).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum ProviderLeases {
    Table,
    Provider,
    AccountId,
    LeaseOwner,
    LeaseUntil,
    PullRequestedAt,
    PulledAt,
    PullOk,
}
