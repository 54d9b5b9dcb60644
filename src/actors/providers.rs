//! [`ProviderSupervisor`]: starts a [`ProviderSyncActor`](super::provider_sync) for every
//! connected account (at start, and when an account connects), forwards sync requests to
//! them, and restarts one that fails within its own restart budget, counting the failure
//! and the restart like every supervisor. Other accounts' actors go on untouched.
//!
//! With several instances on one database it also looks for accounts connected through
//! another instance every quarter of `PROVIDER_LEASE_MS`, so that their actors stand by here
//! and can take them over (see [`super::provider_sync`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};

use super::provider_sync::{ProviderSyncActor, ProviderSyncArgs, ProviderSyncMsg};
use super::supervision::{RestartBudget, RestartPolicy};
use super::{ActorKind, ChildSlot, MessageTimer, Shared, reply};
use crate::domain::providers::AccountKey;
use crate::error::AppError;
use crate::store::outbox;

/// How often the outbox gauges are refreshed.
const OUTBOX_GAUGE_PERIOD: std::time::Duration = std::time::Duration::from_secs(5);

/// Messages to the provider supervisor.
#[derive(Debug)]
pub enum ProvidersMsg {
    /// An account connected (or reconnected): make sure its actor runs and delivers what
    /// waited for it; with `pull`, it pulls at once too.
    Start {
        /// The account.
        account: AccountKey,
        /// Pull now as well.
        pull: bool,
    },
    /// An account was removed: stop its actor.
    Stop {
        /// The account.
        account: AccountKey,
    },
    /// Rows were queued for an account's outbox.
    Deliver {
        /// The account.
        account: AccountKey,
    },
    /// Sync these accounts now; answers once each has finished (the first failure, if any).
    SyncNow {
        /// The accounts.
        accounts: Vec<AccountKey>,
        /// Where the answer goes.
        reply: RpcReplyPort<Result<(), AppError>>,
    },
    /// Refresh the outbox gauges (`svc_outbox_pending`, `svc_outbox_oldest_age_seconds`).
    MeasureOutbox,
    /// Start actors for accounts connected through another instance.
    Discover,
    /// Make an account's actor panic (tests of supervision).
    #[cfg(feature = "fault-injection")]
    Panic {
        /// The account.
        account: AccountKey,
    },
}

/// Handle for the provider supervisor.
#[derive(Debug, Default)]
pub struct Providers {
    /// The supervisor.
    pub supervisor: ChildSlot<ProvidersMsg>,
}

impl Providers {
    /// Tells the supervisor something about an account (ignored while it restarts: it
    /// starts every account's actor when it comes back).
    pub fn tell(&self, message: ProvidersMsg) {
        if let Some(supervisor) = self.supervisor.get() {
            let _ = supervisor.send_message(message);
        }
    }
}

/// The provider supervisor.
#[derive(Debug)]
pub struct ProviderSupervisor;

/// Its state.
pub struct ProvidersState {
    shared: Arc<Shared>,
    running: HashMap<AccountKey, ActorRef<ProviderSyncMsg>>,
    by_actor: HashMap<ActorId, AccountKey>,
    budgets: HashMap<AccountKey, RestartBudget>,
    policy: RestartPolicy,
}

impl ProviderSupervisor {
    async fn start(
        myself: &ActorRef<ProvidersMsg>,
        state: &mut ProvidersState,
        account: &AccountKey,
    ) -> Option<ActorRef<ProviderSyncMsg>> {
        if let Some(actor) = state.running.get(account) {
            return Some(actor.clone());
        }
        let args = ProviderSyncArgs {
            shared: state.shared.clone(),
            account: account.clone(),
        };
        match Actor::spawn_linked(None, ProviderSyncActor, args, myself.get_cell()).await {
            Ok((actor, _)) => {
                state.by_actor.insert(actor.get_id(), account.clone());
                state.running.insert(account.clone(), actor.clone());
                state
                    .shared
                    .metrics
                    .actor_alive(ActorKind::ProviderSync.label(), 1.0);
                Some(actor)
            }
            Err(err) => {
                tracing::error!(error = %err, "actor.spawn_failed");
                None
            }
        }
    }
}

