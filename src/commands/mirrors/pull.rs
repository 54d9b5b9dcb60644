//! Pulling an account: reconcile its calendars (new ones mirrored, vanished ones removed,
//! disabled ones left out), then bring each mirror up to date from its cursor through the
//! provider's adapter ([`Source::changes`]), committing one transaction per calendar. One
//! `external_sync {calendars}` frame goes to the members of the calendars that really
//! changed; a pull that changed nothing sends nothing.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use entities::external_calendars;
use serde_json::json;
use uuid::Uuid;

use super::Mirrors;
use super::apply::{Target, apply};
use super::disconnect::{Removed, remove_mirror_calendar};
use super::source::{Known, KnownItem, RemoteCalendar, Source, SyncError};
use crate::commands::announce_calendar;
use crate::domain::frames::Frame;
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::domain::providers::AccountKey;
use crate::error::AppError;
use crate::store::mirrors::NewMirror;
use crate::store::{calendars as calendar_store, events as event_store, members, mirrors, outbox};

/// The mirror of `calendar` in `key`'s account, owned by `owner`: named and coloured after
/// the remote calendar.
pub fn new_mirror(key: &AccountKey, owner: &UserId, calendar: &RemoteCalendar) -> NewMirror {
    let name = calendar
        .name
        .as_deref()
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .unwrap_or("Calendar")
        .chars()
        .take(200)
        .collect();
    let color = calendar
        .color
        .as_deref()
        .map(str::trim)
        .filter(|color| {
            color.len() >= 7
                && color.starts_with('#')
                && color[1..7].chars().all(|c| c.is_ascii_hexdigit())
        })
        .map_or_else(|| "#7A8BA3".to_owned(), |color| color[..7].to_uppercase());
    NewMirror {
        provider: key.provider.as_str().to_owned(),
        account_id: key.id.clone(),
        owner: owner.clone(),
        remote_id: calendar.id.clone(),
        name,
        color,
        read_only: calendar.read_only,
    }
}

/// What the mirror holds of each resource (its tag and the time its events span), and the
/// resources with a local delete still to deliver.
pub async fn known_of(
    env: &Mirrors,
    calendar: CalendarId,
) -> Result<(Known, HashSet<String>), AppError> {
    let db = &env.services.db;
    let resources = mirrors::resources_of(db, calendar).await?;
    let ids: Vec<EventId> = resources
        .values()
        .flatten()
        .map(|row| row.event_id)
        .collect();
    let times: HashMap<EventId, (DateTime<Utc>, DateTime<Utc>)> = event_store::find_live(db, &ids)
        .await?
        .into_iter()
        .map(|event| (event.id, (event.start, event.end)))
        .collect();
    let known = resources
        .iter()
        .map(|(href, rows)| {
            let span = rows.iter().filter_map(|row| times.get(&row.event_id)).fold(
                None,
                |span: Option<(DateTime<Utc>, DateTime<Utc>)>, (start, end)| {
                    Some(match span {
                        Some((from, to)) => (from.min(*start), to.max(*end)),
                        None => (*start, *end),
                    })
                },
            );
            let item = KnownItem {
                tag: rows.first().and_then(|row| row.etag.clone()),
                span,
            };
            (href.clone(), item)
        })
        .collect();
    Ok((known, outbox::pending_deletes(db, calendar).await?))
}

