//! One pass of the reminder dispatcher: take the dispatch (a lease in the database, so one
//! instance sends at a time), work out the window of due times from the durable cursor to
//! now ([`crate::domain::reminder_window`]; never more than `PUSH_MAX_CATCHUP_MS` back:
//! older reminders are counted as skipped, not sent late) or to the write horizon if that
//! is earlier, resolve each subscribed
//! user's reminders in it with the clients' rules ([`crate::domain::reminder_schedule`]),
//! send each to each of the user's browsers, all at once with a bound (a slow push service
//! holds one slot, never the others), retrying throttled and failing ones with backoff
//! within the pass, drop the subscriptions their push services call gone, and move the
//! cursor to the window's end.
//!
//! The window ends at the write horizon ([`Database::horizon`], taken before the pass reads):
//! a write still in flight when the pass reads, on this instance or another, began after
//! the window's end, so a reminder it holds that falls due meanwhile comes with a later
//! pass rather than being passed over for good. (On PostgreSQL the horizon is read off the
//! database's clock: a skew between it and this server's only delays reminders.)
//!
//! The cursor moves after the sends: an instance that dies in the middle of a pass leaves
//! its window to the next holder, which sends it again (a push's tag is the occurrence id,
//! so a browser replaces the banner rather than showing a second one); one that dies
//! between passes leaves neither a gap nor a repeat.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use futures::StreamExt;
use serde_json::{Value, json};

use super::send::{Delivery, PushSender, Urgency};
use crate::domain::ids::UserId;
use crate::domain::reminder_schedule::{
    DueReminder, ReminderContext, ReminderEvent, due_reminders, reminder_body,
};
use crate::domain::reminder_window::{PRECISION, Window, dispatch_window};
use crate::domain::reminders;
use crate::metrics::Metrics;
use crate::store::events::reads as event_reads;
use crate::store::push::{self as push_store, Subscription};
use crate::store::{Database, attendance, reminders as reminder_store, settings as settings_store};

/// The reminder dispatcher's row in `push_dispatch`.
pub const DISPATCHER: &str = "reminders";
/// Sends in flight at once.
const CONCURRENT_SENDS: usize = 32;
/// Tries of one message (the first and the retries).
const TRIES: u32 = 3;
/// The first wait before a retry (doubled each time, or the push service's `Retry-After`).
const FIRST_RETRY: Duration = Duration::from_millis(500);
/// The longest wait before a retry.
const LONGEST_RETRY: Duration = Duration::from_secs(5);
/// How far ahead of its due time an occurrence may start: a rule fires at most 28 days
/// before a timed event, or 30 days and a day's minutes before an all-day one.
const LOOKAHEAD: TimeDelta = TimeDelta::days(31);
/// How far before its due time an occurrence may start: an all-day event is stored at UTC
/// midnight, and its reminder on a clock west of UTC can fall due after that.
const LOOKBEHIND: TimeDelta = TimeDelta::days(2);
/// How far back skipped reminders are counted.
const SKIPPED_COUNTED: TimeDelta = TimeDelta::days(1);
/// The shortest and longest time a push service keeps a message.
const MIN_TTL: Duration = Duration::from_secs(60);
const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// A reminder for something starting this soon is urgent.
const URGENT_WITHIN: TimeDelta = TimeDelta::minutes(15);

/// What a pass needs.
#[derive(Debug, Clone, Copy)]
pub struct Dispatcher<'a> {
    /// The database.
    pub db: &'a Database,
    /// The sender.
    pub sender: &'a PushSender,
    /// The metrics.
    pub metrics: &'a Metrics,
    /// This instance's name as lease holder.
    pub holder: &'a str,
    /// How long a claim holds.
    pub lease: Duration,
    /// How far back reminders are still sent.
    pub max_catchup: Duration,
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassReport {
    /// Whether this instance held the dispatch (else it did nothing).
    pub held: bool,
    /// Messages accepted.
    pub sent: u64,
    /// Reminders skipped for being too old.
    pub skipped: u64,
    /// Subscriptions dropped as gone.
    pub dropped: u64,
}

/// One message to one browser.
struct Message {
    subscription: Subscription,
    payload: Vec<u8>,
    ttl: Duration,
    urgency: Urgency,
}

