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
//!
//! With several instances on one database (PostgreSQL), every instance may run an actor
//! for an account but only the one holding the account's lease
//! ([`crate::store::provider_leases`]) delivers and pulls; the others stand by. A task
//! beside the actor renews the lease (or, standing by, tries to take it) every quarter of
//! `PROVIDER_LEASE_MS`, for three quarters of it, so when the holder dies another instance
//! takes the account over within `PROVIDER_LEASE_MS`; a graceful stop releases it. A pull
//! asked of an instance that does not hold the account (sync now, an account just linked)
//! is passed on through the database: the request is recorded on the lease row, the holder
//! is woken (as for queued outbox rows) and pulls, records when and how it went, and the
//! asking instance answers from that row. On SQLite (one process) the lease is always held.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::task::JoinHandle;

use super::{ActorKind, MessageTimer, Shared, reply};
use crate::commands::mirrors::sync::turn;
use crate::domain::providers::AccountKey;
use crate::error::AppError;
use crate::metrics::Metrics;
use crate::store::provider_leases;

/// How often an asking instance looks whether the holder has pulled.
const PULL_POLL: Duration = Duration::from_millis(100);

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
    /// The lease task renewed or tried to take the account's lease (several instances).
    Lease {
        /// This instance holds it now.
        held: bool,
    },
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
    /// The account's lease.
    lease: LeaseState,
}

/// This instance's hold on an account's lease.
struct LeaseState {
    /// Several instances may share the database: only the lease holder works.
    applies: bool,
    /// Held until then (by this process's clock, counted from before it asked); written by
    /// the lease task.
    held_until: Arc<Mutex<Option<Instant>>>,
    /// Counted in `svc_provider_leases_held`.
    counted: bool,
    /// The task renewing (or trying to take) the lease.
    task: Option<JoinHandle<()>>,
    /// Where `svc_provider_leases_held` is.
    metrics: Arc<Metrics>,
}

impl Drop for LeaseState {
    /// However the actor ends (a panic included), its lease task ends and it is no longer
    /// counted.
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        if self.counted {
            self.metrics.provider_lease_held(-1.0);
        }
    }
}

impl LeaseState {
    /// Whether this instance may work on the account now.
    fn held(&self) -> bool {
        !self.applies
            || self
                .held_until
                .lock()
                .is_some_and(|until| Instant::now() < until)
    }
}

/// The lease's timing: it is renewed every `period` and each renewal holds it for `term`,
/// so a dead holder's account is taken over within `period + term` (`PROVIDER_LEASE_MS`).
fn lease_timing(shared: &Shared) -> (Duration, Duration) {
    let lease = Duration::from_millis(shared.settings.caldav.provider_lease_ms);
    let period = lease / 4;
    (period, lease - period)
}

/// Takes or renews `account`'s lease for this instance; whether it holds it.
async fn hold(
    shared: &Shared,
    account: &AccountKey,
    held_until: &Mutex<Option<Instant>>,
    term: Duration,
) -> bool {
    let asked = Instant::now();
    let now = Utc::now();
    let until = now + chrono::Duration::from_std(term).unwrap_or(chrono::Duration::MAX);
    match provider_leases::hold(&shared.db, account, &shared.instance_id, now, until).await {
        Ok(true) => {
            *held_until.lock() = Some(asked + term);
            true
        }
        Ok(false) => {
            *held_until.lock() = None;
            false
        }
        Err(err) => {
            // What was held stays held until it expires.
            tracing::warn!(error = %err, "sync.lease.failed");
            held_until
                .lock()
                .is_some_and(|until| Instant::now() < until)
        }
    }
}

/// Renews or tries to take the lease every `period` until the server stops or the actor is
/// gone, telling the actor each time.
fn spawn_lease_task(
    shared: Arc<Shared>,
    account: AccountKey,
    held_until: Arc<Mutex<Option<Instant>>>,
    myself: ActorRef<ProviderSyncMsg>,
) -> JoinHandle<()> {
    let (period, term) = lease_timing(&shared);
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is at once: `pre_start` has just asked.
        ticks.tick().await;
        loop {
            ticks.tick().await;
            if shared.shutdown.is_triggered() {
                return;
            }
            let held = hold(&shared, &account, &held_until, term).await;
            if myself
                .send_message(ProviderSyncMsg::Lease { held })
                .is_err()
            {
                return;
            }
        }
    })
}

/// Waits until the holder has answered a pull request made at `requested` (up to `wait`).
async fn await_pull(
    shared: &Shared,
    account: &AccountKey,
    requested: DateTime<Utc>,
    wait: Duration,
) -> Result<(), AppError> {
    let polled = tokio::time::timeout(wait, async {
        let mut ticks = tokio::time::interval(PULL_POLL);
        loop {
            ticks.tick().await;
            if let Some(ok) = provider_leases::pulled_since(&shared.db, account, requested).await? {
                return Ok::<bool, AppError>(ok);
            }
        }
    })
    .await;
    match polled {
        Ok(Ok(true)) => Ok(()),
        Ok(Ok(false)) => Err(AppError::bad_request(
            "The calendar server could not be synced.",
        )),
        Ok(Err(err)) => Err(err),
        Err(_) => Err(AppError::Unavailable(
            "the instance syncing this account did not answer in time".into(),
        )),
    }
}

impl ProviderSyncState {
    /// Counts or uncounts this account in `svc_provider_leases_held` as it is held.
    fn count_lease(&mut self) {
        let held = self.lease.held();
        if held != self.lease.counted {
            self.lease.counted = held;
            self.shared
                .metrics
                .provider_lease_held(if held { 1.0 } else { -1.0 });
            if self.lease.applies {
                if held {
                    tracing::info!(provider = %self.account.provider, "sync.lease.taken");
                } else {
                    tracing::info!(provider = %self.account.provider, "sync.lease.lost");
                }
            }
        }
    }

