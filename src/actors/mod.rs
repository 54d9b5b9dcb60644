//! The supervised actor tree (ractor): one actor per file, and the only place that spawns
//! tasks.
//!
//! ```text
//! root (RootActor)                    restart budget + backoff for its children
//!  ├─ scheduler (SchedulerActor)      periodic tasks: cleanup, metrics upkeep; skip-if-running
//!  ├─ mailer (MailerActor)            sends mail off the request path, with retries
//!  ├─ sessions (SessionRegistryActor) attaches /api/stream connections
//!  │   └─ session (SessionActor)      one per connected user: owns its connections' queues
//!  └─ calendars (CalendarSupervisor)  forwards commands, stops idle calendar actors
//!      └─ calendar (CalendarActor)    one per active calendar: its single writer
//! ```
//!
//! The HTTP edge talks to actors through [`ask`]: a typed command carrying an
//! `RpcReplyPort<Result<T, AppError>>`. Domain errors travel back in that port; an actor
//! fails (returns `Err` or panics) only when its own state is broken, and then its supervisor
//! counts the failure and restarts it. A caller whose actor died or did not answer within the
//! configured timeout gets [`AppError::Unavailable`] (503), never a hang.

pub mod announcer;
pub mod calendar;
pub mod calendars;
mod event_homes;
pub mod keyed;
pub mod mailer;
pub mod provider_sync;
pub mod providers;
pub mod push_dispatcher;
pub mod root;
pub mod scheduler;
pub mod session;
pub mod sessions;
mod shared;
pub mod supervision;

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use ractor::{ActorRef, Message, RpcReplyPort};

use crate::error::AppError;
use crate::metrics::Metrics;

pub use event_homes::EventHomes;
pub use shared::Shared;
pub use supervision::SupervisionStats;

/// The kinds of actor, used as the `actor` label of the `svc_actor_*` metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActorKind {
    /// The root supervisor.
    Root,
    /// The periodic-task scheduler.
    Scheduler,
    /// The mailer.
    Mailer,
    /// The registry of stream sessions.
    SessionRegistry,
    /// A user's stream session.
    Session,
    /// The supervisor of calendar actors.
    CalendarSupervisor,
    /// A calendar's actor.
    Calendar,
    /// The supervisor of provider-sync actors.
    ProviderSupervisor,
    /// A connected account's sync actor.
    ProviderSync,
    /// The reminder push dispatcher.
    PushDispatcher,
}

impl ActorKind {
    /// Every kind (their series are exported at zero from start-up).
    pub const ALL: [Self; 10] = [
        Self::Root,
        Self::Scheduler,
        Self::Mailer,
        Self::SessionRegistry,
        Self::Session,
        Self::CalendarSupervisor,
        Self::Calendar,
        Self::ProviderSupervisor,
        Self::ProviderSync,
        Self::PushDispatcher,
    ];

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Root => "root",
            Self::Scheduler => "scheduler",
            Self::Mailer => "mailer",
            Self::SessionRegistry => "session_registry",
            Self::Session => "session",
            Self::CalendarSupervisor => "calendar_supervisor",
            Self::Calendar => "calendar",
            Self::ProviderSupervisor => "provider_supervisor",
            Self::ProviderSync => "provider_sync",
            Self::PushDispatcher => "push_dispatcher",
        }
    }
}

/// The current reference to a supervised child; empty while it is down or restarting.
#[derive(Debug)]
pub struct ChildSlot<M>(Arc<RwLock<Option<ActorRef<M>>>>);

impl<M> Clone for ChildSlot<M> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<M> Default for ChildSlot<M> {
    fn default() -> Self {
        Self(Arc::new(RwLock::new(None)))
    }
}

impl<M> ChildSlot<M> {
    /// The live actor, if any.
    pub fn get(&self) -> Option<ActorRef<M>> {
        self.0.read().clone()
    }

    pub(crate) fn set(&self, actor: Option<ActorRef<M>>) {
        *self.0.write() = actor;
    }
}

/// Handles to a server's supervised actors, filled in by the root supervisor.
#[derive(Debug, Default)]
pub struct Actors {
    /// The root supervisor.
    pub root: ChildSlot<root::RootMsg>,
    /// The scheduler.
    pub scheduler: ChildSlot<scheduler::SchedulerMsg>,
    /// The mailer.
    pub mailer: ChildSlot<mailer::MailerMsg>,
    /// Stream sessions: attach through the registry, broadcast directly.
    pub sessions: sessions::Sessions,
    /// Calendar actors, reached through their supervisor.
    pub calendars: calendars::Calendars,
    /// Provider-sync actors, reached through their supervisor.
    pub providers: providers::Providers,
    /// Restart and failure counts, observable without scraping metrics.
    pub stats: SupervisionStats,
}

