//! Pulling a CalDAV account: reconcile its calendars (new ones mirrored, vanished ones
//! removed, disabled ones left out), then bring each mirror up to date with RFC 6578
//! `sync-collection` from its last token (a full listing, sweeping what vanished, when the
//! token is refused or the server has none), committing one transaction per calendar.
//! One `external_sync {calendars}` frame goes to the members of the calendars that really
//! changed; a pull that changed nothing sends nothing.

use std::collections::{HashMap, HashSet};

use chrono::Utc;
use chrono_tz::Tz;
use entities::{caldav_accounts, external_calendars};
use serde_json::json;
use uuid::Uuid;

use super::Mirrors;
use super::apply::{Target, apply};
use super::disconnect::{Removed, remove_mirror_calendar};
use super::resources::{self, Resource};
use crate::domain::frames::Frame;
use crate::error::AppError;
use crate::providers::caldav::{CaldavClient, CaldavError, RemoteCalendar, SyncChanges};
use crate::store::{calendars as calendar_store, members, mirrors, outbox, settings};

/// Why a pull (or a connect) failed.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// The provider failed or refused.
    #[error("{0}")]
    Remote(#[from] CaldavError),
    /// Bowline failed.
    #[error("{0}")]
    Local(#[from] AppError),
}

impl From<sea_orm::DbErr> for PullError {
    fn from(err: sea_orm::DbErr) -> Self {
        Self::Local(err.into())
    }
}

/// What one remote calendar holds now, relative to the mirror's last pull.
#[derive(Debug, Default)]
pub struct Changes {
    /// Resources added or changed, read.
    pub resources: Vec<Resource>,
    /// Resources gone.
    pub removed: Vec<String>,
    /// Where this pull ended.
    pub token: Option<String>,
}

/// Reads what changed in `calendar` since `token` (`known`: the mirror's resources and
/// their tags; `skip`: resources with a local delete still to deliver). Only resources
/// whose tag differs are fetched.
pub async fn read_changes(
    env: &Mirrors,
    client: &CaldavClient,
    calendar: &RemoteCalendar,
    token: Option<&str>,
    known: &HashMap<String, Option<String>>,
    skip: &HashSet<String>,
    zone: Tz,
) -> Result<Changes, PullError> {
    let (listed, full) = match client.sync_collection(&calendar.url, token).await {
        Ok(changes) => (changes, token.is_none()),
        Err(CaldavError::InvalidSyncToken) => {
            tracing::info!("sync.token_refused");
            (client.sync_collection(&calendar.url, None).await?, true)
        }
        Err(CaldavError::SyncUnsupported) => {
            let members = client.members(&calendar.url).await?;
            let token = calendar.ctag.clone().unwrap_or_default();
            (
                SyncChanges {
                    token,
                    changed: members,
                    removed: Vec::new(),
                },
                true,
            )
        }
        Err(err) => return Err(err.into()),
    };
    let listed_hrefs: HashSet<String> = listed.changed.iter().map(|m| m.url.to_string()).collect();
    let mut removed: Vec<String> = listed
        .removed
        .iter()
        .map(ToString::to_string)
        .filter(|href| known.contains_key(href) && !listed_hrefs.contains(href))
        .collect();
    if full {
        removed.extend(
            known
                .keys()
                .filter(|href| !listed_hrefs.contains(*href))
                .cloned(),
        );
        removed.sort();
        removed.dedup();
    }
    let wanted: Vec<url::Url> = listed
        .changed
        .into_iter()
        .filter(|member| {
            let href = member.url.to_string();
            !skip.contains(&href)
                && (member.etag.is_none() || known.get(&href) != Some(&member.etag))
        })
        .map(|member| member.url)
        .collect();
    let objects = if wanted.is_empty() {
        Vec::new()
    } else {
        client.fetch(&calendar.url, &wanted).await?
    };
    let (resources, unreadable) = env
        .cpu
        .run("reading remote events", move || {
            resources::read(objects, zone)
        })
        .await?;
    for bad in &unreadable {
        tracing::warn!(reason = %bad.reason, "sync.resource_unreadable");
    }
    Ok(Changes {
        resources,
        removed,
        token: Some(listed.token).filter(|token| !token.is_empty()),
    })
}

/// The name and colour a new mirror gets from its remote calendar.
pub fn mirror_look(calendar: &RemoteCalendar) -> (String, String) {
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
    (name, color)
}

/// Pulls one CalDAV account; returns the local calendars that changed (and were
/// announced).
pub async fn pull_caldav(
    env: &Mirrors,
    account: &caldav_accounts::Model,
) -> Result<Vec<Uuid>, PullError> {
    let services = &env.services;
    let client = env.caldav_client(account)?;
    let home = url::Url::parse(&account.home_url)
        .map_err(|err| AppError::internal(format!("stored calendar home: {err}")))?;
    let remote: Vec<RemoteCalendar> = client
        .calendars(&home)
        .await?
        .into_iter()
        .filter(|calendar| calendar.has_events)
        .collect();
    let account_id = account.id.to_string();
    let zone = settings::zone_of(services.db.conn(), &account.user_id).await?;
    let known =
        mirrors::calendars_of_account(services.db.conn(), mirrors::CALDAV, &account_id).await?;
    let by_remote: HashMap<&str, &external_calendars::Model> =
        known.iter().map(|m| (m.remote_id.as_str(), m)).collect();
    let remote_ids: HashSet<String> = remote.iter().map(|c| c.url.to_string()).collect();

    let mut changed = Vec::new();
    // Vanished at the provider: the mirror goes, with its events.
    let vanished: Vec<&external_calendars::Model> = known
        .iter()
        .filter(|mirror| !remote_ids.contains(&mirror.remote_id))
        .collect();
    if !vanished.is_empty() {
        let txn = services.db.begin_write().await?;
        let mut removed = Removed::default();
        let now = Utc::now();
        for mirror in &vanished {
            if let Some(calendar) = mirror.calendar_id {
                remove_mirror_calendar(&txn, calendar, &mut removed, now).await?;
            }
        }
        let ids: Vec<Uuid> = vanished.iter().map(|m| m.id).collect();
        mirrors::delete_mirrors(&txn, &ids).await?;
        txn.commit().await?;
        removed.announce(services);
    }

    for calendar in &remote {
        let remote_id = calendar.url.to_string();
        let mirror = by_remote.get(remote_id.as_str()).copied();
        if mirror.is_some_and(|m| m.disabled || m.calendar_id.is_none()) {
            continue;
        }
        if let Some(mirror) = mirror
            && mirror.sync_token.is_some()
            && mirror.sync_token == calendar.sync_token
        {
            continue;
        }
        let (known_resources, skip) = match mirror.and_then(|m| m.calendar_id) {
            Some(local) => (
                mirrors::resources_of(services.db.conn(), local).await?,
                outbox::pending_deletes(services.db.conn(), local).await?,
            ),
            None => Default::default(),
        };
        let tags: HashMap<String, Option<String>> = known_resources
            .iter()
            .map(|(href, rows)| (href.clone(), rows.first().and_then(|row| row.etag.clone())))
            .collect();
        let token = mirror.and_then(|m| m.sync_token.as_deref());
        let changes = read_changes(env, &client, calendar, token, &tags, &skip, zone).await?;
        let txn = services.db.begin_write().await?;
        let now = Utc::now();
        let (local, mirror_id, created) = match mirror {
            Some(mirror) => {
                let Some(local) = mirror.calendar_id else {
                    continue;
                };
                let Some(local) = calendar_store::lock(&txn, local).await? else {
                    continue;
                };
                (local, mirror.id, false)
            }
            None => {
                let (name, color) = mirror_look(calendar);
                let created = mirrors::create_mirror(
                    &txn,
                    mirrors::NewMirror {
                        provider: mirrors::CALDAV.to_owned(),
                        account_id: account_id.clone(),
                        owner: account.user_id.clone(),
                        remote_id: remote_id.clone(),
                        name,
                        color,
                        read_only: calendar.read_only,
                    },
                    now,
                )
                .await?;
                // Another process mirrored it meanwhile: this transaction is dropped.
                let Some((local, row)) = created else {
                    continue;
                };
                (local, row.id, true)
            }
        };
        let target = Target {
            calendar: &local,
            owner: &account.user_id,
        };
        let wrote = apply(&txn, target, &changes.resources, &changes.removed, now).await?;
        mirrors::set_sync_token(&txn, mirror_id, changes.token.as_deref()).await?;
        txn.commit().await?;
        if wrote || created {
            changed.push(local.id);
        }
    }
    announce_external_sync(env, &changed).await?;
    Ok(changed)
}

/// Sends `external_sync {calendars}` to the members of the changed calendars, each user
/// once, naming the calendars they are a member of.
pub async fn announce_external_sync(env: &Mirrors, changed: &[Uuid]) -> Result<(), AppError> {
    if changed.is_empty() {
        return Ok(());
    }
    let by_calendar = members::ids_by_calendar(env.services.db.conn(), changed).await?;
    let mut by_user: HashMap<String, Vec<Uuid>> = HashMap::new();
    for calendar in changed {
        for user in by_calendar.get(calendar).into_iter().flatten() {
            by_user.entry(user.clone()).or_default().push(*calendar);
        }
    }
    for (user, calendars) in by_user {
        env.services.broadcast(
            [user.as_str()],
            &Frame::new("external_sync", json!({ "calendars": calendars })),
        );
    }
    Ok(())
}
