//! PostgreSQL's `instance_notices`: how one Bowline instance tells the others sharing the
//! database (live frames, credential changes). Inserting a row notifies the channel
//! `bowline_instances` from a trigger, so a notice inserted inside a write transaction is
//! heard only if that transaction commits, and notices are heard in commit order.
//!
//! A notice that fits in a notification (under 7,900 bytes, below `NOTIFY`'s 8,000) is sent
//! whole and not stored (the trigger returns `NULL`). A larger one is stored and its row id
//! is sent instead (`{"stored": id}`); listeners read it by id, and rows older than a few
//! minutes are deleted by the instances. SQLite serves one process: nothing is created.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const UP: [&str; 4] = [
    "CREATE TABLE instance_notices ( \
       id bigserial PRIMARY KEY, \
       payload text NOT NULL, \
       created_at timestamptz NOT NULL DEFAULT clock_timestamp() \
     )",
    "CREATE INDEX instance_notices_created_at ON instance_notices (created_at)",
    "CREATE FUNCTION instance_notices_notify() RETURNS trigger \
     LANGUAGE plpgsql AS $$ \
     BEGIN \
       IF octet_length(NEW.payload) < 7900 THEN \
         PERFORM pg_notify('bowline_instances', NEW.payload); \
         RETURN NULL; \
       END IF; \
       PERFORM pg_notify('bowline_instances', json_build_object('stored', NEW.id)::text); \
       RETURN NEW; \
     END $$",
    "CREATE TRIGGER instance_notices_notify BEFORE INSERT ON instance_notices \
     FOR EACH ROW EXECUTE FUNCTION instance_notices_notify()",
];

const DOWN: [&str; 3] = [
    "DROP TRIGGER instance_notices_notify ON instance_notices",
    "DROP FUNCTION instance_notices_notify()",
    "DROP TABLE instance_notices",
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