/// Sends a command built by `build` to `actor` and waits up to `timeout` for its reply
/// ([`await_reply`]).
pub async fn ask<M, T>(
    actor: &ActorRef<M>,
    kind: ActorKind,
    timeout: Duration,
    build: impl FnOnce(RpcReplyPort<Result<T, AppError>>) -> M,
) -> Result<T, AppError>
where
    M: Message,
    T: Send + 'static,
{
    let (port, answer) = ractor::concurrency::oneshot();
    if actor.send_message(build(port.into())).is_err() {
        tracing::warn!(actor = kind.label(), "actor.call.unavailable");
        return Err(AppError::Unavailable(
            format!("{} is not running", kind.label()).into(),
        ));
    }
    await_reply(answer, kind, timeout).await
}

/// The one wait for an actor's answer: up to `timeout` (the configured call timeout); a
/// reply port dropped by a failing actor, or no answer in time, is
/// [`AppError::Unavailable`] (503), logged once.
pub async fn await_reply<T>(
    answer: ractor::concurrency::OneshotReceiver<Result<T, AppError>>,
    kind: ActorKind,
    timeout: Duration,
) -> Result<T, AppError> {
    match tokio::time::timeout(timeout, answer).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => {
            tracing::warn!(actor = kind.label(), "actor.call.unavailable");
            Err(AppError::Unavailable(
                format!("{} failed", kind.label()).into(),
            ))
        }
        Err(_) => {
            tracing::warn!(actor = kind.label(), "actor.call.timeout");
            Err(AppError::Unavailable(
                format!("{} did not answer in time", kind.label()).into(),
            ))
        }
    }
}

/// Asks the actor in `slot`, or answers 503 at once if it is down.
pub async fn ask_slot<M, T>(
    slot: &ChildSlot<M>,
    kind: ActorKind,
    timeout: Duration,
    build: impl FnOnce(RpcReplyPort<Result<T, AppError>>) -> M,
) -> Result<T, AppError>
where
    M: Message,
    T: Send + 'static,
{
    let actor = slot
        .get()
        .ok_or_else(|| AppError::Unavailable(format!("{} is restarting", kind.label()).into()))?;
    ask(&actor, kind, timeout, build).await
}

impl Actors {
    /// Queues `mail` for sending (retried on transient failures); logs if the mailer is down.
    pub fn send_mail(&self, mail: crate::mail::Mail) {
        let kind = mail.kind;
        let sent = self.mailer.get().is_some_and(|mailer| {
            mailer
                .send_message(mailer::MailerMsg::Send {
                    mail,
                    sent: Instant::now(),
                })
                .is_ok()
        });
        if !sent {
            tracing::error!(kind, "mail.not_queued");
        }
    }

    /// Tells the mailer a notification batch is due at `due_at` (after the rows committed;
    /// if the mailer is down, it finds them in the database when it restarts).
    pub fn notify_batch(&self, due_at: chrono::DateTime<chrono::Utc>) {
        if let Some(mailer) = self.mailer.get() {
            let _ = mailer.send_message(mailer::MailerMsg::BatchQueued {
                due_at,
                sent: Instant::now(),
            });
        }
    }
}

/// Sends a reply, ignoring a caller that has gone away (not an error for the actor).
pub fn reply<T>(port: RpcReplyPort<T>, value: T) {
    if port.send(value).is_err() {
        tracing::debug!("actor.reply.caller_gone");
    }
}

/// Records `svc_actor_message_duration_seconds` for one message when dropped.
pub struct MessageTimer {
    metrics: Arc<Metrics>,
    kind: ActorKind,
    started: Instant,
}

impl MessageTimer {
    /// Starts timing a message handled by an actor of `kind`.
    pub fn start(metrics: &Arc<Metrics>, kind: ActorKind) -> Self {
        Self {
            metrics: metrics.clone(),
            kind,
            started: Instant::now(),
        }
    }
}

impl Drop for MessageTimer {
    fn drop(&mut self) {
        self.metrics
            .actor_message(self.kind.label(), self.started.elapsed());
    }
}
