//! [`ProviderSyncActor`]: one per connected account. It owns its account's work: on each
//! tick of `EXTERNAL_SYNC_INTERVAL_MS`, and when asked to sync now, it first delivers the
//! account's due outbox rows, then pulls the account's calendars. Outbox rows that failed
//! are retried when due (the actor sets a timer for the earliest one). A tick that arrives
//! while a run is still going (a slow server) is skipped and counted. Failures are counted
//! and logged, never kept: the next tick tries again. A crash of this actor touches no
//! other account (see [`super::providers`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use uuid::Uuid;

use super::{ActorKind, MessageTimer, Shared, reply};
use crate::commands::mirrors::deliver::{deliver_caldav, next_due};
use crate::commands::mirrors::pull::{PullError, pull_caldav};
use crate::error::AppError;
use crate::store::caldav_accounts as account_store;

/// The task name of skipped ticks (`svc_scheduled_task_skips_total{task}`).
pub const SYNC_TASK: &str = "external_sync";

/// An account's sync actor.
#[derive(Debug)]
pub struct ProviderSyncActor;

/// What it needs.
pub struct ProviderSyncArgs {
    /// What the server's actors share.
    pub shared: Arc<Shared>,
    /// The CalDAV account.
    pub account_id: Uuid,
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
    /// Deliver and pull now; answer when done.
    SyncNow(RpcReplyPort<Result<(), AppError>>),
    /// Panic (tests of supervision).
    #[cfg(feature = "fault-injection")]
    Panic,
}

/// The actor's state.
pub struct ProviderSyncState {
    shared: Arc<Shared>,
    account_id: Uuid,
    last_finished: Option<Instant>,
}

impl ProviderSyncState {
    /// Delivers the outbox, then pulls (`pull`), counting failures; sets the timer for the
    /// next due outbox row.
    async fn run(
        &mut self,
        myself: &ActorRef<ProviderSyncMsg>,
        pull: bool,
    ) -> Result<(), AppError> {
        let env = &self.shared.mirrors;
        let metrics = &self.shared.metrics;
        let Some(account) =
            account_store::caldav_account(self.shared.db.conn(), self.account_id).await?
        else {
            myself.stop(Some("account removed".into()));
            return Ok(());
        };
        let mut outcome = Ok(());
        match deliver_caldav(env, &account).await {
            Ok(_) => {}
            Err(err) => {
                metrics.sync_failed("caldav", "push");
                tracing::warn!(error = %err, "sync.push.failed");
            }
        }
        if pull {
            match pull_caldav(env, &account).await {
                Ok(changed) => {
                    tracing::debug!(changed = changed.len(), "sync.account.pulled");
                    if account.sync_status.is_some() {
                        account_store::set_caldav_status(self.shared.db.conn(), account.id, None)
                            .await?;
                    }
                }
                Err(err) => {
                    metrics.sync_failed("caldav", "account");
                    tracing::warn!(error = %err, "sync.account.failed");
                    if let PullError::Remote(crate::providers::caldav::CaldavError::Unauthorized) =
                        err
                    {
                        account_store::set_caldav_status(
                            self.shared.db.conn(),
                            account.id,
                            Some(("reconnect_required", "unauthorized")),
                        )
                        .await?;
                    }
                    outcome = Err(match err {
                        PullError::Local(err) => err,
                        PullError::Remote(err) => AppError::bad_request(format!(
                            "The calendar server could not be synced: {err}"
                        )),
                    });
                }
            }
        }
        if let Some(due) = next_due(env, self.account_id).await? {
            let wait = (due - chrono::Utc::now()).to_std().unwrap_or_default();
            myself.send_after(wait.max(Duration::from_millis(50)), || {
                ProviderSyncMsg::Deliver
            });
        }
        self.last_finished = Some(Instant::now());
        outcome
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
            account_id: args.account_id,
            last_finished: None,
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
            ProviderSyncMsg::SyncNow(port) => {
                let outcome = state.run(&myself, true).await;
                reply(port, outcome);
            }
            #[cfg(feature = "fault-injection")]
            ProviderSyncMsg::Panic => {
                panic!("fault injected into the sync actor of {}", state.account_id);
            }
        }
        Ok(())
    }
}
