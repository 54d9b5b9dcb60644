//! The mutations. Calendar-scoped ones run inside that calendar's actor: each validates what
//! the HTTP edge could not, locks the calendar row, authorizes with the permission matrix,
//! and writes in one transaction, announcing its frames into it ([`Services::within`]):
//! they reach the affected members, once per user, only when it commits. Correctness rests
//! on the transaction (row lock, unique constraints), not on the actor being the only
//! writer; frames leave in commit order (on PostgreSQL the database orders them across
//! instances). User-scoped ones (settings, reminders, Pages) run in the request, serialized
//! per user by a row lock, and announce their frames to the user's own connections the same
//! way.

pub mod calendar;
pub mod events;
pub mod federation;
pub mod invites;
pub mod membership;
pub mod mirrors;
pub mod pages;
pub mod polls;
pub mod reminders;
pub mod settings;

use crate::store::Connection;
use entities::calendars;

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::domain::frames::Frame;
use crate::domain::frames::FrameBatch;
use crate::domain::ids::{AccountId, CalendarId, UserId};
use crate::domain::roles::{Action, Role};
use crate::error::AppError;
use crate::metrics::Metrics;
use crate::store::calendars as calendar_store;
use crate::store::members::{self, Member};
use crate::store::{Database, TxnOutgoing, WriteTxn};
use crate::views::calendars::CalendarView;

/// What the commands use: the store, where their frames and change mails go, the metrics.
#[derive(Debug, Clone)]
pub struct Services {
    /// The database.
    pub db: Database,
    /// Where committed changes are announced.
    pub announce: Arc<dyn Announce>,
    /// This server's metric registry.
    pub metrics: Arc<Metrics>,
    /// How long change notifications wait to be mailed together (`MAIL_BATCH_DELAY_MS`).
    pub mail_batch_delay_ms: u64,
}

/// Where committed changes are announced: users' open streams, and the mailer of change
/// notifications. Nothing is announced before its transaction commits.
pub trait Announce: Send + Sync + std::fmt::Debug {
    /// Sends `frame` to every stream of each user in `users`, once per user.
    fn broadcast_to(&self, users: &mut dyn Iterator<Item = &UserId>, frame: &Frame);
    /// Sends each user their frames of `batch`, together.
    fn deliver(&self, batch: FrameBatch);
    /// Change notifications are queued until `due_at` (the rows are committed).
    fn mail_batch_due(&self, due_at: DateTime<Utc>);
    /// Whether `user` has an open stream (frames for others need not be built).
    fn is_connected(&self, user: &UserId) -> bool;
    /// Rows were committed to the outbox of these accounts (`(provider, account)`): their
    /// sync actors deliver them now.
    fn provider_writes_queued(&self, accounts: &[(String, AccountId)]);
    /// Announcements into a transaction: where they go once it committed.
    fn committed_target(&self) -> Option<Arc<dyn Announce>> {
        None
    }
}

impl Services {
    /// These services, announcing into `txn`: what is announced through them goes out
    /// once `txn` commits (on PostgreSQL the frames inside it, so every instance hears
    /// them in commit order), and not at all if it does not.
    pub fn within(&self, txn: &WriteTxn) -> Services {
        // Services already within a transaction announce, once it committed, where theirs
        // would have.
        let committed = self
            .announce
            .committed_target()
            .unwrap_or_else(|| self.announce.clone());
        let outgoing = txn.outgoing().clone();
        let local = committed.clone();
        outgoing.deliver_with(move |frames| local.deliver(frames));
        Services {
            announce: Arc::new(InTransaction {
                outgoing,
                committed,
                crosses_instances: txn.crosses_instances(),
            }),
            ..self.clone()
        }
    }

    /// Sends `frame` to every stream of each user in `users`, once per user.
    pub fn broadcast<'a>(&self, users: impl IntoIterator<Item = &'a UserId>, frame: &Frame) {
        self.announce.broadcast_to(&mut users.into_iter(), frame);
    }

    /// Tells the sync actors of these accounts that their outbox has new rows (after the
    /// commit; each account once).
    pub fn provider_writes_queued<'a>(
        &self,
        accounts: impl IntoIterator<Item = &'a (String, AccountId)>,
    ) {
        let mut unique: Vec<(String, AccountId)> = accounts.into_iter().cloned().collect();
        if unique.is_empty() {
            return;
        }
        unique.sort();
        unique.dedup();
        self.announce.provider_writes_queued(&unique);
    }
}

/// Announcements into a write transaction ([`Services::within`]).
#[derive(Debug)]
struct InTransaction {
    outgoing: TxnOutgoing,
    /// Where the steps go once the transaction committed.
    committed: Arc<dyn Announce>,
    crosses_instances: bool,
}

impl Announce for InTransaction {
    fn broadcast_to(&self, users: &mut dyn Iterator<Item = &UserId>, frame: &Frame) {
        self.outgoing.add_frame(users, frame);
    }

