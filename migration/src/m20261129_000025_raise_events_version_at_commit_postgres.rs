//! PostgreSQL raises `calendars.events_version` (migration `m20261122_000010`) when the
//! transaction commits rather than at each write, so a write holds its calendars' rows
//! only for its last moment: two calendars' writers that touch events linked into both no
//! longer wait for each other's whole transaction.
//!
//! The statement triggers on `calendar_events` and `events` no longer update `calendars`:
//! they note each calendar whose events changed in `calendar_events_version_due`, once per
//! transaction (its id is part of the key). A deferred trigger on that table runs at the
//! commit: its first firing in a transaction locks every calendar noted for it, in the
//! order of their ids (the one order every write takes calendar locks in, so two commits
//! cannot each hold what the other waits for), raises each once, and clears the notes; the
//! later firings find nothing left. SQLite keeps its row triggers: its one writer holds the
//! database anyway.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const UP: [&str; 6] = [
    "CREATE TABLE calendar_events_version_due ( \
       xact xid8 NOT NULL DEFAULT pg_current_xact_id(), \
       calendar_id uuid NOT NULL, \
       PRIMARY KEY (xact, calendar_id))",
    "CREATE FUNCTION calendar_events_version_raise() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       PERFORM 1 FROM calendars WHERE id IN \
         (SELECT calendar_id FROM calendar_events_version_due WHERE xact = NEW.xact) \
         ORDER BY id FOR NO KEY UPDATE; \
       UPDATE calendars SET events_version = events_version + 1 WHERE id IN \
         (SELECT calendar_id FROM calendar_events_version_due WHERE xact = NEW.xact); \
       DELETE FROM calendar_events_version_due WHERE xact = NEW.xact; \
       RETURN NULL; \
     END $$",
    "CREATE CONSTRAINT TRIGGER calendar_events_version_raise \
     AFTER INSERT ON calendar_events_version_due \
     DEFERRABLE INITIALLY DEFERRED \
     FOR EACH ROW EXECUTE FUNCTION calendar_events_version_raise()",
    "CREATE OR REPLACE FUNCTION calendar_links_changed() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       INSERT INTO calendar_events_version_due (calendar_id) \
         SELECT DISTINCT calendar_id FROM changed_links \
         ON CONFLICT DO NOTHING; \
       RETURN NULL; \
     END $$",
    "CREATE OR REPLACE FUNCTION calendar_links_moved() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       INSERT INTO calendar_events_version_due (calendar_id) \
         SELECT calendar_id FROM old_links UNION SELECT calendar_id FROM new_links \
         ON CONFLICT DO NOTHING; \
       RETURN NULL; \
     END $$",
    "CREATE OR REPLACE FUNCTION calendar_events_changed() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       INSERT INTO calendar_events_version_due (calendar_id) \
         SELECT DISTINCT l.calendar_id FROM calendar_events l \
           JOIN changed_events e ON e.id = l.event_id \
         ON CONFLICT DO NOTHING; \
       RETURN NULL; \
     END $$",
];

/// The functions as `m20261122_000010` made them.
const DOWN: [&str; 6] = [
    "CREATE OR REPLACE FUNCTION calendar_links_changed() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       UPDATE calendars SET events_version = events_version + 1 \
         WHERE id IN (SELECT calendar_id FROM changed_links); \
       RETURN NULL; \
     END $$",
    "CREATE OR REPLACE FUNCTION calendar_links_moved() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       UPDATE calendars SET events_version = events_version + 1 \
         WHERE id IN (SELECT calendar_id FROM old_links UNION SELECT calendar_id FROM new_links); \
       RETURN NULL; \
     END $$",
    "CREATE OR REPLACE FUNCTION calendar_events_changed() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       UPDATE calendars SET events_version = events_version + 1 \
         WHERE id IN (SELECT l.calendar_id FROM calendar_events l \
                      JOIN changed_events e ON e.id = l.event_id); \
       RETURN NULL; \
     END $$",
    "DROP TRIGGER calendar_events_version_raise ON calendar_events_version_due",
    "DROP FUNCTION calendar_events_version_raise()",
    "DROP TABLE calendar_events_version_due",
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
        for statement in UP {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != sea_orm::DatabaseBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        for statement in DOWN {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
