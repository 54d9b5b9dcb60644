//! What a sign-in account needs to mirror its provider's calendars (Google, Microsoft): the
//! OAuth tokens obtained by linking it with calendar consent, when the access token expires,
//! the account's label at the provider (its email), and whether the provider still accepts
//! the tokens.
//!
//! - `access_token`, `refresh_token`: AES-256-GCM sealed (`CALDAV_ENC_KEY`), never plain.
//! - `access_token_expires_at`: refreshed a minute before it.
//! - `label`: the provider's email for the account, shown beside its mirrors.
//! - `sync_status` / `sync_error_code`: `reconnect_required` and the provider's error code
//!   (`invalid_grant`) once the refresh token was refused; `NULL` while all is well.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Accounts {
    Table,
    AccessToken,
    RefreshToken,
    AccessTokenExpiresAt,
    Label,
    SyncStatus,
    SyncErrorCode,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// All or nothing.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters a table one change at a time.
        let columns = [
            ColumnDef::new(Accounts::AccessToken)
                .text()
                .null()
                .to_owned(),
            ColumnDef::new(Accounts::RefreshToken)
                .text()
                .null()
                .to_owned(),
            ColumnDef::new(Accounts::AccessTokenExpiresAt)
                .timestamp_with_time_zone()
                .null()
                .to_owned(),
            ColumnDef::new(Accounts::Label).text().null().to_owned(),
            ColumnDef::new(Accounts::SyncStatus)
                .string_len(32)
                .null()
                .to_owned(),
            ColumnDef::new(Accounts::SyncErrorCode)
                .text()
                .null()
                .to_owned(),
        ];
        for mut column in columns {
            manager
                .alter_table(
                    Table::alter()
                        .table(Accounts::Table)
                        .add_column(&mut column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            Accounts::SyncErrorCode,
            Accounts::SyncStatus,
            Accounts::Label,
            Accounts::AccessTokenExpiresAt,
            Accounts::RefreshToken,
            Accounts::AccessToken,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Accounts::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
