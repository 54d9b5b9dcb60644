//! `calendars.members_version` on PostgreSQL, as migration `m20261123_000011` gave SQLite: a
//! counter the database raises whenever a calendar's memberships change (a member added,
//! removed — by hand or by cascade, with a user or a calendar — or given another role), kept
//! by statement triggers so no write path can forget it.
//!
//! With it, a calendar actor keeps the roles it read for a batch of creations, and the next
//! batch goes to the database as one statement that commits on its own, instead of a
//! transaction that first reads the roles again. The statement's first rows go into the view
//! `calendar_members_seen`, whose trigger, for each `(calendar_id, members_version)` row:
//! - locks the calendar `FOR NO KEY UPDATE` (the lock the statement's own update of the
//!   calendar's `events_version` takes at its end, taken first; a membership change locks
//!   the row `FOR UPDATE`, so it waits for the statement's commit or the statement waits
//!   for it and sees its version), and aborts the statement with `calendar_members_changed`
//!   unless the calendar exists at the version given;
//! - then aborts it with `event_write_too_slow` if it has run for more than 4 seconds: a
//!   write's timestamp is taken before its locks are held here, and every write must commit
//!   within 5 seconds of its timestamp (the application's `WRITE_BOUND`; the last second is
//!   left for the statement to reach the database).
//!
//! The messages are spelled out here: migrations do not import application code.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const POSTGRES: [&str; 9] = [
    "ALTER TABLE calendars ADD COLUMN members_version BIGINT NOT NULL DEFAULT 0",
    "CREATE FUNCTION calendar_members_counted() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       UPDATE calendars SET members_version = members_version + 1 \
         WHERE id IN (SELECT calendar_id FROM changed_members); \
       RETURN NULL; \
     END $$",
    "CREATE FUNCTION calendar_members_moved() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       UPDATE calendars SET members_version = members_version + 1 \
         WHERE id IN (SELECT calendar_id FROM old_members \
                      UNION SELECT calendar_id FROM new_members); \
       RETURN NULL; \
     END $$",
    "CREATE TRIGGER calendar_members_added_version AFTER INSERT ON calendar_members \
     REFERENCING NEW TABLE AS changed_members \
     FOR EACH STATEMENT EXECUTE FUNCTION calendar_members_counted()",
    "CREATE TRIGGER calendar_members_removed_version AFTER DELETE ON calendar_members \
     REFERENCING OLD TABLE AS changed_members \
     FOR EACH STATEMENT EXECUTE FUNCTION calendar_members_counted()",
    "CREATE TRIGGER calendar_members_changed_version AFTER UPDATE ON calendar_members \
     REFERENCING OLD TABLE AS old_members NEW TABLE AS new_members \
     FOR EACH STATEMENT EXECUTE FUNCTION calendar_members_moved()",
    "CREATE VIEW calendar_members_seen AS SELECT id AS calendar_id, members_version FROM calendars",
    "CREATE FUNCTION calendar_members_seen_check() RETURNS trigger LANGUAGE plpgsql AS $$ \
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
        if manager.get_database_backend() != sea_orm::DatabaseBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        for statement in POSTGRES {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != sea_orm::DatabaseBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        for statement in [
            "DROP TRIGGER calendar_members_seen_check ON calendar_members_seen",
            "DROP FUNCTION calendar_members_seen_check()",
            "DROP VIEW calendar_members_seen",
            "DROP TRIGGER calendar_members_changed_version ON calendar_members",
            "DROP TRIGGER calendar_members_removed_version ON calendar_members",
            "DROP TRIGGER calendar_members_added_version ON calendar_members",
            "DROP FUNCTION calendar_members_moved()",
            "DROP FUNCTION calendar_members_counted()",
            "ALTER TABLE calendars DROP COLUMN members_version",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
