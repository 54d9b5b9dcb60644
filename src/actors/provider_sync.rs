//! [`ProviderSyncActor`]: one per connected account (CalDAV, Google or Microsoft). It owns
//! its account's work: on each tick of `EXTERNAL_SYNC_INTERVAL_MS`, and when asked to sync
//! now, it first delivers the account's due outbox rows, then pulls the account's calendars
//! ([`crate::commands::mirrors::sync::turn`]). Outbox rows that failed are retried when due
//! (the actor sets a timer for the earliest one). A tick that arrives while a run is still
//! going (a slow provider) is skipped and counted; when the provider asked to be left alone
//! (a rate limit, on a delivery or a pull), nothing goes to it until then and the actor comes
//! back when the wait is over, answering other messages meanwhile. Failures are counted and
//! logged, never kept: the next tick tries again. A crash of this actor touches no other
//! account (see [`super::providers`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::{ActorKind, MessageTimer, Shared, reply};
use crate::commands::mirrors::sync::turn;
use crate::domain::providers::AccountKey;
use crate::error::AppError;

/// The task name of skipped ticks (`svc_scheduled_task_skips_total{task}`).
pub const SYNC_TASK: &str = "external_sync";

/// An account's sync actor.
#[derive(Debug)]
pub struct ProviderSyncActor;

/// What it needs.
pub struct ProviderSyncArgs {
    /// What the server's actors share.
    pub shared: Arc<Shared>,
    /// The account.
    pub account: AccountKey,
}

/// Messages to an account's actor.
#[derive(Debug)]
pub enum ProviderSyncMsg {
    /// The pull timer.
    Tick {
        /// When the timer fired.
        at: Instant,
    },
    /// Deliver what is due in the outbox (after a commit queued rows, or a retry's time).
    Deliver,
    /// Deliver and pull now, answering nobody (an account just linked).
    Pull,
    /// Deliver and pull now; answer when done.
    SyncNow(RpcReplyPort<Result<(), AppError>>),
    /// Panic (tests of supervision).
    #[cfg(feature = "fault-injection")]
    Panic,
}

/// The actor's state.
pub struct ProviderSyncState {
    shared: Arc<Shared>,
    account: AccountKey,
    last_finished: Option<Instant>,
    /// Nothing goes to the provider before this (it asked to be left alone).
    quiet_until: Option<Instant>,
}

impl ProviderSyncState {
    /// Delivers the outbox, then pulls (`pull`); sets the timer for the next due outbox row.
    /// While the provider asked to be left alone, it does neither and comes back when the
    /// wait is over.
    async fn run(
        &mut self,
        myself: &ActorRef<ProviderSyncMsg>,
        pull: bool,
    ) -> Result<(), AppError> {
        let now = Instant::now();
        if let Some(until) = self.quiet_until.filter(|until| now < *until) {
            tracing::info!(provider = %self.account.provider, "sync.deferred");
            myself.send_after(until - now, move || {
                if pull {
                    ProviderSyncMsg::Pull
                } else {
                    ProviderSyncMsg::Deliver
                }
            });
            self.last_finished = Some(Instant::now());
            return Ok(());
        }
        let done = turn(&self.shared.mirrors, &self.account, pull).await;
        self.last_finished = Some(Instant::now());
        let done = done?;
        if done.gone {
            myself.stop(Some("account disconnected".into()));
            return Ok(());
        }
        self.quiet_until = done.wait.map(|wait| Instant::now() + wait);
        if let Some(due) = done.next_due {
            let wait = (due - chrono::Utc::now()).to_std().unwrap_or_default();
            myself.send_after(wait.max(Duration::from_millis(50)), || {
                ProviderSyncMsg::Deliver
            });
        }
        done.outcome
    }
}

impl Actor for ProviderSyncActor {
    type Msg = ProviderSyncMsg;
    type State = ProviderSyncState;
    type Arguments = ProviderSyncArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let interval = args.shared.settings.caldav.sync_interval_ms;
        if interval > 0 {
            myself.send_interval(Duration::from_millis(interval), || ProviderSyncMsg::Tick {
                at: Instant::now(),
            });
        }
        // Rows left by an earlier run (or another process) are delivered at once.
        myself.send_message(ProviderSyncMsg::Deliver)?;
        Ok(ProviderSyncState {
            shared: args.shared,
            account: args.account,
            last_finished: None,
            quiet_until: None,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let _timer = MessageTimer::start(&state.shared.metrics, ActorKind::ProviderSync);
        match message {
            ProviderSyncMsg::Tick { at } => {
                // The tick fired while the previous run was still going.
                if state.last_finished.is_some_and(|finished| at < finished) {
                    state.shared.metrics.task_skipped(SYNC_TASK);
                    tracing::warn!(reason = "previous_run_active", "sync.scheduler.skipped");
                    return Ok(());
                }
                let _ = state.run(&myself, true).await;
            }
            ProviderSyncMsg::Deliver => {
                let _ = state.run(&myself, false).await;
            }
            ProviderSyncMsg::Pull => {
                let _ = state.run(&myself, true).await;
            }
            ProviderSyncMsg::SyncNow(port) => {
                let outcome = state.run(&myself, true).await;
                reply(port, outcome);
            }
            #[cfg(feature = "fault-injection")]
            ProviderSyncMsg::Panic => {
                panic!("fault injected into the sync actor of {}", state.account.id);
            }
        }
        Ok(())
    }
}
