//! PostgreSQL counts a calendar's events-version raises (migration `m20261130_000026`) in
//! up to [`SLOTS`] rows instead of one: each commit raises the row of its connection's slot
//! (its backend's process id modulo [`SLOTS`]). With one row, two writes of one calendar's
//! events (its actors' batches on two instances) each raised it at their commits, so the
//! second commit waited for the first one's whole commit, its WAL flush included; writes
//! on different connections now raise different rows nearly always, and their commits no
//! longer queue behind each other.
//!
//! A calendar's events version is `calendars.events_version` plus the sum of its rows here.
//! Each commit still adds one to that sum, so a version read in a snapshot changes with
//! every change committed before it, as before. SQLite keeps its row triggers.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// How many rows a calendar's raises are spread over.
const SLOTS: u32 = 16;

/// The table keyed by calendar and slot, and the function that raises a slot's row.
fn up_statements() -> Vec<String> {
    vec![
        "ALTER TABLE calendar_events_raised ADD COLUMN slot smallint NOT NULL DEFAULT 0".into(),
        "ALTER TABLE calendar_events_raised DROP CONSTRAINT calendar_events_raised_pkey, \
         ADD CONSTRAINT calendar_events_raised_pkey PRIMARY KEY (calendar_id, slot)"
            .into(),
        format!(
            "CREATE OR REPLACE FUNCTION calendar_events_version_raise() RETURNS trigger \
             LANGUAGE plpgsql AS $$ \
             BEGIN \
               INSERT INTO calendar_events_raised AS r (calendar_id, slot, raised) \
                 SELECT c.id, (pg_backend_pid() % {SLOTS})::smallint, 1 FROM calendars c \
                 WHERE c.id IN \
                   (SELECT calendar_id FROM calendar_events_version_due WHERE xact = NEW.xact) \
                 ORDER BY c.id \
                 ON CONFLICT (calendar_id, slot) DO UPDATE SET raised = r.raised + 1; \
               DELETE FROM calendar_events_version_due WHERE xact = NEW.xact; \
               RETURN NULL; \
             END $$"
        ),
    ]
}

/// The function of `m20261130_000026`, and each calendar's rows summed into one.
const DOWN: [&str; 5] = [
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
    "UPDATE calendar_events_raised r SET raised = s.raised \
     FROM (SELECT calendar_id, sum(raised)::bigint AS raised FROM calendar_events_raised \
           GROUP BY calendar_id) s \
     WHERE r.calendar_id = s.calendar_id AND r.slot = 0",
    "INSERT INTO calendar_events_raised (calendar_id, slot, raised) \
     SELECT calendar_id, 0, sum(raised)::bigint FROM calendar_events_raised \
     GROUP BY calendar_id HAVING bool_and(slot <> 0)",
    "DELETE FROM calendar_events_raised WHERE slot <> 0",
    "ALTER TABLE calendar_events_raised DROP CONSTRAINT calendar_events_raised_pkey, \
     DROP COLUMN slot, ADD CONSTRAINT calendar_events_raised_pkey PRIMARY KEY (calendar_id)",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// All or nothing.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let statements = up_statements();
        let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
        run(manager, &statements).await
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
