//! Disconnecting: one mirror (kept as disabled, so discovery does not bring it back), or a
//! whole account with all its mirrors. Each is one transaction; the provider is not
//! touched.

use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use super::Mirrors;
use crate::commands::events::visibility::{self as event_visibility, CalendarDeletion};
use crate::commands::{Services, announce_removed};
use crate::domain::ids::UserId;
use crate::error::AppError;
use crate::store::caldav_accounts as account_store;
use crate::store::{calendars as calendar_store, members, mirrors, outbox};

/// A mirror taken away locally, to announce after the commit.
#[derive(Debug, Default)]
pub struct Removed {
    calendars: Vec<(Uuid, Vec<String>)>,
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
    pub fn calendars(&self) -> impl Iterator<Item = Uuid> + '_ {
        self.calendars.iter().map(|(id, _)| *id)
    }
}

/// Deletes the local calendar of a mirror with its events (as a calendar deletion does)
/// and its pending provider writes, in the caller's transaction.
pub async fn remove_mirror_calendar(
    txn: &impl ConnectionTrait,
    calendar_id: Uuid,
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
    calendar_id: Uuid,
) -> Result<(), AppError> {
    let services = &mirrors_env.services;
    let txn = services.db.begin_write().await?;
    let mirror = mirrors::mirrors_of(&txn, &[calendar_id])
        .await?
        .remove(&calendar_id)
        .filter(|mirror| mirror.user_id == user.as_str() && !mirror.disabled)
        .ok_or_else(|| AppError::bad_request("Not an external calendar you can disconnect"))?;
    let mut removed = Removed::default();
    remove_mirror_calendar(&txn, calendar_id, &mut removed, Utc::now()).await?;
    mirrors::disable_mirror(&txn, mirror.id).await?;
    txn.commit().await?;
    removed.announce(services);
    Ok(())
}

/// Removes a CalDAV account of `user`: its mirrors with their events, their pending
/// writes, the remembered disabled mirrors and the credentials, in one transaction.
/// Returns whether the account existed.
pub async fn disconnect_caldav(
    mirrors_env: &Mirrors,
    user: &UserId,
    account_id: Uuid,
) -> Result<bool, AppError> {
    let services = &mirrors_env.services;
    let txn = services.db.begin_write().await?;
    let Some(account) = account_store::caldav_account(&txn, account_id)
        .await?
        .filter(|account| account.user_id == user.as_str())
    else {
        return Ok(false);
    };
    let known =
        mirrors::calendars_of_account(&txn, mirrors::CALDAV, &account.id.to_string()).await?;
    let mut removed = Removed::default();
    let now = Utc::now();
    for mirror in &known {
        if let Some(calendar) = mirror.calendar_id {
            remove_mirror_calendar(&txn, calendar, &mut removed, now).await?;
        }
    }
    let ids: Vec<Uuid> = known.iter().map(|mirror| mirror.id).collect();
    mirrors::delete_mirrors(&txn, &ids).await?;
    account_store::delete_caldav_account(&txn, account.id).await?;
    txn.commit().await?;
    removed.announce(services);
    Ok(true)
}