    fn deliver(&self, batch: FrameBatch) {
        self.outgoing.add_frames(batch);
    }

    fn mail_batch_due(&self, due_at: DateTime<Utc>) {
        let committed = self.committed.clone();
        self.outgoing
            .after_commit(move || committed.mail_batch_due(due_at));
    }

    fn is_connected(&self, user: &UserId) -> bool {
        // A user connected to another instance is not known here.
        self.crosses_instances || self.committed.is_connected(user)
    }

    fn provider_writes_queued(&self, accounts: &[(String, AccountId)]) {
        let committed = self.committed.clone();
        let accounts = accounts.to_vec();
        self.outgoing
            .after_commit(move || committed.provider_writes_queued(&accounts));
    }

    fn committed_target(&self) -> Option<Arc<dyn Announce>> {
        Some(self.committed.clone())
    }
}

/// 403 for anyone without a membership row (unknown and foreign calendars alike).
pub fn not_a_member() -> AppError {
    AppError::forbidden("You're not a member of this calendar.")
}

/// 403 for a member whose role does not allow `action`.
pub fn not_allowed(action: Action) -> AppError {
    AppError::forbidden(format!(
        "You don't have permission to {} on this calendar.",
        action.as_str()
    ))
}

/// 403 for a write to a calendar deleted at the same time (as a check a moment later would
/// have said).
pub fn calendar_gone() -> AppError {
    AppError::forbidden("A calendar this change refers to no longer exists.")
}

/// How many times a command runs when the database keeps aborting it to break a deadlock.
const TRANSIENT_ATTEMPTS: u32 = 4;

/// The pause before a command runs again, times its attempt: at least the first, at most
/// the second. The transaction the database let go on takes the locks it waited for
/// meanwhile, so the two do not meet in the same deadlock again at once.
const TRANSIENT_PAUSE_MS: (u64, u64) = (5, 15);

/// Runs `command` (which opens, commits and then announces its own transaction) again when
/// the database aborted its transaction to break a deadlock or a serialization conflict
/// ([`crate::store::db_errors::is_transient`]), after a short pause drawn at random
/// ([`TRANSIENT_PAUSE_MS`]): nothing was committed or sent, so the caller gets the outcome
/// of a clean second run instead of a 500. Other outcomes are returned as they are.
pub async fn retry_transient<T, E, F, Fut>(metrics: &Metrics, mut command: F) -> Result<T, E>
where
    E: MaybeTransient,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut attempt = 1;
    loop {
        match command().await {
            Err(err) if attempt < TRANSIENT_ATTEMPTS && err.is_transient() => {
                tracing::warn!(attempt, "db.transaction.retry");
                metrics.transaction_retried();
                let (least, most) = TRANSIENT_PAUSE_MS;
                let pause = rand::random_range(least..=most) * u64::from(attempt);
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
                attempt += 1;
            }
            outcome => return outcome,
        }
    }
}

/// An error that may be a transaction the database aborted to let another go on.
pub trait MaybeTransient {
    /// Whether running the command again could succeed.
    fn is_transient(&self) -> bool;
}

impl MaybeTransient for AppError {
    fn is_transient(&self) -> bool {
        crate::store::db_errors::database_cause(self)
            .is_some_and(crate::store::db_errors::is_transient)
    }
}

/// Locks the calendar and returns it with `user`'s role, which must allow `action`.
pub async fn authorize(
    txn: &impl Connection,
    calendar_id: CalendarId,
    user: &UserId,
    action: Action,
) -> Result<(calendars::Model, Role), AppError> {
    let Some(calendar) = calendar_store::lock(txn, calendar_id).await? else {
        return Err(not_a_member());
    };
    let Some(role) = members::role_of(txn, calendar_id, user).await? else {
        return Err(not_a_member());
    };
    if !role.allows(action) {
        return Err(not_allowed(action));
    }
    Ok((calendar, role))
}

/// Sends `calendar_updated` to every member, each with their own role.
pub fn announce_calendar(services: &Services, calendar: &calendars::Model, members: &[Member]) {
    for member in members {
        let view = CalendarView::new(calendar, members, Some(member.role));
        send_view(services, &member.user.id, "calendar_updated", &view);
    }
}

/// Sends one calendar document as a frame to one user.
pub fn send_view(services: &Services, user_id: &UserId, kind: &'static str, view: &CalendarView) {
    match Frame::of(kind, view) {
        Ok(frame) => services.broadcast([user_id], &frame),
        Err(err) => tracing::error!(error = %err, "frame.encode_failed"),
    }
}

/// Sends `calendar_removed {id}` to a user who lost access.
pub fn announce_removed(services: &Services, user_id: &UserId, calendar_id: CalendarId) {
    services.broadcast(
        [user_id],
        &Frame::new("calendar_removed", serde_json::json!({ "id": calendar_id })),
    );
}
