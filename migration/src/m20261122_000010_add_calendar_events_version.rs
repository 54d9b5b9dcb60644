//! `calendars.events_version`: a counter the database raises whenever what a calendar shows
//! of events may have changed — a link into it added or removed, or a linked event updated
//! or deleted. Triggers maintain it, so no write path can forget it, on one server or many.
//! Together with a reader's membership rows it validates a cached events read: while every
//! calendar of the reader keeps its version and the reader keeps the same calendars, the
//! events they can see are unchanged.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// SQLite: row triggers (the only kind it has). A deleted event's links may go by cascade,
/// so they are counted before the event goes.
const SQLITE: [&str; 6] = [
    "ALTER TABLE calendars ADD COLUMN events_version BIGINT NOT NULL DEFAULT 0",
    "CREATE TRIGGER calendar_events_added_version AFTER INSERT ON calendar_events BEGIN \
       UPDATE calendars SET events_version = events_version + 1 WHERE id = NEW.calendar_id; \
     END",
    "CREATE TRIGGER calendar_events_removed_version AFTER DELETE ON calendar_events BEGIN \
       UPDATE calendars SET events_version = events_version + 1 WHERE id = OLD.calendar_id; \
     END",
    "CREATE TRIGGER calendar_events_changed_version AFTER UPDATE ON calendar_events BEGIN \
       UPDATE calendars SET events_version = events_version + 1 \
         WHERE id IN (OLD.calendar_id, NEW.calendar_id); \
     END",
    "CREATE TRIGGER events_changed_version AFTER UPDATE ON events BEGIN \
       UPDATE calendars SET events_version = events_version + 1 \
         WHERE id IN (SELECT calendar_id FROM calendar_events WHERE event_id = NEW.id); \
     END",
    "CREATE TRIGGER events_deleted_version BEFORE DELETE ON events BEGIN \
       UPDATE calendars SET events_version = events_version + 1 \
         WHERE id IN (SELECT calendar_id FROM calendar_events WHERE event_id = OLD.id); \
     END",
];

/// PostgreSQL: statement triggers over transition tables, so a multi-row write (a batch of
/// creations, an import) bumps each calendar once instead of updating its row once per
/// event. A deleted event's links go by cascade and are counted as deleted links.
const POSTGRES: [&str; 8] = [
    "ALTER TABLE calendars ADD COLUMN events_version BIGINT NOT NULL DEFAULT 0",
    "CREATE FUNCTION calendar_links_changed() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       UPDATE calendars SET events_version = events_version + 1 \
         WHERE id IN (SELECT calendar_id FROM changed_links); \
       RETURN NULL; \
     END $$",
    "CREATE FUNCTION calendar_links_moved() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       UPDATE calendars SET events_version = events_version + 1 \
         WHERE id IN (SELECT calendar_id FROM old_links UNION SELECT calendar_id FROM new_links); \
       RETURN NULL; \
     END $$",
    "CREATE FUNCTION calendar_events_changed() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       UPDATE calendars SET events_version = events_version + 1 \
         WHERE id IN (SELECT l.calendar_id FROM calendar_events l \
                      JOIN changed_events e ON e.id = l.event_id); \
       RETURN NULL; \
     END $$",
    "CREATE TRIGGER calendar_events_added_version AFTER INSERT ON calendar_events \
     REFERENCING NEW TABLE AS changed_links \
     FOR EACH STATEMENT EXECUTE FUNCTION calendar_links_changed()",
    "CREATE TRIGGER calendar_events_removed_version AFTER DELETE ON calendar_events \
     REFERENCING OLD TABLE AS changed_links \
     FOR EACH STATEMENT EXECUTE FUNCTION calendar_links_changed()",
    "CREATE TRIGGER calendar_events_changed_version AFTER UPDATE ON calendar_events \
     REFERENCING OLD TABLE AS old_links NEW TABLE AS new_links \
     FOR EACH STATEMENT EXECUTE FUNCTION calendar_links_moved()",
    "CREATE TRIGGER events_changed_version AFTER UPDATE ON events \
     REFERENCING NEW TABLE AS changed_events \
     FOR EACH STATEMENT EXECUTE FUNCTION calendar_events_changed()",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// All or nothing, on SQLite as on PostgreSQL.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let statements: Vec<&str> = match manager.get_database_backend() {
            sea_orm::DatabaseBackend::Postgres => POSTGRES.to_vec(),
            _ => SQLITE.to_vec(),
        };
        for statement in statements {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let statements: &[&str] = match manager.get_database_backend() {
            sea_orm::DatabaseBackend::Postgres => &[
                "DROP TRIGGER events_changed_version ON events",
                "DROP TRIGGER calendar_events_changed_version ON calendar_events",
                "DROP TRIGGER calendar_events_removed_version ON calendar_events",
                "DROP TRIGGER calendar_events_added_version ON calendar_events",
                "DROP FUNCTION calendar_events_changed()",
                "DROP FUNCTION calendar_links_moved()",
                "DROP FUNCTION calendar_links_changed()",
                "ALTER TABLE calendars DROP COLUMN events_version",
            ],
            _ => &[
                "DROP TRIGGER events_deleted_version",
                "DROP TRIGGER events_changed_version",
                "DROP TRIGGER calendar_events_changed_version",
                "DROP TRIGGER calendar_events_removed_version",
                "DROP TRIGGER calendar_events_added_version",
                "ALTER TABLE calendars DROP COLUMN events_version",
            ],
        };
        for statement in statements {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
