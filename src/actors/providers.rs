//! [`ProviderSupervisor`]: starts a [`ProviderSyncActor`](super::provider_sync) for every
//! connected account (at start, and when an account connects), forwards sync requests to
//! them, and restarts one that fails within its own restart budget, counting the failure
//! and the restart like every supervisor. Other accounts' actors go on untouched.
//!
//! With several instances on one database it also looks for accounts connected through
//! another instance every quarter of `PROVIDER_LEASE_MS`, so that their actors stand by here
//! and can take them over (see [`super::provider_sync`]).

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};

use super::keyed::KeyedChildren;
use super::provider_sync::{ProviderSyncActor, ProviderSyncArgs, ProviderSyncMsg};
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
    children: KeyedChildren<AccountKey, ProviderSyncMsg>,
}

impl ProviderSupervisor {
    async fn start(
        myself: &ActorRef<ProvidersMsg>,
        state: &mut ProvidersState,
        account: &AccountKey,
    ) -> Option<ActorRef<ProviderSyncMsg>> {
        if let Some(child) = state.children.get(account) {
            return Some(child.actor.clone());
        }
        let args = ProviderSyncArgs {
            shared: state.shared.clone(),
            account: account.clone(),
        };
        match Actor::spawn_linked(None, ProviderSyncActor, args, myself.get_cell()).await {
            Ok((actor, _)) => {
                state.children.started(account.clone(), actor.clone());
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
        let mut state = ProvidersState {
            children: KeyedChildren::new(ActorKind::ProviderSync, shared.clone()),
            shared,
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
        state.children.clear();
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
                if let Some(child) = state.children.take(&account) {
                    child.actor.stop(Some("account removed".into()));
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
                let depth = outbox::outbox_depth(&state.shared.db).await?;
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
                if let Some(child) = state.children.get(&account) {
                    let _ = child.actor.send_message(ProviderSyncMsg::Panic);
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
        if ended.restart && Self::start(&myself, state, &ended.key).await.is_some() {
            state.children.restarted();
        }
        Ok(())
    }
}
