//! Calendar-level writes on a mirror go to the provider first: a rename or recolor is
//! written there, a deletion deletes the remote calendar, and a new calendar in a connected
//! account is made there before it is mirrored. If the provider refuses, nothing changes
//! locally and the caller gets a 400 with its reason. Only the account's owner may change a
//! mirror (other members are refused with 403).

use chrono::Utc;

use super::Mirrors;
use super::source::{Source, SyncError};
use crate::domain::ids::{AccountId, CalendarId, UserId};
use crate::domain::providers::{AccountKey, Provider};
use crate::domain::roles::Role;
use crate::error::AppError;
use crate::ical::ImportedEvent;
use crate::store::mirrors::{self, NewMirror};
use crate::store::{calendars as calendar_store, ics as ics_store, members, outbox};
use crate::views::calendars::CalendarView;

/// What a calendar-level write does at the provider.
#[derive(Debug, Clone, Copy)]
pub enum RemoteChange<'a> {
    /// Rename and recolor.
    Update {
        /// New name.
        name: &'a str,
        /// New colour.
        color: &'a str,
    },
    /// Delete the remote calendar.
    Delete,
}

/// Runs `change` at the provider if `calendar_id` is a mirror (nothing otherwise).
pub async fn before_change(
    env: &Mirrors,
    calendar_id: CalendarId,
    user: &UserId,
    change: RemoteChange<'_>,
) -> Result<(), AppError> {
    let db = &env.services.db;
    let Some(mirror) = mirrors::mirrors_of(db, &[calendar_id])
        .await?
        .remove(&calendar_id)
    else {
        return Ok(());
    };
    if mirror.user_id != *user {
        // Only the owner may; a member who may not change the calendar at all is refused
        // by the calendar's own rules.
        if members::role_of(db, calendar_id, user).await? == Some(Role::Owner)
            || matches!(change, RemoteChange::Update { .. })
        {
            return Err(AppError::forbidden(
                "Only the owner of the connected account can change this calendar.",
            ));
        }
        return Ok(());
    }
    let key = AccountKey::from_row(&mirror.provider, &mirror.account_id)
        .ok_or_else(|| AppError::bad_request("Unsupported provider"))?;
    let Some(account) = env.account(&key).await? else {
        return Ok(());
    };
    let source = env.source(&account).await?;
    let outcome = match change {
        RemoteChange::Update { name, color } => {
            source.update_calendar(&mirror.remote_id, name, color).await
        }
        RemoteChange::Delete => source.delete_calendar(&mirror.remote_id).await,
    };
    outcome.map_err(AppError::from)
}

/// Makes a calendar in one of `user`'s connected accounts, then mirrors it; the new
/// calendar as its creator sees it.
pub async fn create_in_account(
    env: &Mirrors,
    user: &UserId,
    provider: &str,
    account_id: &AccountId,
    name: &str,
    color: &str,
) -> Result<CalendarView, AppError> {
    let provider =
        Provider::parse(provider).ok_or_else(|| AppError::bad_request("Unsupported provider."))?;
    let not_yours = || AppError::forbidden("That account isn't connected to your user.");
    let account = env
        .account(&AccountKey::new(provider, account_id.clone()))
        .await?
        .filter(|account| account.owner() == user && account.syncs())
        .ok_or_else(not_yours)?;
    let key = account.key();
    let source = env.source(&account).await?;
    let remote_id = source.create_calendar(name, color).await?;
    let (calendar, members) = env
        .services
        .db
        .write(async |txn| {
            let created = mirrors::create_mirror(
                txn,
                NewMirror {
                    provider: key.provider.as_str().to_owned(),
                    account_id: key.id.clone(),
                    owner: user.clone(),
                    remote_id,
                    name: name.to_owned(),
                    color: color.to_owned(),
                    read_only: false,
                },
                Utc::now(),
            )
            .await?;
            let (calendar, _) = created
                .ok_or_else(|| AppError::internal("a calendar just made is mirrored already"))?;
            let members = members::list(txn, calendar.id).await?;
            Ok::<_, AppError>((calendar, members))
        })
        .await?;
    let link = mirrors::provider_links(&env.services.db, &[calendar.id]).await?;
    let view = CalendarView::new(&calendar, &members, Some(Role::Owner))
        .with_provider(link.get(&calendar.id), user);
    Ok(view)
}

/// Imports `imported` into a new calendar of one of `user`'s connected accounts: the
/// calendar is made there and mirrored ([`create_in_account`]), then the events are stored
/// in the mirror with their provider writes in one transaction, and the account's actor
/// delivers them.
pub async fn import_into_account(
    env: &Mirrors,
    user: &UserId,
    destination: (&str, &AccountId),
    name: &str,
    color: &str,
    imported: &[ImportedEvent],
) -> Result<CalendarView, AppError> {
    let (provider, account_id) = destination;
    let view = create_in_account(env, user, provider, account_id, name, color).await?;
    let calendar_id = CalendarId::from_uuid(view.id);
    let services = &env.services;
    let targets = services
        .db
        .write(async |txn| {
            let calendar = calendar_store::lock(txn, calendar_id)
                .await?
                .ok_or_else(|| AppError::internal("the new mirror is gone"))?;
            let now = txn.stamp().await?;
            let ids = ics_store::add_imported(txn, &calendar, user, imported, now).await?;
            let targets = outbox::targets(&services.db, txn, &[calendar.id]).await?;
            let calendars = [calendar.id];
            let writes =
                outbox::puts_for_new(&targets, ids.iter().map(|id| (*id, calendars.as_slice())));
            outbox::enqueue(txn, &writes, now).await?;
            Ok::<_, AppError>(targets)
        })
        .await?;
    services.provider_writes_queued(targets.values());
    Ok(view)
}

/// The provider's refusal as the caller's 400 (or 503 when it could not be reached).
impl From<SyncError> for AppError {
    fn from(err: SyncError) -> Self {
        match err {
            SyncError::Local(err) => err,
            SyncError::Remote(err) if err.is_transient() => {
                AppError::Unavailable(format!("The calendar provider is unavailable: {err}").into())
            }
            SyncError::Remote(err) => {
                AppError::bad_request(format!("The calendar server refused the change: {err}"))
            }
        }
    }
}
