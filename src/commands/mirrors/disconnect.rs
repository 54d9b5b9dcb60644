//! Disconnecting: one mirror (kept as disabled, so discovery does not bring it back), or a
//! whole account with all its mirrors. Each is one transaction. A Google account's tokens
//! are revoked at Google first, as far as Google can be reached (best effort); otherwise the
//! provider is not touched. A linked Google or Microsoft account is unlinked with its
//! mirrors, unless it is its user's only way to sign in: then only its calendar tokens and
//! scope go.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Mirrors;

use crate::commands::events::visibility::{self as event_visibility, CalendarDeletion};
use crate::commands::{Services, announce_removed};
use crate::domain::ids::{CaldavAccountId, CalendarId, UserId};
use crate::domain::providers::{AccountKey, Provider};
use crate::error::AppError;
use crate::providers::oauth;
use crate::store::caldav_accounts as account_store;
use crate::store::{
    WriteTxn, calendars as calendar_store, members, mirrors, oauth_accounts, outbox,
};

/// A mirror taken away locally, to announce after the commit.
#[derive(Debug, Default)]
pub struct Removed {
    calendars: Vec<(CalendarId, Vec<UserId>)>,
    deletions: Vec<CalendarDeletion>,
}

impl Removed {
    /// `calendar_removed {id}` to every former member, then the events' frames.
    pub fn announce(&self, services: &Services) {
        for (calendar, former) in &self.calendars {
            for user in former {
                announce_removed(services, user, *calendar);
            }
        }
        for deletion in &self.deletions {
            deletion.announce(services);
        }
    }

    /// The calendars removed.
    pub fn calendars(&self) -> impl Iterator<Item = CalendarId> + '_ {
        self.calendars.iter().map(|(id, _)| *id)
    }
}

/// Deletes the local calendar of a mirror with its events (as a calendar deletion does)
/// and its pending provider writes, in the caller's transaction.
pub async fn remove_mirror_calendar(
    txn: &WriteTxn,
    calendar_id: CalendarId,
    removed: &mut Removed,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    calendar_store::lock_for_deletion(txn, calendar_id).await?;
    let former = members::member_ids(txn, calendar_id).await?;
    outbox::drop_writes_for_calendars(txn, &[calendar_id]).await?;
    let deletion = event_visibility::on_calendar_deleted(txn, calendar_id, now).await?;
    calendar_store::delete(txn, calendar_id).await?;
    removed.calendars.push((calendar_id, former));
    removed.deletions.push(deletion);
    Ok(())
}

/// `POST /connections/calendars/disconnect`: disables the mirror `calendar_id` of one of
/// `user`'s accounts and deletes its local calendar.
pub async fn disconnect_calendar(
    mirrors_env: &Mirrors,
    user: &UserId,
    calendar_id: CalendarId,
) -> Result<(), AppError> {
    let services = &mirrors_env.services;
    services
        .db
        .write(async |txn| {
            let mirror = mirrors::mirrors_of(txn, &[calendar_id])
                .await?
                .remove(&calendar_id)
                .filter(|mirror| mirror.user_id == *user && !mirror.disabled)
                .ok_or_else(|| {
                    AppError::bad_request("Not an external calendar you can disconnect")
                })?;
            let mut removed = Removed::default();
            let now = txn.stamp().await?;
            remove_mirror_calendar(txn, calendar_id, &mut removed, now).await?;
            mirrors::disable_mirror(txn, mirror.id).await?;
            removed.announce(&services.within(txn));
            Ok::<_, AppError>(())
        })
        .await
}

/// Removes every mirror of the account `key` with their events and pending writes, and the
/// remembered disabled mirrors, in the caller's transaction.
async fn remove_account_mirrors(
    txn: &WriteTxn,
    key: &AccountKey,
    removed: &mut Removed,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let known = mirrors::calendars_of_account(txn, key.provider.as_str(), &key.id).await?;
    for mirror in &known {
        if let Some(calendar) = mirror.calendar_id {
            remove_mirror_calendar(txn, calendar, removed, now).await?;
        }
    }
    let ids: Vec<Uuid> = known.iter().map(|mirror| mirror.id).collect();
    mirrors::delete_mirrors(txn, &ids).await?;
    Ok(())
}

