//! A federated shadow's member tokens end with its last calendar membership, whatever ends
//! it: the member removed or leaving, the calendar deleted (its memberships cascade), the
//! calendar's owner deleted (their calendars cascade). A trigger on `calendar_members`
//! deletes the tokens of a user left with no membership, so no write path can forget it.
//!
//! Once, on the way up: tokens of users with no membership are deleted, and so are those
//! of shadows owning a calendar (a member token could once create calendars; a shadow acts
//! only within the calendars it was admitted to, and its home server asks its user to
//! accept an invite again).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const SQLITE_UP: [&str; 1] = [
    "CREATE TRIGGER calendar_members_last_revokes_member_tokens AFTER DELETE ON calendar_members \
     WHEN NOT EXISTS (SELECT 1 FROM calendar_members WHERE user_id = OLD.user_id) \
     BEGIN \
       DELETE FROM member_tokens WHERE user_id = OLD.user_id; \
     END",
];

const SQLITE_DOWN: [&str; 1] = ["DROP TRIGGER calendar_members_last_revokes_member_tokens"];

const POSTGRES_UP: [&str; 2] = [
    "CREATE FUNCTION calendar_members_last_revokes_member_tokens() RETURNS trigger \
     LANGUAGE plpgsql AS $$ \
     BEGIN \
       IF NOT EXISTS (SELECT 1 FROM calendar_members WHERE user_id = OLD.user_id) THEN \
         DELETE FROM member_tokens WHERE user_id = OLD.user_id; \
       END IF; \
       RETURN NULL; \
     END $$",
    "CREATE TRIGGER calendar_members_last_revokes_member_tokens AFTER DELETE ON calendar_members \
     FOR EACH ROW EXECUTE FUNCTION calendar_members_last_revokes_member_tokens()",
];

const POSTGRES_DOWN: [&str; 2] = [
    "DROP TRIGGER calendar_members_last_revokes_member_tokens ON calendar_members",
    "DROP FUNCTION calendar_members_last_revokes_member_tokens()",
];

/// The one-time repair, on both databases.
const REPAIR: [&str; 2] = [
    "DELETE FROM member_tokens WHERE NOT EXISTS \
       (SELECT 1 FROM calendar_members WHERE calendar_members.user_id = member_tokens.user_id)",
    "DELETE FROM member_tokens WHERE user_id IN \
       (SELECT creator_id FROM calendars JOIN users ON users.id = calendars.creator_id \
        WHERE users.is_external)",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// All or nothing.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let trigger: &[&str] = match manager.get_database_backend() {
            sea_orm::DatabaseBackend::Postgres => &POSTGRES_UP,
            _ => &SQLITE_UP,
        };
        let db = manager.get_connection();
        for statement in REPAIR.iter().chain(trigger) {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let statements: &[&str] = match manager.get_database_backend() {
            sea_orm::DatabaseBackend::Postgres => &POSTGRES_DOWN,
            _ => &SQLITE_DOWN,
        };
        let db = manager.get_connection();
        for statement in statements {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