/// Pulls the account `key` (owned by `owner`) through `source`; returns the local calendars
/// that changed (and were announced).
pub async fn pull<S: Source>(
    env: &Mirrors,
    source: &S,
    key: &AccountKey,
    owner: &UserId,
) -> Result<Vec<CalendarId>, SyncError> {
    let services = &env.services;
    let remote = source.calendars().await?;
    let known = mirrors::calendars_of_account(&services.db, key.provider.as_str(), &key.id).await?;
    let by_remote: HashMap<&str, &external_calendars::Model> =
        known.iter().map(|m| (m.remote_id.as_str(), m)).collect();
    let remote_ids: HashSet<&str> = remote.iter().map(|c| c.id.as_str()).collect();

    let mut changed = Vec::new();
    // Vanished at the provider: the mirror goes, with its events.
    let vanished: Vec<&external_calendars::Model> = known
        .iter()
        .filter(|mirror| !remote_ids.contains(mirror.remote_id.as_str()))
        .collect();
    if !vanished.is_empty() {
        services
            .db
            .write(async |txn| {
                let mut removed = Removed::default();
                let now = txn.stamp().await?;
                for mirror in &vanished {
                    if let Some(calendar) = mirror.calendar_id {
                        remove_mirror_calendar(txn, calendar, &mut removed, now).await?;
                    }
                }
                let ids: Vec<Uuid> = vanished.iter().map(|m| m.id).collect();
                mirrors::delete_mirrors(txn, &ids).await?;
                removed.announce(&services.within(txn));
                Ok::<_, SyncError>(())
            })
            .await?;
    }

    for calendar in &remote {
        let mirror = by_remote.get(calendar.id.as_str()).copied();
        if mirror.is_some_and(|m| m.disabled || m.calendar_id.is_none()) {
            continue;
        }
        if let Some(mirror) = mirror
            && mirror.read_only != calendar.read_only
        {
            refresh_access(env, mirror, calendar.read_only).await?;
        }
        if let Some(mirror) = mirror
            && mirror.sync_token.is_some()
            && mirror.sync_token == calendar.version
        {
            continue;
        }
        let (tags, skip) = match mirror.and_then(|m| m.calendar_id) {
            Some(local) => known_of(env, local).await?,
            None => Default::default(),
        };
        let cursor = mirror.and_then(|m| m.sync_token.as_deref());
        let changes = source.changes(calendar, cursor, &tags, &skip).await?;
        let pulled = services
            .db
            .write(async |txn| {
                let now = txn.stamp().await?;
                // Only a lock is taken before these two returns: their commit writes nothing.
                let (local, mirror_id, created) = match mirror {
                    Some(mirror) => {
                        let Some(local) = mirror.calendar_id else {
                            return Ok(None);
                        };
                        let Some(local) = calendar_store::lock(txn, local).await? else {
                            return Ok(None);
                        };
                        (local, mirror.id, false)
                    }
                    None => {
                        let new = new_mirror(key, owner, calendar);
                        let created = mirrors::create_mirror(txn, new, now).await?;
                        // Another process mirrored it meanwhile: this transaction is dropped.
                        let Some((local, row)) = created else {
                            txn.discard();
                            return Ok(None);
                        };
                        (local, row.id, true)
                    }
                };
                let target = Target {
                    calendar: &local,
                    owner,
                };
                let wrote = apply(txn, target, &changes.resources, &changes.removed, now).await?;
                mirrors::set_sync_token(txn, mirror_id, changes.cursor.as_deref()).await?;
                Ok::<_, SyncError>(Some((local.id, wrote || created)))
            })
            .await?;
        if let Some((local, true)) = pulled {
            changed.push(local);
        }
    }
    announce_external_sync(env, &changed).await?;
    Ok(changed)
}

/// The provider now lets the account write to a mirror, or no longer does: the owner's role
/// follows (owner or viewer) and the calendar's members are told.
async fn refresh_access(
    env: &Mirrors,
    mirror: &external_calendars::Model,
    read_only: bool,
) -> Result<(), AppError> {
    let services = &env.services;
    services
        .db
        .write(async |txn| {
            let now = txn.stamp().await?;
            mirrors::set_read_only(txn, mirror, read_only, now).await?;
            let calendar = match mirror.calendar_id {
                // The update takes the calendar's row lock; the row is read back as it is now.
                Some(id) => {
                    calendar_store::touch(txn, id, now).await?;
                    calendar_store::lock(txn, id).await?
                }
                None => None,
            };
            let members = match &calendar {
                Some(calendar) => members::list(txn, calendar.id).await?,
                None => Vec::new(),
            };
            if let Some(calendar) = calendar {
                announce_calendar(&services.within(txn), &calendar, &members);
            }
            Ok::<_, AppError>(())
        })
        .await
}

/// Sends `external_sync {calendars}` to the members of the changed calendars, each user
/// once, naming the calendars they are a member of.
pub async fn announce_external_sync(env: &Mirrors, changed: &[CalendarId]) -> Result<(), AppError> {
    if changed.is_empty() {
        return Ok(());
    }
    // In a transaction of its own, so the frames leave as a committed change's do: on
    // PostgreSQL after the changes before them, and on this instance's streams before the
    // pull is answered.
    env.services
        .db
        .write(async |txn| {
            let by_calendar = members::ids_by_calendar(txn, changed).await?;
            let mut by_user: HashMap<UserId, Vec<CalendarId>> = HashMap::new();
            for calendar in changed {
                for user in by_calendar.get(calendar).into_iter().flatten() {
                    by_user.entry(user.clone()).or_default().push(*calendar);
                }
            }
            let announce = env.services.within(txn);
            for (user, calendars) in by_user {
                announce.broadcast(
                    [&user],
                    &Frame::new("external_sync", json!({ "calendars": calendars })),
                );
            }
            Ok::<_, AppError>(())
        })
        .await
}