    /// A pull another instance asked for and the holder has not run yet.
    async fn pull_requested(&self) -> Option<DateTime<Utc>> {
        if !self.lease.applies {
            return None;
        }
        provider_leases::pull_requested(&self.shared.db, &self.account)
            .await
            .unwrap_or_else(|err| {
                tracing::warn!(error = %err, "sync.lease.failed");
                None
            })
    }

    /// Asks the holder to pull: records the request and wakes it. Returns when it was made.
    async fn pass_pull_on(&self) -> Result<DateTime<Utc>, AppError> {
        let requested = Utc::now();
        provider_leases::request_pull(&self.shared.db, &self.account, requested).await?;
        self.shared.db.tell_provider_writes_queued(&[(
            self.account.provider.as_str().to_owned(),
            self.account.id.clone(),
        )]);
        Ok(requested)
    }

    /// Records for the instances waiting on it that a pull answering requests up to
    /// `answered` ended.
    async fn record_pull(&self, answered: DateTime<Utc>, ok: bool) {
        if !self.lease.applies {
            return;
        }
        if let Err(err) =
            provider_leases::record_pull(&self.shared.db, &self.account, answered, ok).await
        {
            tracing::warn!(error = %err, "sync.lease.failed");
        }
    }

    /// Holding the lease: delivers and pulls as [`Self::turn`] (pulling too when another
    /// instance asked). Standing by: passes a pull on to the holder and leaves the rest to it.
    async fn run(
        &mut self,
        myself: &ActorRef<ProviderSyncMsg>,
        pull: bool,
    ) -> Result<(), AppError> {
        if !self.lease.held() {
            if pull {
                self.pass_pull_on().await?;
            }
            return Ok(());
        }
        let requested = self.pull_requested().await;
        let pull = pull || requested.is_some();
        let started = Utc::now();
        let deferred = self.quiet_until.is_some_and(|until| Instant::now() < until);
        let outcome = self.turn(myself, pull).await;
        if pull && !deferred {
            // A deferred pull is recorded when it runs.
            let answered = requested.map_or(started, |requested| requested.max(started));
            self.record_pull(answered, outcome.is_ok()).await;
        }
        outcome
    }

    /// Delivers the outbox, then pulls (`pull`); sets the timer for the next due outbox row.
    /// While the provider asked to be left alone, it does neither and comes back when the
    /// wait is over.
    async fn turn(
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
        let applies = args.shared.db.crosses_instances();
        let held_until = Arc::new(Mutex::new(None));
        let task = if applies {
            let (_, term) = lease_timing(&args.shared);
            hold(&args.shared, &args.account, &held_until, term).await;
            Some(spawn_lease_task(
                args.shared.clone(),
                args.account.clone(),
                held_until.clone(),
                myself.clone(),
            ))
        } else {
            None
        };
        // Rows left by an earlier run (or another process) are delivered at once.
        myself.send_message(ProviderSyncMsg::Deliver)?;
        let metrics = args.shared.metrics.clone();
        let mut state = ProviderSyncState {
            shared: args.shared,
            account: args.account,
            last_finished: None,
            quiet_until: None,
            lease: LeaseState {
                applies,
                held_until,
                counted: false,
                task,
                metrics,
            },
        };
        state.count_lease();
        Ok(state)
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(task) = state.lease.task.take() {
            task.abort();
            let _ = task.await;
        }
        // A killed process releases nothing: its leases expire.
        if state.lease.applies && !state.shared.shutdown.is_abandoned() {
            *state.lease.held_until.lock() = None;
            provider_leases::release(&state.shared.db, &state.account, &state.shared.instance_id)
                .await?;
        }
        Ok(())
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
                // Standing by, the holder's own timer pulls.
                if state.lease.held() {
                    let _ = state.run(&myself, true).await;
                }
            }
            ProviderSyncMsg::Deliver => {
                let _ = state.run(&myself, false).await;
            }
            ProviderSyncMsg::Pull => {
                let _ = state.run(&myself, true).await;
            }
            ProviderSyncMsg::SyncNow(port) => {
                // A lease left free (its holder stopped) is taken at once.
                if !state.lease.held() {
                    let (_, term) = lease_timing(&state.shared);
                    hold(&state.shared, &state.account, &state.lease.held_until, term).await;
                    state.count_lease();
                }
                if state.lease.held() {
                    let outcome = state.run(&myself, true).await;
                    reply(port, outcome);
                } else {
                    // The holder pulls; the answer waits for it without holding up this actor.
                    match state.pass_pull_on().await {
                        Ok(requested) => {
                            let shared = state.shared.clone();
                            let account = state.account.clone();
                            let wait = Duration::from_millis(
                                shared.settings.caldav.request_timeout_ms.saturating_mul(4),
                            );
                            tokio::spawn(async move {
                                let outcome = await_pull(&shared, &account, requested, wait).await;
                                reply(port, outcome);
                            });
                        }
                        Err(err) => reply(port, Err(err)),
                    }
                }
            }
            ProviderSyncMsg::Lease { held } => {
                let taken = held && !state.lease.counted;
                state.count_lease();
                // Taken over: what the last holder left is delivered now; held: a pull
                // another instance asked for (in case its wake-up was missed).
                if taken || (held && state.pull_requested().await.is_some()) {
                    let _ = state.run(&myself, false).await;
                }
            }
            #[cfg(feature = "fault-injection")]
            ProviderSyncMsg::Panic => {
                panic!("fault injected into the sync actor of {}", state.account.id);
            }
        }
        Ok(())
    }
}
