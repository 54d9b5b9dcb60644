//! PostgreSQL counts the raises of a calendar's events version (migration
//! `m20261129_000025`) in a row of their own, `calendar_events_raised`, instead of in the
//! calendar's row, so that a write of events locks the calendar's row only to share it:
//! two writes of one calendar's events (the batches of its actors on two instances, or
//! of two calendars' actors whose events are linked into it) then go on at the same time
//! and meet only at their commits, each raising the count in turn.
//!
//! A calendar's events version is `calendars.events_version` (what it had counted before)
//! plus its `raised` here, if any; the deferred trigger that ran at each commit now inserts
//! or raises the count of every calendar noted for the transaction (in the order of their
//! ids, as before, and only of calendars that still exist) and no longer touches
//! `calendars`. The check of `calendar_members_seen` (migration `m20261124_000015`) takes its
//! calendar `FOR SHARE` rather than `FOR NO KEY UPDATE`: a change of memberships raises the
//! calendar's `members_version`, which must still wait for the writes the check confirmed,
//! and `FOR SHARE` holds that off while letting another write confirm the same calendar.
//! SQLite keeps its row triggers: its one writer holds the database anyway.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const UP: [&str; 2] = [
    "CREATE TABLE calendar_events_raised ( \
       calendar_id uuid PRIMARY KEY \
         CONSTRAINT calendar_events_raised_calendar_id_fk REFERENCES calendars (id) ON DELETE CASCADE, \
       raised bigint NOT NULL)",
    "CREATE OR REPLACE FUNCTION calendar_events_version_raise() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       INSERT INTO calendar_events_raised AS r (calendar_id, raised) \
         SELECT c.id, 1 FROM calendars c WHERE c.id IN \
           (SELECT calendar_id FROM calendar_events_version_due WHERE xact = NEW.xact) \
         ORDER BY c.id \
         ON CONFLICT (calendar_id) DO UPDATE SET raised = r.raised + 1; \
       DELETE FROM calendar_events_version_due WHERE xact = NEW.xact; \
       RETURN NULL; \
     END $$",
];

/// The function of `m20261129_000025`, and the counts added back into `calendars`.
const DOWN: [&str; 3] = [
    "CREATE OR REPLACE FUNCTION calendar_events_version_raise() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       PERFORM 1 FROM calendars WHERE id IN \
         (SELECT calendar_id FROM calendar_events_version_due WHERE xact = NEW.xact) \
         ORDER BY id FOR NO KEY UPDATE; \
       UPDATE calendars SET events_version = events_version + 1 WHERE id IN \
         (SELECT calendar_id FROM calendar_events_version_due WHERE xact = NEW.xact); \
       DELETE FROM calendar_events_version_due WHERE xact = NEW.xact; \
       RETURN NULL; \
     END $$",
    "UPDATE calendars c SET events_version = c.events_version + r.raised \
     FROM calendar_events_raised r WHERE r.calendar_id = c.id",
    "DROP TABLE calendar_events_raised",
];

/// The check of `calendar_members_seen` as `m20261124_000015` made it, its calendar locked
/// `FOR {lock}` (`SHARE` here, `NO KEY UPDATE` there).
fn members_seen_check(lock: &str) -> String {
    format!(
        "CREATE OR REPLACE FUNCTION calendar_members_seen_check() RETURNS trigger \
         LANGUAGE plpgsql AS $$ \
         BEGIN \
           PERFORM 1 FROM calendars \
             WHERE id = NEW.calendar_id AND members_version = NEW.members_version \
             FOR {lock}; \
           IF NOT FOUND THEN \
             RAISE EXCEPTION 'calendar_members_changed' USING ERRCODE = 'BW001'; \
           END IF; \
           IF clock_timestamp() - statement_timestamp() > \
              make_interval(secs => coalesce(NEW.write_bound_ms, 4000) / 1000.0) THEN \
             RAISE EXCEPTION 'event_write_too_slow' USING ERRCODE = 'BW002'; \
           END IF; \
           RETURN NEW; \
         END $$"
    )
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// All or nothing.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let check = members_seen_check("SHARE");
        let mut statements = UP.to_vec();
        statements.push(&check);
        run(manager, &statements).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let check = members_seen_check("NO KEY UPDATE");
        let mut statements = vec![check.as_str()];
        statements.extend(DOWN);
        run(manager, &statements).await
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
