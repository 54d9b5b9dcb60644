//! Identity: users, their sessions, their sign-in accounts (password or provider), one-time
//! verification tokens, federation member tokens, and server-wide secrets.
//!
//! Session tokens, member tokens and one-time tokens are stored as SHA-256 hashes only.

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
                    .table(Users::Table)
                    .col(string_len(Users::Id, 64).primary_key())
                    .col(text(Users::Name))
                    .col(string_len_uniq(Users::Email, 320))
                    .col(boolean(Users::EmailVerified).default(false))
                    .col(text_null(Users::Image))
                    .col(boolean(Users::IsExternal).default(false))
                    .col(text_null(Users::HomeServer))
                    .col(timestamp_with_time_zone(Users::CreatedAt))
                    .col(timestamp_with_time_zone(Users::UpdatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Sessions::Table)
                    .col(string_len(Sessions::Id, 64).primary_key())
                    .col(string_len_uniq(Sessions::TokenHash, 64))
                    .col(string_len(Sessions::UserId, 64))
                    .col(timestamp_with_time_zone(Sessions::ExpiresAt))
                    .col(boolean(Sessions::Remember).default(true))
                    .col(text(Sessions::IpAddress))
                    .col(text(Sessions::UserAgent))
                    .col(timestamp_with_time_zone(Sessions::CreatedAt))
                    .col(timestamp_with_time_zone(Sessions::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("sessions_user_id_fk")
                            .from(Sessions::Table, Sessions::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("sessions_user_id_idx")
                    .table(Sessions::Table)
                    .col(Sessions::UserId)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Accounts::Table)
                    .col(string_len(Accounts::Id, 64).primary_key())
                    .col(string_len(Accounts::UserId, 64))
                    .col(string_len(Accounts::ProviderId, 32))
                    .col(string_len(Accounts::AccountId, 255))
                    .col(text_null(Accounts::PasswordHash))
                    .col(text_null(Accounts::Scope))
                    .col(timestamp_with_time_zone(Accounts::CreatedAt))
                    .col(timestamp_with_time_zone(Accounts::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("accounts_user_id_fk")
                            .from(Accounts::Table, Accounts::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("accounts_provider_account_unique")
                    .table(Accounts::Table)
                    .col(Accounts::ProviderId)
                    .col(Accounts::AccountId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("accounts_user_id_idx")
                    .table(Accounts::Table)
                    .col(Accounts::UserId)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Verifications::Table)
                    .col(string_len(Verifications::Id, 64).primary_key())
                    .col(string_len_uniq(Verifications::Identifier, 255))
                    .col(text(Verifications::Value))
                    .col(timestamp_with_time_zone(Verifications::ExpiresAt))
                    .col(timestamp_with_time_zone(Verifications::CreatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(MemberTokens::Table)
                    .col(uuid(MemberTokens::Id).primary_key())
                    .col(string_len(MemberTokens::UserId, 64))
                    .col(string_len_uniq(MemberTokens::TokenHash, 64))
                    .col(timestamp_with_time_zone(MemberTokens::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("member_tokens_user_id_fk")
                            .from(MemberTokens::Table, MemberTokens::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ServerSecrets::Table)
                    .col(string_len(ServerSecrets::Name, 64).primary_key())
                    .col(text(ServerSecrets::Value))
                    .col(timestamp_with_time_zone(ServerSecrets::CreatedAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            ServerSecrets::Table.into_iden(),
            MemberTokens::Table.into_iden(),
            Verifications::Table.into_iden(),
            Accounts::Table.into_iden(),
            Sessions::Table.into_iden(),
            Users::Table.into_iden(),
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
    Name,
    Email,
    EmailVerified,
    Image,
    IsExternal,
    HomeServer,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Sessions {
    Table,
    Id,
    TokenHash,
    UserId,
    ExpiresAt,
    Remember,
    IpAddress,
    UserAgent,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Accounts {
    Table,
    Id,
    UserId,
    ProviderId,
    AccountId,
    PasswordHash,
    Scope,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Verifications {
    Table,
    Id,
    Identifier,
    Value,
    ExpiresAt,
    CreatedAt,
}

#[derive(DeriveIden)]
enum MemberTokens {
    Table,
    Id,
    UserId,
    TokenHash,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ServerSecrets {
    Table,
    Name,
    Value,
    CreatedAt,
}
