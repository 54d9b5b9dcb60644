//! [`RootActor`]: the top of the tree. It spawns the long-lived children linked to itself,
//! restarts a failed child after a backoff within its restart budget, keeps the child's
//! [`ChildSlot`](super::ChildSlot) pointing at the live instance, and escalates (shuts the
//! server down with an error) when a child exhausts its budget. On stop it stops its
//! children and waits for them.

use super::Shared;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};

use super::calendars::CalendarSupervisor;
use super::mailer::MailerActor;
use super::providers::ProviderSupervisor;
use super::push_dispatcher::PushDispatcherActor;
use super::scheduler::{SchedulerActor, SchedulerArgs, TaskSpec};
use super::sessions::SessionRegistryActor;
use super::supervision::{RestartBudget, RestartPolicy};
use super::{ActorKind, MessageTimer};

/// The root supervisor.
#[derive(Debug)]
pub struct RootActor;

/// What the root needs to (re)build its children.
pub struct RootArgs {
    /// What the server's actors share.
    pub shared: Arc<Shared>,
    /// The scheduler's tasks; shared across restarts so "still running" survives them.
    pub tasks: Arc<[TaskSpec]>,
}

/// Messages to the root.
#[derive(Debug)]
pub enum RootMsg {
    /// Respawn a child whose backoff has elapsed.
    Restart {
        /// Which child.
        kind: ActorKind,
    },
}

/// The root's state.
pub struct RootState {
    shared: Arc<Shared>,
    tasks: Arc<[TaskSpec]>,
    policy: RestartPolicy,
    children: HashMap<ActorId, ActorKind>,
    budgets: HashMap<ActorKind, RestartBudget>,
}

/// The root's children, in start order.
const CHILDREN: [ActorKind; 6] = [
    ActorKind::Mailer,
    ActorKind::SessionRegistry,
    ActorKind::CalendarSupervisor,
    ActorKind::ProviderSupervisor,
    ActorKind::Scheduler,
    ActorKind::PushDispatcher,
];

/// How long the root waits for its children to stop.
const STOP_CHILDREN_TIMEOUT: Duration = Duration::from_secs(10);

impl RootActor {
    /// Spawns `kind` linked to the root and records it.
    async fn spawn_child(
        myself: &ActorRef<RootMsg>,
        state: &mut RootState,
        kind: ActorKind,
        initial: bool,
    ) -> Result<(), ActorProcessingErr> {
        let shared = state.shared.clone();
        let cell = myself.get_cell();
        let actors = &shared.actors;
        let spawned = match kind {
            ActorKind::Scheduler => {
                let args = SchedulerArgs {
                    shared: shared.clone(),
                    tasks: state.tasks.clone(),
                    initial,
                };
                let (actor, _) = Actor::spawn_linked(None, SchedulerActor, args, cell).await?;
                actors.scheduler.set(Some(actor.clone()));
                actor.get_cell()
            }
            ActorKind::Mailer => {
                let (actor, _) =
                    Actor::spawn_linked(None, MailerActor, shared.clone(), cell).await?;
                actors.mailer.set(Some(actor.clone()));
                actor.get_cell()
            }
            ActorKind::SessionRegistry => {
                let (actor, _) =
                    Actor::spawn_linked(None, SessionRegistryActor, shared.clone(), cell).await?;
                actors.sessions.registry.set(Some(actor.clone()));
                actor.get_cell()
            }
            ActorKind::CalendarSupervisor => {
                let (actor, _) =
                    Actor::spawn_linked(None, CalendarSupervisor, shared.clone(), cell).await?;
                actors.calendars.supervisor.set(Some(actor.clone()));
                actor.get_cell()
            }
            ActorKind::ProviderSupervisor => {
                let (actor, _) =
                    Actor::spawn_linked(None, ProviderSupervisor, shared.clone(), cell).await?;
                actors.providers.supervisor.set(Some(actor.clone()));
                actor.get_cell()
            }
            ActorKind::PushDispatcher => {
                let (actor, _) =
                    Actor::spawn_linked(None, PushDispatcherActor, shared.clone(), cell).await?;
                actor.get_cell()
            }
            ActorKind::Root
            | ActorKind::Session
            | ActorKind::Calendar
            | ActorKind::ProviderSync => {
                return Err(format!("{} is not a child of the root", kind.label()).into());
            }
        };
        state.children.insert(spawned.get_id(), kind);
        shared.metrics.actor_alive(kind.label(), 1.0);
        Ok(())
    }

