//! [`CalendarSupervisor`]: spawns a [`CalendarActor`](super::calendar::CalendarActor) per
//! calendar on its first command, forwards every command to it, and stops it once it
//! reports being idle with nothing forwarded since. Because every command passes through
//! here, a stop and a new command cannot race: the next command simply spawns a fresh actor.
//!
//! A calendar actor that panics fails alone: its callers get 503, the failure is counted,
//! and a new actor takes its place at once (within a per-calendar restart budget; past it,
//! on the calendar's next command).

use super::Shared;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::watch;
use uuid::Uuid;

use super::calendar::{CalendarActor, CalendarArgs, CalendarMsg};
use super::supervision::{RestartBudget, RestartPolicy};
use super::{ActorKind, ChildSlot, MessageTimer};
use crate::error::AppError;

/// Handle for sending commands to calendar actors.
#[derive(Debug, Default)]
pub struct Calendars {
    /// The supervisor.
    pub supervisor: ChildSlot<CalendarsMsg>,
    live: watch::Sender<usize>,
}

impl Calendars {
    /// Sends a command built by `build` to the calendar's actor and waits (up to `timeout`)
    /// for its answer. A dead actor or a timeout is [`AppError::Unavailable`].
    pub async fn ask<T: Send + 'static>(
        &self,
        timeout: std::time::Duration,
        calendar_id: Uuid,
        build: impl FnOnce(super::calendar::Reply<T>) -> CalendarMsg,
    ) -> Result<T, AppError> {
        let supervisor = self
            .supervisor
            .get()
            .ok_or_else(|| AppError::Unavailable("calendar supervisor is restarting".into()))?;
        let (port, answer) = ractor::concurrency::oneshot();
        supervisor
            .send_message(CalendarsMsg::Forward {
                calendar_id,
                message: Box::new(build(port.into())),
                sent: Instant::now(),
            })
            .map_err(|_| AppError::Unavailable("calendar supervisor is not running".into()))?;
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => {
                tracing::warn!(calendar = %calendar_id, "actor.call.unavailable");
                Err(AppError::Unavailable("calendar actor failed".into()))
            }
            Err(_) => {
                tracing::warn!(calendar = %calendar_id, "actor.call.timeout");
                Err(AppError::Unavailable(
                    "calendar actor did not answer in time".into(),
                ))
            }
        }
    }

    /// How many calendar actors are alive, to wait on.
    pub fn live(&self) -> watch::Receiver<usize> {
        self.live.subscribe()
    }
}

/// Messages to the supervisor.
#[derive(Debug)]
pub enum CalendarsMsg {
    /// A command for a calendar.
    Forward {
        /// The calendar.
        calendar_id: Uuid,
        /// The command (boxed: commands carry whole events).
        message: Box<CalendarMsg>,
        /// When it was sent (`svc_actor_mailbox_wait_seconds`).
        sent: Instant,
    },
    /// A calendar actor has handled `handled` commands and nothing since.
    Idle {
        /// The calendar.
        calendar_id: Uuid,
        /// Its count.
        handled: u64,
    },
}

/// The supervisor of calendar actors.
#[derive(Debug)]
pub struct CalendarSupervisor;

struct Entry {
    actor: ActorRef<CalendarMsg>,
    forwarded: u64,
}

/// The supervisor's state.
pub struct SupervisorState {
    shared: Arc<Shared>,
    entries: HashMap<Uuid, Entry>,
    by_actor: HashMap<ActorId, Uuid>,
    budgets: HashMap<Uuid, RestartBudget>,
    policy: RestartPolicy,
}

impl SupervisorState {
    fn publish_live(&self) {
        self.shared
            .actors
            .calendars
            .live
            .send_replace(self.by_actor.len());
    }
}

impl CalendarSupervisor {
    async fn spawn(
        myself: &ActorRef<CalendarsMsg>,
        state: &mut SupervisorState,
        calendar_id: Uuid,
    ) -> Result<ActorRef<CalendarMsg>, ActorProcessingErr> {
        let args = CalendarArgs {
            shared: state.shared.clone(),
            calendar_id,
            supervisor: myself.clone(),
        };
        let (actor, _) = Actor::spawn_linked(None, CalendarActor, args, myself.get_cell()).await?;
        state.by_actor.insert(actor.get_id(), calendar_id);
        state.entries.insert(
            calendar_id,
            Entry {
                actor: actor.clone(),
                forwarded: 0,
            },
        );
        state
            .shared
            .metrics
            .actor_alive(ActorKind::Calendar.label(), 1.0);
        state.publish_live();
        Ok(actor)
    }
}

