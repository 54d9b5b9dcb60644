//! The memberships a calendar actor's batch of creations is authorized by: read at the start
//! of its write transaction, or, on SQLite, taken from what the actor read for an earlier
//! batch and checked inside the batch's own insert text ([`seen_at`]), which saves the batch
//! a round trip to SQLite's thread.
//!
//! The check rests on `calendars.members_version`, which SQLite's triggers raise on every
//! change of a calendar's memberships (migration `m20261123_000011`): the view
//! `calendar_members_seen` aborts the statement with [`MEMBERS_CHANGED`] unless every
//! calendar it is given still exists at the version given. It runs inside the write
//! transaction, before the inserts, so what it confirms holds until the commit.

use std::collections::HashMap;
use std::sync::Arc;

use sea_orm::sea_query::{Alias, InsertStatement, Query};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, Statement, Value};
use uuid::Uuid;

use super::placeholder;
use crate::domain::roles::Role;

/// The message of the error the view `calendar_members_seen` raises (the migration that
/// creates it spells it out too: migrations do not import application code).
pub const MEMBERS_CHANGED: &str = "calendar_members_changed";

/// The members and roles of the calendars of a batch.
#[derive(Debug, Clone, Default)]
pub struct BatchRoles {
    /// Each calendar's members with their roles (a calendar without members is absent).
    pub members: HashMap<Uuid, Arc<[(String, Role)]>>,
    /// On SQLite, each calendar's `members_version` as read, the home calendar's included:
    /// the calendars that exist. Empty on PostgreSQL.
    pub versions: HashMap<Uuid, i64>,
}

/// Locks the calendar `home` for the rest of the transaction (`FOR UPDATE` on PostgreSQL;
/// SQLite's write transaction holds the database) and reads the roles of every member of
/// `calendar_ids`, in one round trip: the start of a calendar actor's group commit. On
/// SQLite it also reads the `members_version` of `home` and of `calendar_ids`. `None` when
/// `home` does not exist.
pub async fn lock_with_roles(
    txn: &impl ConnectionTrait,
    home: Uuid,
    calendar_ids: &[Uuid],
) -> Result<Option<BatchRoles>, DbErr> {
    let backend = txn.get_database_backend();
    let postgres = backend == DbBackend::Postgres;
    let param = |n: usize| placeholder(backend, n);
    let mut values: Vec<Value> = vec![home.into()];
    let mut listed = Vec::with_capacity(calendar_ids.len());
    for id in calendar_ids {
        values.push((*id).into());
        listed.push(param(values.len()));
    }
    let sql = if postgres {
        let joined = if listed.is_empty() {
            "1 = 0".to_owned()
        } else {
            format!("m.calendar_id IN ({})", listed.join(", "))
        };
        format!(
            "SELECT m.calendar_id, m.user_id, m.role FROM calendars c \
             LEFT JOIN calendar_members m ON {joined} WHERE c.id = {} FOR UPDATE OF c",
            param(1)
        )
    } else {
        // Every listed calendar that exists gives its version, with or without members.
        listed.insert(0, param(1));
        format!(
            "SELECT c.id AS calendar_id, m.user_id, m.role, c.members_version FROM calendars c \
             LEFT JOIN calendar_members m ON m.calendar_id = c.id WHERE c.id IN ({})",
            listed.join(", ")
        )
    };
    let rows = txn
        .query_all_raw(Statement::from_sql_and_values(backend, sql, values))
        .await?;
    // On PostgreSQL the home calendar's row comes back, joined or not, if it exists.
    let any_row = !rows.is_empty();
    let mut members: HashMap<Uuid, Vec<(String, Role)>> = HashMap::new();
    let mut versions = HashMap::new();
    for row in rows {
        let calendar: Option<Uuid> = row.try_get("", "calendar_id")?;
        let user: Option<String> = row.try_get("", "user_id")?;
        let role: Option<String> = row.try_get("", "role")?;
        let version: Option<i64> = if postgres {
            None
        } else {
            row.try_get("", "members_version")?
        };
        if let (Some(calendar), Some(version)) = (calendar, version) {
            versions.insert(calendar, version);
        }
        if let (Some(calendar), Some(user), Some(role)) =
            (calendar, user, role.as_deref().and_then(Role::parse))
        {
            members.entry(calendar).or_default().push((user, role));
        }
    }
    let home_exists = if postgres {
        any_row
    } else {
        versions.contains_key(&home)
    };
    Ok(home_exists.then(|| BatchRoles {
        members: members
            .into_iter()
            .map(|(calendar, list)| (calendar, list.into()))
            .collect(),
        versions,
    }))
}

/// The check that `versions` (calendar → `members_version`, as [`lock_with_roles`] read them)
/// are still current, to run in a write transaction before the writes they authorize. It
/// fails with [`MEMBERS_CHANGED`] if one is not ([`is_members_changed`]). `None` for no
/// versions.
pub fn seen_at(versions: &HashMap<Uuid, i64>) -> Option<InsertStatement> {
    if versions.is_empty() {
        return None;
    }
    let mut check = Query::insert();
    check
        .into_table(Alias::new("calendar_members_seen"))
        .columns([Alias::new("calendar_id"), Alias::new("members_version")]);
    for (calendar, version) in versions {
        check.values_panic([(*calendar).into(), (*version).into()]);
    }
    Some(check)
}

/// Whether `err` is the check of [`seen_at`] failing.
pub fn is_members_changed(err: &DbErr) -> bool {
    err.to_string().contains(MEMBERS_CHANGED)
}
