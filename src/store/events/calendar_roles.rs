//! The memberships a calendar actor's batch of creations is authorized by: read at the start
//! of its write transaction, or taken from what the actor read for an earlier batch and
//! checked inside the batch's own insert statement ([`roles_unchanged_check`]), which saves the batch a
//! round trip (on SQLite, a hand-off to SQLite's thread; on PostgreSQL, the locks and reads
//! at the transaction's start: the check travels with the inserts and the commit).
//!
//! The check rests on `calendars.members_version`, which the database's triggers raise on
//! every change of a calendar's memberships (migrations `m20261123_000011` for SQLite and
//! `m20261124_000012` for PostgreSQL): the view `calendar_members_seen` aborts the statement
//! with [`MEMBERS_CHANGED`] unless every calendar it is given still exists at the version
//! given. On SQLite it runs inside the write transaction, which holds the database until
//! the commit; on PostgreSQL it locks each calendar as it checks it, `FOR SHARE` (migration
//! `m20261130_000026`), so what it confirms holds until the commit there too, while other
//! writes of the calendar's events go on beside it.

use std::collections::HashMap;
use std::sync::Arc;

use sea_orm::sea_query::{Alias, InsertStatement, Query};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, Statement, Value};

use crate::domain::ids::{CalendarId, UserId};
use crate::domain::roles::Role;
use crate::store::statements::placeholder;

/// The refusal of the view `calendar_members_seen` when a calendar moved: its name (how
/// SQLite's trigger aborts) and its SQLSTATE on PostgreSQL (the migrations that create the
/// check spell both out: migrations do not import application code).
const MEMBERS_CHANGED: (&str, &str) = ("calendar_members_changed", "BW001");

/// PostgreSQL's refusal when the statement held its locks past the bound its rows give
/// ([`super::deadline::lock_wait_bound_ms`]).
const WRITE_TOO_SLOW: (&str, &str) = ("event_write_too_slow", "BW002");

/// Each calendar's members with their roles.
pub type MembersByCalendar = HashMap<CalendarId, Vec<(UserId, Role)>>;

/// The members and roles of the calendars of a batch.
#[derive(Debug, Clone, Default)]
pub struct CalendarRoles {
    /// Each calendar's members with their roles (a calendar without members is absent).
    pub members: HashMap<CalendarId, Arc<[(UserId, Role)]>>,
    /// Each calendar's `members_version` as read, the home calendar's included: the
    /// calendars that exist.
    pub versions: HashMap<CalendarId, i64>,
}

/// Reads the roles of every member of `calendar_ids` and the `members_version` of `home` and
/// of `calendar_ids` (the calendars that exist), in one round trip: the start of a calendar
/// actor's group commit. On PostgreSQL it also locks those calendars for the rest of the
/// transaction (`FOR SHARE`, in the order of their ids, as [`roles_unchanged_check`]'s check
/// does: a change of their memberships waits for the commit, another batch of their events
/// does not; SQLite's write transaction holds the database). `None` when `home` does not
/// exist.
pub async fn lock_with_roles(
    txn: &impl ConnectionTrait,
    home: CalendarId,
    calendar_ids: &[CalendarId],
) -> Result<Option<CalendarRoles>, DbErr> {
    let backend = txn.get_database_backend();
    let param = |n: usize| placeholder(backend, n);
    let mut values: Vec<Value> = vec![home.into()];
    let mut listed = vec![param(1)];
    for id in calendar_ids.iter().filter(|id| **id != home) {
        values.push((*id).into());
        listed.push(param(values.len()));
    }
    // Every listed calendar that exists gives its version, with or without members.
    let lock = if backend == DbBackend::Postgres {
        " ORDER BY c.id FOR SHARE OF c"
    } else {
        ""
    };
    let sql = format!(
        "SELECT c.id AS calendar_id, m.user_id, m.role, c.members_version FROM calendars c \
         LEFT JOIN calendar_members m ON m.calendar_id = c.id WHERE c.id IN ({}){lock}",
        listed.join(", ")
    );
    let rows = txn
        .query_all_raw(Statement::from_sql_and_values(backend, sql, values))
        .await?;
    let (members, versions) = roles_and_versions(&rows)?;
    let home_exists = versions.contains_key(&home);
    Ok(home_exists.then(|| CalendarRoles {
        members: members
            .into_iter()
            .map(|(calendar, list)| (calendar, list.into()))
            .collect(),
        versions,
    }))
}

/// Each calendar's members with their roles, and its `members_version`, from rows of
/// `calendar_id, user_id, role, members_version` (a calendar joined to its memberships,
/// one row with no user for a calendar without members).
pub(super) fn roles_and_versions(
    rows: &[sea_orm::QueryResult],
) -> Result<(MembersByCalendar, HashMap<CalendarId, i64>), DbErr> {
    let mut members = MembersByCalendar::new();
    let mut versions = HashMap::new();
    for row in rows {
        let calendar: CalendarId = row.try_get("", "calendar_id")?;
        let user: Option<UserId> = row.try_get("", "user_id")?;
        let role: Option<String> = row.try_get("", "role")?;
        let version: i64 = row.try_get("", "members_version")?;
        versions.insert(calendar, version);
        if let (Some(user), Some(role)) = (user, role.as_deref().and_then(Role::parse)) {
            members.entry(calendar).or_default().push((user, role));
        }
    }
    Ok((members, versions))
}

/// The check that `versions` (calendar → `members_version`, as [`lock_with_roles`] read them)
/// are still current, to run in the same write as the inserts they authorize: on SQLite in
/// its transaction, before them; on PostgreSQL in the same statement, which it aborts if a
/// lock it waits for holds it past the write's time bound ([`is_too_slow`]). It fails with
/// [`MEMBERS_CHANGED`] if a version moved ([`is_members_changed`]). Calendars are checked,
/// and on PostgreSQL locked, in the order of their ids, as [`lock_with_roles`] locks them.
/// `None` for no versions.
pub fn roles_unchanged_check(
    backend: DbBackend,
    versions: &HashMap<CalendarId, i64>,
) -> Option<InsertStatement> {
    if versions.is_empty() {
        return None;
    }
    let bounded = backend == DbBackend::Postgres;
    let mut columns = vec![Alias::new("calendar_id"), Alias::new("members_version")];
    if bounded {
        columns.push(Alias::new("write_bound_ms"));
    }
    let mut check = Query::insert();
    check
        .into_table(Alias::new("calendar_members_seen"))
        .columns(columns);
    let mut rows: Vec<(&CalendarId, &i64)> = versions.iter().collect();
    rows.sort_unstable();
    for (calendar, version) in rows {
        let mut values: Vec<sea_orm::sea_query::SimpleExpr> =
            vec![(*calendar).into(), (*version).into()];
        if bounded {
            values.push(super::deadline::lock_wait_bound_ms().into());
        }
        check.values_panic(values);
    }
    Some(check)
}

/// Whether `err` is the check of [`roles_unchanged_check`] failing.
pub fn is_members_changed(err: &DbErr) -> bool {
    crate::store::db_errors::is_trigger_refusal(err, MEMBERS_CHANGED.1, MEMBERS_CHANGED.0)
}

/// Whether `err` is PostgreSQL's check of [`roles_unchanged_check`] refusing a write that waited too long
/// for its locks.
pub fn is_too_slow(err: &DbErr) -> bool {
    crate::store::db_errors::is_trigger_refusal(err, WRITE_TOO_SLOW.1, WRITE_TOO_SLOW.0)
}
