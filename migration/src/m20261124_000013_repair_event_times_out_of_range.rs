//! Moves event times stored outside the years 1 to 9999 to the nearest end of that range.
//!
//! Imports used to accept such times (a DTSTART on 31 December 9999 with a two-hour DURATION
//! ends in the year 10000; a DATE in year 0), which no client can read back and which broke
//! the events read of everyone who could see them. Every write path now refuses them; this
//! repairs the rows written before. A repaired event moves one revision up and counts as
//! changed now, so delta reads hand it out again.
//!
//! SQLite keeps times as text (`9999-12-31T23:00:00+00:00`): a value outside the range is
//! written with a sign (`+10000-…`, `-0001-…`) or as year `0000`, all of which sort before
//! `0001`. PostgreSQL compares the instants.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const SQLITE: &str = "UPDATE events SET \
    start = CASE WHEN start >= '0001' THEN start \
                 WHEN substr(start, 1, 1) = '+' THEN '9999-12-31T23:59:59.999+00:00' \
                 ELSE '0001-01-01T00:00:00+00:00' END, \
    \"end\" = CASE WHEN \"end\" >= '0001' THEN \"end\" \
                 WHEN substr(\"end\", 1, 1) = '+' THEN '9999-12-31T23:59:59.999+00:00' \
                 ELSE '0001-01-01T00:00:00+00:00' END, \
    revision = revision + 1, \
    updated_at = strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now') \
    WHERE start < '0001' OR \"end\" < '0001'";

const POSTGRES: &str = "UPDATE events SET \
    start = LEAST(GREATEST(start, TIMESTAMPTZ '0001-01-01 00:00:00+00'), \
                  TIMESTAMPTZ '9999-12-31 23:59:59.999+00'), \
    \"end\" = LEAST(GREATEST(\"end\", TIMESTAMPTZ '0001-01-01 00:00:00+00'), \
                  TIMESTAMPTZ '9999-12-31 23:59:59.999+00'), \
    revision = revision + 1, \
    updated_at = now() \
    WHERE start < TIMESTAMPTZ '0001-01-01 00:00:00+00' \
       OR start > TIMESTAMPTZ '9999-12-31 23:59:59.999+00' \
       OR \"end\" < TIMESTAMPTZ '0001-01-01 00:00:00+00' \
       OR \"end\" > TIMESTAMPTZ '9999-12-31 23:59:59.999+00'";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// All or nothing.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let statement = match manager.get_database_backend() {
            sea_orm::DatabaseBackend::Postgres => POSTGRES,
            _ => SQLITE,
        };
        manager
            .get_connection()
            .execute_unprepared(statement)
            .await?;
        Ok(())
    }

    /// The old values are gone; there is nothing to put back.
    async fn down(&self, _manager: &SchemaManager) -> Result<(), DbErr> {
        Ok(())
    }
}