impl Dispatcher<'_> {
    /// Runs one pass at `now`.
    pub async fn pass(&self, now: DateTime<Utc>) -> Result<PassReport, crate::error::AppError> {
        let until = now + TimeDelta::from_std(self.lease).unwrap_or(TimeDelta::seconds(60));
        let Some(cursor) = push_store::claim(self.db, DISPATCHER, self.holder, now, until).await?
        else {
            return Ok(PassReport::default());
        };
        let settled = self.db.horizon().await?;
        let window = dispatch_window(cursor, now, settled, self.max_catchup);
        if let Some(after) = window.and_then(|window| window.skipped_after) {
            tracing::warn!(
                behind_seconds = (now - after).num_seconds(),
                "push.dispatch.window_clamped"
            );
        }
        let subscribers = push_store::by_user(self.db).await?;
        let subscriptions: u64 = subscribers.values().map(|subs| subs.len() as u64).sum();
        let mut report = PassReport {
            held: true,
            ..PassReport::default()
        };
        let messages = match &window {
            Some(window) => self.messages(&subscribers, window, now, &mut report).await,
            None => Vec::new(),
        };
        let outcomes: Vec<(String, Delivery)> = futures::stream::iter(messages)
            .map(|message| async move {
                let delivery = self.deliver(&message).await;
                (message.subscription.endpoint, delivery)
            })
            .buffer_unordered(CONCURRENT_SENDS)
            .collect()
            .await;
        let mut gone = HashSet::new();
        let mut delivered = HashSet::new();
        for (endpoint, delivery) in outcomes {
            match delivery {
                Delivery::Accepted => {
                    report.sent += 1;
                    delivered.insert(endpoint);
                }
                Delivery::Gone => {
                    self.metrics.push_failed("gone");
                    gone.insert(endpoint);
                }
                Delivery::Retry { reason, .. } => self.metrics.push_failed(reason),
                Delivery::Refused => self.metrics.push_failed("refused"),
            }
        }
        let gone: Vec<String> = gone.into_iter().collect();
        report.dropped = gone.len() as u64;
        push_store::remove_endpoints(self.db, &gone).await?;
        let delivered: Vec<String> = delivered.into_iter().collect();
        push_store::mark_seen(self.db, &delivered, now).await?;
        // Without a window (a write older than the cursor is in flight) the cursor stays.
        let dispatched_to = match window {
            Some(window) => {
                if !push_store::advance(self.db, DISPATCHER, self.holder, window.to).await? {
                    tracing::warn!("push.dispatch.lease_lost");
                }
                window.to
            }
            None => cursor.unwrap_or(settled),
        };
        let lag = (Utc::now() - dispatched_to).num_milliseconds().max(0) as f64 / 1000.0;
        self.metrics.push_pass(
            report.sent,
            report.skipped,
            lag,
            subscriptions.saturating_sub(report.dropped),
        );
        Ok(report)
    }

    /// The messages of the reminders due in `window` to each subscriber's browsers; counts
    /// the skipped ones in `report`.
    async fn messages(
        &self,
        subscribers: &BTreeMap<UserId, Vec<Subscription>>,
        window: &Window,
        now: DateTime<Utc>,
        report: &mut PassReport,
    ) -> Vec<Message> {
        let mut messages = Vec::new();
        for (user, browsers) in subscribers {
            let resolved = match self.resolve(user, window).await {
                Ok(resolved) => resolved,
                Err(err) => {
                    // One user's unreadable data must not stop everybody else's reminders.
                    tracing::error!(error = %err, "push.dispatch.user_failed");
                    continue;
                }
            };
            report.skipped += resolved.skipped;
            for reminder in &resolved.due {
                let payload = payload_of(reminder, resolved.zone);
                let ttl = (reminder.occurrence_start - now)
                    .to_std()
                    .unwrap_or(Duration::ZERO)
                    .clamp(MIN_TTL, MAX_TTL);
                let urgency = if reminder.occurrence_start - now <= URGENT_WITHIN {
                    Urgency::High
                } else {
                    Urgency::Normal
                };
                for subscription in browsers {
                    messages.push(Message {
                        subscription: subscription.clone(),
                        payload: payload.clone(),
                        ttl,
                        urgency,
                    });
                }
            }
        }
        messages
    }

    /// Sends one message, retrying a throttled, failing or unreachable push service with
    /// backoff (its `Retry-After` if it gave one) up to [`TRIES`] times.
    async fn deliver(&self, message: &Message) -> Delivery {
        let mut wait = FIRST_RETRY;
        let mut tries = 0;
        loop {
            tries += 1;
            let delivery = self
                .sender
                .send(
                    &message.subscription,
                    &message.payload,
                    message.ttl,
                    message.urgency,
                )
                .await;
            let Delivery::Retry { after, .. } = &delivery else {
                return delivery;
            };
            if tries >= TRIES {
                return delivery;
            }
            let pause = after.unwrap_or(wait).min(LONGEST_RETRY);
            tokio::time::sleep(pause).await;
            wait = wait.saturating_mul(2);
        }
    }

    /// `user`'s reminders due in `window`, and how many older ones it skips.
    async fn resolve(
        &self,
        user: &UserId,
        window: &Window,
    ) -> Result<Resolved, crate::error::AppError> {
        let earliest_counted = window
            .skipped_after
            .map(|after| after.max(window.from - SKIPPED_COUNTED));
        let read_from = earliest_counted.unwrap_or(window.from);
        let context = self.context_of(user, read_from, window.to).await?;
        let zone = context.context.timezone;
        let window = *window;
        let (due, skipped) = tokio::task::spawn_blocking(move || {
            let events = &context.events;
            let due = due_reminders(events, &context.context, window.from, window.to);
            let skipped = earliest_counted.map_or(0, |after| {
                let before = window.from - PRECISION;
                let first = after + PRECISION;
                due_reminders(events, &context.context, first, before)
                    .reminders
                    .len() as u64
            });
            (due.reminders, skipped)
        })
        .await
        .map_err(|err| crate::error::AppError::internal(format!("reminder resolution: {err}")))?;
        Ok(Resolved { due, skipped, zone })
    }

    /// What the resolver needs of `user` for due times in `[from, to]`.
    async fn context_of(
        &self,
        user: &UserId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<UserReminders, crate::error::AppError> {
        let db = self.db;
        let settings = settings_store::value_of(db, user)
            .await?
            .map(|value| crate::domain::settings::with_defaults(&value))
            .unwrap_or_else(crate::domain::settings::defaults);
        let timezone = crate::domain::settings::zone_of(&settings);
        let calendar_order = settings
            .get("calendarOrder")
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(Value::as_str)
                    .filter_map(crate::domain::ids::canonical_uuid)
                    .map(crate::domain::ids::CalendarId::from_uuid)
                    .collect()
            })
            .unwrap_or_default();
        let default_rule = settings
            .get("defaultReminder")
            .cloned()
            .unwrap_or_else(reminders::default_rule);
        let rows = event_reads::for_reminders(db, user, from - LOOKBEHIND, to + LOOKAHEAD).await?;
        let ids: Vec<_> = rows.iter().map(|(event, _)| event.id).collect();
        let declined = attendance::declined_among(db, user, &ids).await?;
        let calendar_rules: HashMap<_, _> = reminder_store::calendar_rules(db, user)
            .await?
            .into_iter()
            .collect();
        let event_rules: HashMap<_, _> = reminder_store::event_rules(db, user)
            .await?
            .into_iter()
            .collect();
        let events = rows
            .into_iter()
            .map(|(event, calendars)| ReminderEvent {
                id: event.id,
                title: event.title,
                start: event.start,
                end: event.end,
                is_all_day: event.is_all_day,
                is_canceled: event.is_canceled,
                recurrence: event.recurrence,
                calendars,
            })
            .collect();
        Ok(UserReminders {
            events,
            context: ReminderContext {
                timezone,
                default_rule,
                calendar_rules,
                event_rules,
                declined,
                calendar_order,
            },
        })
    }
}

/// One user's events and rules, for the resolver.
struct UserReminders {
    events: Vec<ReminderEvent>,
    context: ReminderContext,
}

/// One user's resolved reminders.
struct Resolved {
    due: Vec<DueReminder>,
    skipped: u64,
    zone: chrono_tz::Tz,
}

/// The message a browser's service worker shows: `{title, body, eventID, tag}` (the tag is
/// the occurrence id, so a repeat replaces the banner).
fn payload_of(reminder: &DueReminder, zone: chrono_tz::Tz) -> Vec<u8> {
    json!({
        "title": reminder.title,
        "body": reminder_body(reminder.occurrence_start, reminder.is_all_day, zone),
        "eventID": reminder.event_id,
        "tag": reminder.occurrence_id,
    })
    .to_string()
    .into_bytes()
}
