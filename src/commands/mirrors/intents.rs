//! The provider writes an event change implies, recorded in the change's own transaction
//! (the outbox): for every mirror the event is linked into after the change, a `put` of the
//! event as it will be at delivery; for every mirror it left (unlinked, or the event
//! deleted), a `delete` of its resource there, captured now because the resource's mapping
//! goes with the change. An event that shares its resource with others (a series and its
//! edited occurrences) leaves it without a remote delete: the resource still holds them.

use crate::store::{Connection, DbErr};
use chrono::{DateTime, Utc};

use crate::domain::ids::{AccountId, CalendarId, EventId};
use crate::store::{Database, mirrors, outbox};
use crate::views::events::ProviderDelivery;

/// One event's links before and after a change (`after` is empty when it was deleted).
#[derive(Debug, Clone)]
pub struct EventChange {
    /// The event.
    pub event_id: EventId,
    /// Its calendars before.
    pub before: Vec<CalendarId>,
    /// Its calendars after.
    pub after: Vec<CalendarId>,
}

/// What a change queued for the providers.
#[derive(Debug, Default)]
pub struct Queued {
    /// The rows written.
    pub writes: Vec<outbox::OutboxWrite>,
}

impl Queued {
    /// The accounts that got rows (`(provider, account)`).
    pub fn accounts(&self) -> impl Iterator<Item = (String, AccountId)> + '_ {
        self.writes
            .iter()
            .map(|write| (write.provider.clone(), write.account_id.clone()))
    }

    /// What an answer about `event_id` says of its delivery (`None`: no mirror touched).
    pub fn delivery_of(&self, event_id: EventId) -> Option<Vec<ProviderDelivery>> {
        delivery_of(&self.writes, event_id)
    }
}

/// The delivery state of `event_id`'s rows among `writes`, for a write's answer.
pub fn delivery_of(
    writes: &[outbox::OutboxWrite],
    event_id: EventId,
) -> Option<Vec<ProviderDelivery>> {
    let deliveries: Vec<ProviderDelivery> = writes
        .iter()
        .filter(|write| write.event_id == event_id)
        .map(|write| ProviderDelivery {
            calendar_id: write.calendar_id.uuid(),
            provider: write.provider.clone(),
            action: write.action,
            state: "pending",
        })
        .collect();
    (!deliveries.is_empty()).then_some(deliveries)
}

/// Writes the outbox rows of `changes`.
pub async fn record(
    db: &Database,
    txn: &impl Connection,
    changes: &[EventChange],
    now: DateTime<Utc>,
) -> Result<Queued, DbErr> {
    let mut calendars: Vec<CalendarId> = changes
        .iter()
        .flat_map(|change| change.before.iter().chain(&change.after).copied())
        .collect();
    calendars.sort_unstable();
    calendars.dedup();
    let targets = outbox::targets(db, txn, &calendars).await?;
    if targets.is_empty() {
        return Ok(Queued::default());
    }
    let mut writes = Vec::new();
    for change in changes {
        for calendar in &change.after {
            if let Some((provider, account_id)) = targets.get(calendar) {
                writes.push(outbox::OutboxWrite {
                    provider: provider.clone(),
                    account_id: account_id.clone(),
                    calendar_id: *calendar,
                    event_id: change.event_id,
                    action: "put",
                    remote: None,
                });
            }
        }
        for calendar in change.before.iter().filter(|c| !change.after.contains(c)) {
            let Some((provider, account_id)) = targets.get(calendar) else {
                continue;
            };
            let Some(resource) =
                mirrors::resource_of_event(txn, *calendar, change.event_id).await?
            else {
                continue;
            };
            mirrors::forget_event(txn, *calendar, change.event_id).await?;
            let shared = mirrors::resources_of(txn, *calendar)
                .await?
                .get(&resource.remote_href)
                .is_some_and(|rows| !rows.is_empty());
            if shared {
                continue;
            }
            writes.push(outbox::OutboxWrite {
                provider: provider.clone(),
                account_id: account_id.clone(),
                calendar_id: *calendar,
                event_id: change.event_id,
                action: "delete",
                remote: Some((resource.remote_href, resource.etag)),
            });
        }
    }
    outbox::enqueue(txn, &writes, now).await?;
    Ok(Queued { writes })
}