impl Actor for CalendarSupervisor {
    type Msg = CalendarsMsg;
    type State = SupervisorState;
    type Arguments = Arc<Shared>;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        shared: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let policy = RestartPolicy::from_settings(&shared.settings.actors);
        Ok(SupervisorState {
            shared,
            entries: HashMap::new(),
            by_actor: HashMap::new(),
            budgets: HashMap::new(),
            policy,
        })
    }

    async fn post_stop(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        myself
            .stop_children_and_wait(None, Some(std::time::Duration::from_secs(10)))
            .await;
        for _ in state.by_actor.drain() {
            state
                .shared
                .metrics
                .actor_alive(ActorKind::Calendar.label(), -1.0);
        }
        state.entries.clear();
        state.publish_live();
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let shared = state.shared.clone();
        let _timer = MessageTimer::start(&shared.metrics, ActorKind::CalendarSupervisor);
        match message {
            CalendarsMsg::Forward {
                calendar_id,
                message,
                sent,
            } => {
                shared
                    .metrics
                    .actor_mailbox_wait(ActorKind::CalendarSupervisor.label(), sent);
                let actor = match state.entries.get(&calendar_id) {
                    Some(entry) => entry.actor.clone(),
                    None => match Self::spawn(&myself, state, calendar_id).await {
                        Ok(actor) => actor,
                        Err(err) => {
                            // The command's reply port is dropped: its caller gets 503.
                            tracing::error!(calendar = %calendar_id, error = %err, "actor.spawn_failed");
                            return Ok(());
                        }
                    },
                };
                if let Some(entry) = state.entries.get_mut(&calendar_id) {
                    entry.forwarded += 1;
                }
                let forwarded = CalendarMsg::Forwarded {
                    message,
                    sent: Instant::now(),
                };
                if let Err(err) = actor.send_message(forwarded) {
                    tracing::warn!(calendar = %calendar_id, error = %err, "calendar.forward_failed");
                }
            }
            CalendarsMsg::Idle {
                calendar_id,
                handled,
            } => {
                let idle = state
                    .entries
                    .get(&calendar_id)
                    .is_some_and(|entry| entry.forwarded == handled);
                if idle && let Some(entry) = state.entries.remove(&calendar_id) {
                    entry.actor.stop(Some("idle".into()));
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, failure) = match event {
            SupervisionEvent::ActorFailed(cell, err) => (cell, Some(err)),
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell, None),
            _ => return Ok(()),
        };
        let Some(calendar_id) = state.by_actor.remove(&cell.get_id()) else {
            return Ok(());
        };
        state
            .shared
            .metrics
            .actor_alive(ActorKind::Calendar.label(), -1.0);
        let current = state
            .entries
            .get(&calendar_id)
            .is_some_and(|entry| entry.actor.get_id() == cell.get_id());
        if current {
            state.entries.remove(&calendar_id);
        }
        state.publish_live();
        let Some(err) = failure else {
            return Ok(());
        };
        let kind = ActorKind::Calendar;
        state.shared.metrics.actor_failed(kind.label());
        state.shared.actors.stats.failed(kind);
        tracing::error!(calendar = %calendar_id, error = %err, "actor.failed");
        let policy = state.policy;
        let allowed = state
            .budgets
            .entry(calendar_id)
            .or_insert_with(|| RestartBudget::new(policy))
            .next_delay(Instant::now())
            .is_some();
        if allowed && current && !state.shared.shutdown.is_triggered() {
            if Self::spawn(&myself, state, calendar_id).await.is_ok() {
                state.shared.metrics.actor_restarted(kind.label());
                state.shared.actors.stats.restarted(kind);
            }
        } else if !allowed {
            tracing::error!(calendar = %calendar_id, "actor.restart_budget_exhausted");
        }
        Ok(())
    }
}
