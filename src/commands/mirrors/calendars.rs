//! Calendar-level writes on a mirror go to the provider first: a rename or recolor is
//! written there (`PROPPATCH`), a deletion deletes the remote calendar, and a new calendar
//! in a connected account is made there (`MKCALENDAR`) before it is mirrored. If the
//! provider refuses, nothing changes locally and the caller gets a 400 with its reason.
//! Only the account's owner may change a mirror (other members are refused with 403).

use chrono::Utc;
use uuid::Uuid;

use super::Mirrors;
use super::pull::PullError;
use crate::domain::ids::UserId;
use crate::domain::roles::Role;
use crate::error::AppError;
use crate::ical::ImportedEvent;
use crate::providers::caldav::CaldavError;
use crate::store::caldav_accounts as account_store;
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
    calendar_id: Uuid,
    user: &UserId,
    change: RemoteChange<'_>,
) -> Result<(), AppError> {
    let db = env.services.db.conn();
    let Some(mirror) = mirrors::mirrors_of(db, &[calendar_id])
        .await?
        .remove(&calendar_id)
    else {
        return Ok(());
    };
    if mirror.user_id != user.as_str() {
        // Only the owner may; a member who may not change the calendar at all is refused
        // by the calendar's own rules.
        if members::role_of(db, calendar_id, user.as_str()).await? == Some(Role::Owner)
            || matches!(change, RemoteChange::Update { .. })
        {
            return Err(AppError::forbidden(
                "Only the owner of the connected account can change this calendar.",
            ));
        }
        return Ok(());
    }
    if mirror.provider != mirrors::CALDAV {
        return Err(AppError::bad_request("Unsupported provider"));
    }
    let account = Uuid::parse_str(&mirror.account_id)
        .ok()
        .map(|id| account_store::caldav_account(db, id));
    let Some(account) = account else {
        return Ok(());
    };
    let Some(account) = account.await? else {
        return Ok(());
    };
    let client = env.caldav_client(&account)?;
    let url = url::Url::parse(&mirror.remote_id)
        .map_err(|err| AppError::internal(format!("stored calendar URL: {err}")))?;
    let outcome = match change {
        RemoteChange::Update { name, color } => client.update_calendar(&url, name, color).await,
        RemoteChange::Delete => client.delete_calendar(&url).await,
    };
    outcome.map_err(refused)
}

/// Makes a calendar in one of `user`'s connected accounts, then mirrors it; the new
/// calendar as its creator sees it.
pub async fn create_in_account(
    env: &Mirrors,
    user: &UserId,
    provider: &str,
    account_id: &str,
    name: &str,
    color: &str,
) -> Result<CalendarView, AppError> {
    if !matches!(provider, "caldav") {
        return Err(AppError::bad_request(
            "Calendars can only be created in connected CalDAV accounts on this server.",
        ));
    }
    let not_yours = || AppError::forbidden("That account isn't connected to your user.");
    let account_uuid = Uuid::parse_str(account_id).map_err(|_| not_yours())?;
    let account = account_store::caldav_account(env.services.db.conn(), account_uuid)
        .await?
        .filter(|account| account.user_id == user.as_str())
        .ok_or_else(not_yours)?;
    let client = env.caldav_client(&account)?;
    let home = url::Url::parse(&account.home_url)
        .map_err(|err| AppError::internal(format!("stored calendar home: {err}")))?;
    let url = client
        .make_calendar(&home, name, color)
        .await
        .map_err(refused)?;
    let txn = env.services.db.begin_write().await?;
    let created = mirrors::create_mirror(
        &txn,
        NewMirror {
            provider: mirrors::CALDAV.to_owned(),
            account_id: account.id.to_string(),
            owner: user.as_str().to_owned(),
            remote_id: url.to_string(),
            name: name.to_owned(),
            color: color.to_owned(),
            read_only: false,
        },
        Utc::now(),
    )
    .await?;
    let (calendar, _) =
        created.ok_or_else(|| AppError::internal("a calendar just made is mirrored already"))?;
    let members = members::list(&txn, calendar.id).await?;
    txn.commit().await?;
    let link = mirrors::provider_links(env.services.db.conn(), &[calendar.id]).await?;
    Ok(CalendarView::new(&calendar, &members, Some(Role::Owner))
        .with_provider(link.get(&calendar.id), user.as_str()))
}

/// Imports `imported` into a new calendar of one of `user`'s connected accounts: the
/// calendar is made there and mirrored ([`create_in_account`]), then the events are stored
/// in the mirror with their provider writes in one transaction, and the account's actor
/// delivers them.
pub async fn import_into_account(
    env: &Mirrors,
    user: &UserId,
    destination: (&str, &str),
    name: &str,
    color: &str,
    imported: &[ImportedEvent],
) -> Result<CalendarView, AppError> {
    let (provider, account_id) = destination;
    let view = create_in_account(env, user, provider, account_id, name, color).await?;
    let services = &env.services;
    let txn = services.db.begin_write().await?;
    let calendar = calendar_store::lock(&txn, view.id)
        .await?
        .ok_or_else(|| AppError::internal("the new mirror is gone"))?;
    let now = Utc::now();
    let ids = ics_store::add_imported(&txn, &calendar, user.as_str(), imported, now).await?;
    let targets = outbox::targets(&services.db, &txn, &[calendar.id]).await?;
    let calendars = [calendar.id];
    let writes = outbox::puts_for_new(&targets, ids.iter().map(|id| (*id, calendars.as_slice())));
    outbox::enqueue(&txn, &writes, now).await?;
    txn.commit().await?;
    services.provider_writes_queued(targets.values());
    Ok(view)
}

/// The provider's refusal as the caller's 400 (or 503 when it could not be reached).
fn refused(err: CaldavError) -> AppError {
    if err.is_transient() {
        return AppError::Unavailable(format!("The calendar server is unavailable: {err}").into());
    }
    AppError::bad_request(format!("The calendar server refused the change: {err}"))
}

impl From<PullError> for AppError {
    fn from(err: PullError) -> Self {
        match err {
            PullError::Local(err) => err,
            PullError::Remote(err) => refused(err),
        }
    }
}
