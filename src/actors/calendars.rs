//! [`CalendarSupervisor`]: spawns a [`CalendarActor`](super::calendar::CalendarActor) per
//! calendar on its first command, forwards every command to it, and stops it once it
//! reports being idle with nothing forwarded since. Because every command passes through
//! here, a stop and a new command cannot race: the next command simply spawns a fresh actor.
//!
//! A calendar actor that panics fails alone: its callers get 503, the failure is counted,
//! and a new actor takes its place at once (within a per-calendar restart budget; past it,
//! on the calendar's next command).

use super::Shared;
use std::sync::Arc;
use std::time::Instant;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::watch;

use super::calendar::{CalendarActor, CalendarArgs, CalendarMsg};
use super::keyed::KeyedChildren;
use super::{ActorKind, ChildSlot, MessageTimer, await_reply};
use crate::domain::ids::CalendarId;
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
        calendar_id: CalendarId,
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
        await_reply(answer, ActorKind::Calendar, timeout).await
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
        calendar_id: CalendarId,
        /// The command (boxed: commands carry whole events).
        message: Box<CalendarMsg>,
        /// When it was sent (`svc_actor_mailbox_wait_seconds`).
        sent: Instant,
    },
    /// A calendar actor has handled `handled` commands and nothing since.
    Idle {
        /// The calendar.
        calendar_id: CalendarId,
        /// Its count.
        handled: u64,
    },
}

/// The supervisor of calendar actors.
#[derive(Debug)]
pub struct CalendarSupervisor;

/// The supervisor's state.
pub struct SupervisorState {
    shared: Arc<Shared>,
    children: KeyedChildren<CalendarId, CalendarMsg>,
}

impl SupervisorState {
    fn publish_live(&self) {
        self.shared
            .actors
            .calendars
            .live
            .send_replace(self.children.live());
    }
}

impl CalendarSupervisor {
    async fn spawn(
        myself: &ActorRef<CalendarsMsg>,
        state: &mut SupervisorState,
        calendar_id: CalendarId,
    ) -> Result<ActorRef<CalendarMsg>, ActorProcessingErr> {
        let args = CalendarArgs {
            shared: state.shared.clone(),
            calendar_id,
            supervisor: myself.clone(),
        };
        let (actor, _) = Actor::spawn_linked(None, CalendarActor, args, myself.get_cell()).await?;
        state.children.started(calendar_id, actor.clone());
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
        Ok(SupervisorState {
            children: KeyedChildren::new(ActorKind::Calendar, shared.clone()),
            shared,
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
        state.children.clear();
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
                let actor = match state.children.get(&calendar_id) {
                    Some(child) => child.actor.clone(),
                    None => match Self::spawn(&myself, state, calendar_id).await {
                        Ok(actor) => actor,
                        Err(err) => {
                            // The command's reply port is dropped: its caller gets 503.
                            tracing::error!(calendar = %calendar_id, error = %err, "actor.spawn_failed");
                            return Ok(());
                        }
                    },
                };
                if let Some(child) = state.children.get_mut(&calendar_id) {
                    child.forwarded += 1;
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
                    .children
                    .get(&calendar_id)
                    .is_some_and(|child| child.forwarded == handled);
                if idle && let Some(child) = state.children.take(&calendar_id) {
                    child.actor.stop(Some("idle".into()));
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
        let Some(ended) = state.children.ended(&event) else {
            return Ok(());
        };
        state.publish_live();
        if ended.restart && Self::spawn(&myself, state, ended.key).await.is_ok() {
            state.children.restarted();
        }
        Ok(())
    }
}
