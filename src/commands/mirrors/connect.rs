//! Connecting a CalDAV account: discovery (well-known redirect, principal, calendar home,
//! calendar list) with the given credentials, then a strict initial sync. A new account is
//! stored only once every calendar has been read, in one transaction with its mirrors and
//! their events, so a failure at any step leaves nothing behind. Connecting the same server
//! and user name again replaces the stored password (and pulls with it first).

use std::collections::HashSet;

use chrono::Utc;

use super::apply::{Target, apply};
use super::pull::{new_mirror, pull};
use super::source::{Changes, Known, RemoteCalendar, Source, SyncError};
use super::sources::caldav::CaldavSource;
use super::{DISCOVERY_FAILED, INITIAL_SYNC_FAILED, Mirrors};
use crate::domain::ids::{CaldavAccountId, UserId};
use crate::domain::providers::{AccountKey, Provider};
use crate::error::AppError;
use crate::providers::caldav::{CaldavClient, Discovery};
use crate::store::caldav_accounts as account_store;
use crate::store::mirrors;
use crate::store::settings;

/// What the client sent (trimmed, all present).
#[derive(Debug, Clone)]
pub struct CaldavCredentials {
    /// The server URL.
    pub server_url: String,
    /// The user name.
    pub username: String,
    /// The (app-specific) password.
    pub password: String,
}

/// Connects (or reconnects) a CalDAV account of `user`; returns its id.
pub async fn connect_caldav(
    env: &Mirrors,
    user: &UserId,
    credentials: CaldavCredentials,
) -> Result<CaldavAccountId, AppError> {
    let secrets = env.secrets()?;
    let zone = settings::zone_of(&env.services.db, user).await?;
    let (source, discovery, calendars) =
        discover(env, &credentials, zone).await.inspect_err(|_| {
            env.services.metrics.sync_failed("caldav", "discovery");
        })?;
    let input = account_store::CaldavAccountInput {
        user_id: user.clone(),
        server_url: credentials.server_url.clone(),
        username: credentials.username.clone(),
        encrypted_password: secrets.seal(&credentials.password),
        principal_url: discovery.principal.to_string(),
        home_url: discovery.home.to_string(),
    };
    let existing = account_store::caldav_accounts_of(&env.services.db, user)
        .await?
        .into_iter()
        .find(|account| {
            account.server_url == credentials.server_url && account.username == credentials.username
        });
    if let Some(account) = existing {
        // Pull with the new password first; store it only once it worked.
        let key = AccountKey::new(Provider::Caldav, account.id);
        pull(env, &source, &key, user)
            .await
            .map_err(initial_sync_failed)?;
        let saved = env
            .services
            .db
            .write(async |txn| {
                Ok::<_, AppError>(account_store::save_caldav_account(txn, input, Utc::now()).await?)
            })
            .await?;
        return Ok(saved.id);
    }
    let mut read = Vec::with_capacity(calendars.len());
    let (nothing_known, nothing_skipped) = (Known::new(), HashSet::new());
    for calendar in calendars {
        let changes = source
            .changes(&calendar, None, &nothing_known, &nothing_skipped)
            .await
            .map_err(initial_sync_failed)?;
        read.push((calendar, changes));
    }
    store_new_account(env, input, read)
        .await
        .map_err(initial_sync_failed)
}

/// Finds the calendar home and lists its calendars with the given credentials; every
/// failure is the reference's one 400.
async fn discover<'a>(
    env: &'a Mirrors,
    credentials: &CaldavCredentials,
    zone: chrono_tz::Tz,
) -> Result<(CaldavSource<'a>, Discovery, Vec<RemoteCalendar>), AppError> {
    let refused = |reason: &dyn std::fmt::Display| {
        tracing::info!(reason = %reason, "caldav.discovery_failed");
        AppError::bad_request(DISCOVERY_FAILED)
    };
    let url = url::Url::parse(&credentials.server_url).map_err(|err| refused(&err))?;
    env.guard.check(&url).await.map_err(|err| refused(&err))?;
    let client = CaldavClient::new(
        env.guard.clone(),
        credentials.username.clone(),
        credentials.password.clone(),
    );
    let discovery = client.discover(&url).await.map_err(|err| refused(&err))?;
    let source = CaldavSource::new(env, client, discovery.home.clone(), zone);
    let calendars = source.calendars().await.map_err(|err| refused(&err))?;
    Ok((source, discovery, calendars))
}

/// Stores a new account with a mirror of each calendar and their events, in one
/// transaction.
async fn store_new_account(
    env: &Mirrors,
    input: account_store::CaldavAccountInput,
    read: Vec<(RemoteCalendar, Changes)>,
) -> Result<CaldavAccountId, SyncError> {
    env.services
        .db
        .write(async |txn| {
            let now = txn.stamp().await?;
            let owner = input.user_id.clone();
            let account = account_store::save_caldav_account(txn, input, now).await?;
            for (calendar, changes) in read {
                let key = AccountKey::new(Provider::Caldav, account.id);
                let new = new_mirror(&key, &owner, &calendar);
                let created = mirrors::create_mirror(txn, new, now).await?;
                // The account is new: none of its calendars can be mirrored already.
                let Some((local, row)) = created else {
                    continue;
                };
                let target = Target {
                    calendar: &local,
                    owner: &owner,
                };
                apply(txn, target, &changes.resources, &changes.removed, now).await?;
                mirrors::set_sync_token(txn, row.id, changes.cursor.as_deref()).await?;
            }
            Ok::<_, SyncError>(account.id)
        })
        .await
}

/// The reference's 400 for a failed initial sync, with what failed.
fn initial_sync_failed(err: SyncError) -> AppError {
    match err {
        SyncError::Remote(err) => AppError::bad_request(format!("{INITIAL_SYNC_FAILED} {err}")),
        SyncError::Local(err) => err,
    }
}
