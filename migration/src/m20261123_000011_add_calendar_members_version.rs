//! `calendars.members_version` (SQLite): a counter the database raises whenever a calendar's
//! memberships change — a member added, removed (by hand or by cascade, with a user) or given
//! another role. Triggers maintain it, so no write path can forget it.
//!
//! With it, a calendar actor keeps the roles it read for a batch of creations and checks
//! them in the insert's own text instead of reading them again: the view
//! `calendar_members_seen` takes `(calendar_id, members_version)` rows and aborts the
//! statement (`calendar_members_changed`) unless the calendar exists at that version. Inside
//! the write transaction, that check holds until the commit.
//!
//! PostgreSQL gets neither: its write transactions read the roles in the same round trip
//! as the lock they take on the home calendar, so there is no round trip to save there.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const SQLITE: [&str; 6] = [
    "ALTER TABLE calendars ADD COLUMN members_version BIGINT NOT NULL DEFAULT 0",
    "CREATE TRIGGER calendar_members_added_version AFTER INSERT ON calendar_members BEGIN \
       UPDATE calendars SET members_version = members_version + 1 WHERE id = NEW.calendar_id; \
     END",
    "CREATE TRIGGER calendar_members_removed_version AFTER DELETE ON calendar_members BEGIN \
       UPDATE calendars SET members_version = members_version + 1 WHERE id = OLD.calendar_id; \
     END",
    "CREATE TRIGGER calendar_members_changed_version AFTER UPDATE ON calendar_members BEGIN \
       UPDATE calendars SET members_version = members_version + 1 \
         WHERE id IN (OLD.calendar_id, NEW.calendar_id); \
     END",
    "CREATE VIEW calendar_members_seen AS SELECT id AS calendar_id, members_version FROM calendars",
    "CREATE TRIGGER calendar_members_seen_check INSTEAD OF INSERT ON calendar_members_seen BEGIN \
       SELECT RAISE(ABORT, 'calendar_members_changed') WHERE NOT EXISTS \
         (SELECT 1 FROM calendars WHERE id = NEW.calendar_id \
            AND members_version = NEW.members_version); \
     END",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// All or nothing.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() == sea_orm::DatabaseBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        for statement in SQLITE {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() == sea_orm::DatabaseBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        for statement in [
            "DROP TRIGGER calendar_members_seen_check",
            "DROP VIEW calendar_members_seen",
            "DROP TRIGGER calendar_members_changed_version",
            "DROP TRIGGER calendar_members_removed_version",
            "DROP TRIGGER calendar_members_added_version",
            "ALTER TABLE calendars DROP COLUMN members_version",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