impl Actor for ProviderSupervisor {
    type Msg = ProvidersMsg;
    type State = ProvidersState;
    type Arguments = Arc<Shared>;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        shared: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let policy = RestartPolicy::from_settings(&shared.settings.actors);
        let mut state = ProvidersState {
            shared,
            running: HashMap::new(),
            by_actor: HashMap::new(),
            budgets: HashMap::new(),
            policy,
        };
        myself.send_interval(OUTBOX_GAUGE_PERIOD, || ProvidersMsg::MeasureOutbox);
        if state.shared.db.crosses_instances() {
            let period =
                std::time::Duration::from_millis(state.shared.settings.caldav.provider_lease_ms)
                    / 4;
            myself.send_interval(period, || ProvidersMsg::Discover);
        }
        let accounts = state.shared.mirrors.all_accounts().await?;
        for account in &accounts {
            Self::start(&myself, &mut state, account).await;
        }
        Ok(state)
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
                .actor_alive(ActorKind::ProviderSync.label(), -1.0);
        }
        state.running.clear();
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let _timer = MessageTimer::start(&state.shared.metrics, ActorKind::ProviderSupervisor);
        match message {
            ProvidersMsg::Start { account, pull } => {
                // A reconnected account's held writes go out now.
                if let Some(actor) = Self::start(&myself, state, &account).await {
                    let message = if pull {
                        ProviderSyncMsg::Pull
                    } else {
                        ProviderSyncMsg::Deliver
                    };
                    let _ = actor.send_message(message);
                }
            }
            ProvidersMsg::Stop { account } => {
                if let Some(actor) = state.running.remove(&account) {
                    actor.stop(Some("account removed".into()));
                }
            }
            ProvidersMsg::Deliver { account } => {
                if let Some(actor) = Self::start(&myself, state, &account).await {
                    let _ = actor.send_message(ProviderSyncMsg::Deliver);
                }
            }
            ProvidersMsg::SyncNow {
                accounts,
                reply: port,
            } => {
                let mut waits = Vec::new();
                for account in &accounts {
                    if let Some(actor) = Self::start(&myself, state, account).await {
                        let (tx, rx) = ractor::concurrency::oneshot();
                        if actor
                            .send_message(ProviderSyncMsg::SyncNow(tx.into()))
                            .is_ok()
                        {
                            waits.push(rx);
                        }
                    }
                }
                // The answer waits for the accounts without holding up this supervisor.
                tokio::spawn(async move {
                    let mut outcome = Ok(());
                    for wait in waits {
                        let result = wait.await.unwrap_or_else(|_| {
                            Err(AppError::Unavailable("the sync actor failed".into()))
                        });
                        if outcome.is_ok() {
                            outcome = result;
                        }
                    }
                    reply(port, outcome);
                });
            }
            ProvidersMsg::Discover => match state.shared.mirrors.all_accounts().await {
                Ok(accounts) => {
                    for account in &accounts {
                        Self::start(&myself, state, account).await;
                    }
                }
                Err(err) => tracing::warn!(error = %err, "sync.discover.failed"),
            },
            ProvidersMsg::MeasureOutbox => {
                let depth = outbox::outbox_depth(state.shared.db.conn()).await?;
                let now = chrono::Utc::now();
                for provider in crate::metrics::SYNC_PROVIDERS {
                    let (pending, oldest) = depth
                        .iter()
                        .find(|(name, _, _)| name == provider)
                        .map_or((0, None), |(_, pending, oldest)| (*pending, *oldest));
                    let age = oldest.map_or(0.0, |oldest| {
                        (now - oldest).num_milliseconds().max(0) as f64 / 1000.0
                    });
                    state.shared.metrics.outbox(provider, pending, age);
                }
            }
            #[cfg(feature = "fault-injection")]
            ProvidersMsg::Panic { account } => {
                if let Some(actor) = state.running.get(&account) {
                    let _ = actor.send_message(ProviderSyncMsg::Panic);
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
        let Some(account) = state.by_actor.remove(&cell.get_id()) else {
            return Ok(());
        };
        state
            .shared
            .metrics
            .actor_alive(ActorKind::ProviderSync.label(), -1.0);
        let current = state
            .running
            .get(&account)
            .is_some_and(|actor| actor.get_id() == cell.get_id());
        if current {
            state.running.remove(&account);
        }
        let Some(err) = failure else {
            return Ok(());
        };
        let kind = ActorKind::ProviderSync;
        state.shared.metrics.actor_failed(kind.label());
        state.shared.actors.stats.failed(kind);
        tracing::error!(error = %err, "actor.failed");
        let policy = state.policy;
        let allowed = state
            .budgets
            .entry(account.clone())
            .or_insert_with(|| RestartBudget::new(policy))
            .next_delay(Instant::now())
            .is_some();
        if allowed && current && !state.shared.shutdown.is_triggered() {
            if Self::start(&myself, state, &account).await.is_some() {
                state.shared.metrics.actor_restarted(kind.label());
                state.shared.actors.stats.restarted(kind);
            }
        } else if !allowed {
            tracing::error!("actor.restart_budget_exhausted");
        }
        Ok(())
    }
}