/// Removes a CalDAV account of `user`: its mirrors with their events, their pending
/// writes, the remembered disabled mirrors and the credentials, in one transaction.
/// Returns whether the account existed.
pub async fn disconnect_caldav(
    mirrors_env: &Mirrors,
    user: &UserId,
    account_id: CaldavAccountId,
) -> Result<bool, AppError> {
    let services = &mirrors_env.services;
    services
        .db
        .write(async |txn| {
            // Only read before this return: its commit writes nothing.
            let Some(account) = account_store::caldav_account(txn, account_id)
                .await?
                .filter(|account| account.user_id == *user)
            else {
                return Ok(false);
            };
            let key = AccountKey::new(Provider::Caldav, account.id);
            let mut removed = Removed::default();
            let now = txn.stamp().await?;
            remove_account_mirrors(txn, &key, &mut removed, now).await?;
            account_store::delete_caldav_account(txn, account.id).await?;
            removed.announce(&services.within(txn));
            Ok::<_, AppError>(true)
        })
        .await
}

/// Revokes an account's token at its provider, where the provider offers that (Google);
/// a provider that cannot be reached is logged, never an error.
async fn revoke_at_provider(
    env: &Mirrors,
    account: &entities::accounts::Model,
    provider: Provider,
) {
    let Some(app) = env.oauth_app(provider) else {
        return;
    };
    let Some(sealed) = account
        .refresh_token
        .as_ref()
        .or(account.access_token.as_ref())
    else {
        return;
    };
    let Some(token) = env
        .secrets
        .as_ref()
        .and_then(|secrets| secrets.open(sealed).ok())
    else {
        return;
    };
    if let Err(err) = oauth::revoke(&env.guard, app, &token).await {
        tracing::warn!(provider = %provider, error = %err, "sync.revoke_failed");
    }
}

/// `POST /connections/disconnect` for Google or Microsoft: revokes the account's token at
/// the provider (best effort), removes its mirrors, and unlinks the account, or, when it is
/// the user's only way to sign in, clears only its tokens and scope. `account` is the
/// provider's account id (or the account row's id). Returns the key of the account
/// disconnected, if it was the user's.
pub async fn disconnect_linked(
    env: &Mirrors,
    user: &UserId,
    provider: Provider,
    account: &str,
) -> Result<Option<AccountKey>, AppError> {
    let db = &env.services.db;
    let Some(found) = oauth_accounts::of_user(db, user, provider)
        .await?
        .into_iter()
        .find(|row| row.account_id == account || row.id == account)
    else {
        return Ok(None);
    };
    revoke_at_provider(env, &found, provider).await;
    let key = AccountKey::new(provider, found.account_id.clone());
    let services = &env.services;
    services
        .db
        .write(async |txn| {
            let mut removed = Removed::default();
            let now = txn.stamp().await?;
            remove_account_mirrors(txn, &key, &mut removed, now).await?;
            if oauth_accounts::sign_in_methods(txn, user).await? > 1 {
                oauth_accounts::delete(txn, &found.id).await?;
            } else {
                oauth_accounts::clear_tokens(txn, &found.id).await?;
            }
            removed.announce(&services.within(txn));
            Ok::<_, AppError>(())
        })
        .await?;
    tracing::info!(provider = %provider, "sync.account_disconnected");
    Ok(Some(key))
}

/// `POST /connections/google/revoke`: revokes every Google account of `user` at Google
/// (best effort) and forgets their tokens and scope; their mirrors stay, and their writes
/// wait for the accounts to be linked again. Returns the accounts' keys.
pub async fn revoke_google(env: &Mirrors, user: &UserId) -> Result<Vec<AccountKey>, AppError> {
    let db = &env.services.db;
    let mut keys = Vec::new();
    for account in oauth_accounts::of_user(db, user, Provider::Google).await? {
        revoke_at_provider(env, &account, Provider::Google).await;
        oauth_accounts::clear_tokens(db, &account.id).await?;
        keys.push(AccountKey::new(
            Provider::Google,
            account.account_id.clone(),
        ));
    }
    Ok(keys)
}