    /// Forgets a child that stopped, clearing its slot.
    fn child_down(state: &mut RootState, kind: ActorKind) {
        state.shared.metrics.actor_alive(kind.label(), -1.0);
        match kind {
            ActorKind::Scheduler => state.shared.actors.scheduler.set(None),
            ActorKind::Mailer => state.shared.actors.mailer.set(None),
            ActorKind::SessionRegistry => state.shared.actors.sessions.registry.set(None),
            ActorKind::CalendarSupervisor => state.shared.actors.calendars.supervisor.set(None),
            ActorKind::ProviderSupervisor => state.shared.actors.providers.supervisor.set(None),
            ActorKind::Root
            | ActorKind::Session
            | ActorKind::Calendar
            | ActorKind::ProviderSync
            | ActorKind::PushDispatcher => {}
        }
    }

    /// Schedules a restart of `kind` after its backoff, or escalates.
    fn schedule_restart(myself: &ActorRef<RootMsg>, state: &mut RootState, kind: ActorKind) {
        let policy = state.policy;
        let budget = state
            .budgets
            .entry(kind)
            .or_insert_with(|| RestartBudget::new(policy));
        match budget.next_delay(Instant::now()) {
            Some(delay) => {
                myself.send_after(delay, move || RootMsg::Restart { kind });
            }
            None => {
                tracing::error!(
                    actor = kind.label(),
                    limit = policy.limit,
                    "actor.restart_budget_exhausted"
                );
                state.shared.shutdown.escalate(format!(
                    "{} failed more than {} times within {} ms",
                    kind.label(),
                    policy.limit,
                    policy.window.as_millis()
                ));
            }
        }
    }
}

impl Actor for RootActor {
    type Msg = RootMsg;
    type State = RootState;
    type Arguments = RootArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let policy = RestartPolicy::from_settings(&args.shared.settings.actors);
        let mut state = RootState {
            shared: args.shared,
            tasks: args.tasks,
            policy,
            children: HashMap::new(),
            budgets: HashMap::new(),
        };
        for kind in CHILDREN {
            Self::spawn_child(&myself, &mut state, kind, true).await?;
        }
        Ok(state)
    }

    async fn post_stop(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        myself
            .stop_children_and_wait(Some("shutdown".into()), Some(STOP_CHILDREN_TIMEOUT))
            .await;
        for kind in std::mem::take(&mut state.children).into_values() {
            Self::child_down(state, kind);
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let shared = state.shared.clone();
        let _timer = MessageTimer::start(&shared.metrics, ActorKind::Root);
        match message {
            RootMsg::Restart { kind } => {
                if shared.shutdown.is_triggered() {
                    return Ok(());
                }
                match Self::spawn_child(&myself, state, kind, false).await {
                    Ok(()) => {
                        shared.metrics.actor_restarted(kind.label());
                        shared.actors.stats.restarted(kind);
                        tracing::info!(actor = kind.label(), "actor.restarted");
                    }
                    Err(err) => {
                        shared.metrics.actor_failed(kind.label());
                        shared.actors.stats.failed(kind);
                        tracing::error!(actor = kind.label(), error = %err, "actor.restart_failed");
                        Self::schedule_restart(&myself, state, kind);
                    }
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
        match event {
            SupervisionEvent::ActorFailed(cell, err) => {
                let Some(kind) = state.children.remove(&cell.get_id()) else {
                    return Ok(());
                };
                Self::child_down(state, kind);
                state.shared.metrics.actor_failed(kind.label());
                state.shared.actors.stats.failed(kind);
                tracing::error!(actor = kind.label(), error = %err, "actor.failed");
                Self::schedule_restart(&myself, state, kind);
            }
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                let Some(kind) = state.children.remove(&cell.get_id()) else {
                    return Ok(());
                };
                Self::child_down(state, kind);
                if !state.shared.shutdown.is_triggered() {
                    tracing::warn!(
                        actor = kind.label(),
                        reason,
                        "actor.terminated_unexpectedly"
                    );
                    Self::schedule_restart(&myself, state, kind);
                }
            }
            _ => {}
        }
        Ok(())
    }
}
