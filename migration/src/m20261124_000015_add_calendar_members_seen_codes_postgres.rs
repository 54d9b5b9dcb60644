//! PostgreSQL's `calendar_members_seen` check (migration `m20261124_000012`) names its
//! refusals by SQLSTATE instead of by message, and takes the write's lock bound from the
//! statement instead of a literal:
//! - `BW001` (`calendar_members_changed`): a calendar is gone or its memberships moved;
//! - `BW002` (`event_write_too_slow`): the statement has held its locks past the bound the
//!   row gives in `write_bound_ms` (the application derives it from its one write bound).
//!
//! A row without `write_bound_ms` keeps the 4 seconds of the first version of the check.
//! The codes are spelled out here: migrations do not import application code.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const UP: [&str; 2] = [
    "CREATE OR REPLACE VIEW calendar_members_seen AS \
     SELECT id AS calendar_id, members_version, NULL::bigint AS write_bound_ms FROM calendars",
    "CREATE OR REPLACE FUNCTION calendar_members_seen_check() RETURNS trigger \
     LANGUAGE plpgsql AS $$ \
     BEGIN \
       PERFORM 1 FROM calendars \
         WHERE id = NEW.calendar_id AND members_version = NEW.members_version \
         FOR NO KEY UPDATE; \
       IF NOT FOUND THEN \
         RAISE EXCEPTION 'calendar_members_changed' USING ERRCODE = 'BW001'; \
       END IF; \
       IF clock_timestamp() - statement_timestamp() > \
          make_interval(secs => coalesce(NEW.write_bound_ms, 4000) / 1000.0) THEN \
         RAISE EXCEPTION 'event_write_too_slow' USING ERRCODE = 'BW002'; \
       END IF; \
       RETURN NEW; \
     END $$",
];

const DOWN: [&str; 5] = [
    "DROP TRIGGER calendar_members_seen_check ON calendar_members_seen",
    "DROP VIEW calendar_members_seen",
    "CREATE VIEW calendar_members_seen AS SELECT id AS calendar_id, members_version FROM calendars",
    "CREATE OR REPLACE FUNCTION calendar_members_seen_check() RETURNS trigger \
     LANGUAGE plpgsql AS $$ \
     BEGIN \
       PERFORM 1 FROM calendars \
         WHERE id = NEW.calendar_id AND members_version = NEW.members_version \
         FOR NO KEY UPDATE; \
       IF NOT FOUND THEN \
         RAISE EXCEPTION 'calendar_members_changed'; \
       END IF; \
       IF clock_timestamp() - statement_timestamp() > interval '4 seconds' THEN \
         RAISE EXCEPTION 'event_write_too_slow'; \
       END IF; \
       RETURN NEW; \
     END $$",
    "CREATE TRIGGER calendar_members_seen_check INSTEAD OF INSERT ON calendar_members_seen \
     FOR EACH ROW EXECUTE FUNCTION calendar_members_seen_check()",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// All or nothing.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        run(manager, &UP).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        run(manager, &DOWN).await
    }
}

async fn run(manager: &SchemaManager<'_>, statements: &[&str]) -> Result<(), DbErr> {
    if manager.get_database_backend() != sea_orm::DatabaseBackend::Postgres {
        return Ok(());
    }
    let db = manager.get_connection();
    for statement in statements {
        db.execute_unprepared(statement).await?;
    }
    Ok(())
}
