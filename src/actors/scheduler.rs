//! [`SchedulerActor`]: runs the server's periodic tasks (cleanup, forgetting ended
//! rate-limit windows, metrics upkeep; later provider sync and mail drains) on their
//! intervals.
//!
//! Each run happens in its own task so the actor keeps receiving ticks; a tick that finds the
//! task's previous run still active is skipped, counted in `svc_scheduled_task_skips_total`
//! and logged, while an explicit [`SchedulerMsg::RunNow`] joins the active run and gets its
//! outcome. The run state lives in the [`TaskSpec`]s the root hands to every incarnation of
//! the actor, so it survives a restart. Cluster-wide tasks also take a lease
//! row in the database first, so that with several instances on one database a tick runs
//! once.

use super::Shared;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tracing::Instrument;

use super::{ActorKind, MessageTimer, reply};
use crate::config::Settings;
use crate::error::AppError;
use crate::store::{maintenance, notifications, scheduled_tasks, wal};

/// Error type of a task run.
pub type TaskError = Box<dyn std::error::Error + Send + Sync>;
/// A task's body.
pub type TaskJob =
    Arc<dyn Fn(Arc<Shared>) -> BoxFuture<'static, Result<(), TaskError>> + Send + Sync>;

/// Whether a task runs on every instance or once per database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskScope {
    /// Every instance runs it (e.g. metrics upkeep).
    Instance,
    /// One instance per tick, by lease (e.g. cleanup).
    Cluster,
}

/// One periodic task.
pub struct TaskSpec {
    name: &'static str,
    every: Duration,
    scope: TaskScope,
    run_at_start: bool,
    skips_expected: bool,
    job: TaskJob,
    run: Arc<Mutex<RunState>>,
}

/// Whether a task is running, and who waits for its outcome.
#[derive(Default)]
struct RunState {
    running: bool,
    waiters: Vec<OutcomePort>,
}

type OutcomePort = RpcReplyPort<Result<RunOutcome, AppError>>;

impl TaskSpec {
    /// A task named `name` running `job` every `every`.
    pub fn new<F, Fut>(name: &'static str, every: Duration, scope: TaskScope, job: F) -> Self
    where
        F: Fn(Arc<Shared>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), TaskError>> + Send + 'static,
    {
        Self {
            name,
            every,
            scope,
            run_at_start: false,
            skips_expected: false,
            job: Arc::new(move |shared| job(shared).boxed()),
            run: Arc::new(Mutex::new(RunState::default())),
        }
    }

    /// Also runs the task once when the server starts.
    pub fn run_at_start(mut self) -> Self {
        self.run_at_start = true;
        self
    }

    /// A run outlasting its interval is normal for this task (it waits for the database's
    /// writer): a skipped tick is still counted, but logged at debug rather than warn.
    pub fn skips_expected(mut self) -> Self {
        self.skips_expected = true;
        self
    }

    /// The task's name (the `task` metric label).
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// The tasks every server runs.
pub fn builtin_tasks(settings: &Settings) -> Vec<TaskSpec> {
    vec![
        TaskSpec::new(
            "cleanup",
            Duration::from_millis(settings.scheduler.cleanup_interval_ms),
            TaskScope::Cluster,
            |shared: Arc<Shared>| async move {
                let report = maintenance::cleanup(&shared.db).await?;
                tracing::debug!(expired_rows = report.expired_rows, "cleanup.done");
                Ok(())
            },
        )
        .run_at_start(),
        // The rate limiter lives in this process's memory: every instance prunes its own.
        TaskSpec::new(
            "rate_limits",
            Duration::from_secs(60),
            TaskScope::Instance,
            |shared: Arc<Shared>| async move {
                shared.limits.prune(std::time::Instant::now());
                Ok(())
            },
        ),
        // SQLite's write-ahead log, off the writers' path (nothing to do on PostgreSQL).
        TaskSpec::new(
            "wal_checkpoint",
            wal::CHECKPOINT_EVERY,
            TaskScope::Instance,
            |shared: Arc<Shared>| async move {
                wal::checkpoint(&shared.db).await?;
                Ok(())
            },
        )
        .skips_expected(),
        TaskSpec::new(
            "metrics_upkeep",
            Duration::from_secs(5),
            TaskScope::Instance,
            |shared: Arc<Shared>| async move {
                shared.metrics.run_upkeep();
                // Gauges sampled here: the database's connections and the mail queue.
                for (pool, in_use, idle) in shared.db.pool_usage() {
                    shared.metrics.db_pool(pool, in_use, idle);
                }
                let now = chrono::Utc::now();
                let (batches, overdue) = notifications::queue_state(&shared.db, now).await?;
                let overdue = overdue.map_or(0.0, |due| {
                    (now - due).num_milliseconds().max(0) as f64 / 1000.0
                });
                shared.metrics.mail_queue(batches, overdue);
                Ok(())
            },
        ),
    ]
}

/// How a requested or scheduled run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// The task ran and succeeded.
    Completed,
    /// The task ran and failed (logged).
    Failed,
    /// A tick found the previous run still active (never the answer to `RunNow`, which joins).
    Skipped,
    /// Another instance holds the task's lease.
    LeasedElsewhere,
}

impl RunOutcome {
    fn label(self) -> &'static str {
        match self {
            Self::Completed => "ok",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
            Self::LeasedElsewhere => "leased_elsewhere",
        }
    }
}

/// The scheduler.
#[derive(Debug)]
pub struct SchedulerActor;

/// What each incarnation of the scheduler starts from.
pub struct SchedulerArgs {
    /// What the server's actors share.
    pub shared: Arc<Shared>,
    /// The tasks, shared with the root across restarts.
    pub tasks: Arc<[TaskSpec]>,
    /// `true` for the first incarnation (runs the `run_at_start` tasks).
    pub initial: bool,
}

/// The scheduler's state.
pub struct SchedulerState {
    shared: Arc<Shared>,
    tasks: Arc<[TaskSpec]>,
}

/// Messages to the scheduler.
#[derive(Debug)]
pub enum SchedulerMsg {
    /// A task's interval elapsed.
    Tick {
        /// Task name.
        task: &'static str,
    },
    /// Run a task now (or join its active run) and answer with the outcome.
    RunNow {
        /// Task name.
        task: String,
        /// Receives the outcome.
        reply: RpcReplyPort<Result<RunOutcome, AppError>>,
    },
    /// Panic inside the handler, to exercise supervision (test builds only).
    #[cfg(feature = "fault-injection")]
    InjectPanic {
        /// Dropped unanswered by the panic.
        reply: RpcReplyPort<Result<(), AppError>>,
    },
}

impl Actor for SchedulerActor {
    type Msg = SchedulerMsg;
    type State = SchedulerState;
    type Arguments = SchedulerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        for task in args.tasks.iter() {
            let name = task.name;
            myself.send_interval(task.every, move || SchedulerMsg::Tick { task: name });
            if args.initial && task.run_at_start {
                myself.send_message(SchedulerMsg::Tick { task: name })?;
            }
        }
        Ok(SchedulerState {
            shared: args.shared,
            tasks: args.tasks,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let _timer = MessageTimer::start(&state.shared.metrics, ActorKind::Scheduler);
        match message {
            SchedulerMsg::Tick { task } => {
                if let Some(spec) = state.tasks.iter().find(|spec| spec.name == task) {
                    start_run(&state.shared, spec, None);
                }
            }
            SchedulerMsg::RunNow { task, reply: port } => {
                match state.tasks.iter().find(|spec| spec.name == task) {
                    Some(spec) => start_run(&state.shared, spec, Some(port)),
                    None => reply(
                        port,
                        Err(AppError::not_found(format!(
                            "No scheduled task named {task}."
                        ))),
                    ),
                }
            }
            #[cfg(feature = "fault-injection")]
            SchedulerMsg::InjectPanic { reply: _port } => {
                panic!("fault injected into the scheduler");
            }
        }
        Ok(())
    }
}

/// Ends a run however it ends: clears "running" and answers everyone waiting for it.
struct RunFinisher {
    state: Arc<Mutex<RunState>>,
    outcome: RunOutcome,
}

impl RunFinisher {
    /// Ends the run with `outcome`.
    fn finish(mut self, outcome: RunOutcome) {
        self.outcome = outcome;
    }
}

impl Drop for RunFinisher {
    fn drop(&mut self) {
        let waiters = {
            let mut state = self.state.lock();
            state.running = false;
            std::mem::take(&mut state.waiters)
        };
        for port in waiters {
            reply(port, Ok(self.outcome));
        }
    }
}

/// Starts a run of `spec` in its own task. If it is already running, a tick is skipped and
/// counted, and an explicit request joins the active run.
fn start_run(shared: &Arc<Shared>, spec: &TaskSpec, port: Option<OutcomePort>) {
    let name = spec.name;
    {
        let mut state = spec.run.lock();
        if state.running {
            match port {
                Some(port) => state.waiters.push(port),
                None => {
                    shared.metrics.task_skipped(name);
                    if spec.skips_expected {
                        tracing::debug!(
                            task = name,
                            reason = "previous_run_active",
                            "scheduler.task.skipped"
                        );
                    } else {
                        tracing::warn!(
                            task = name,
                            reason = "previous_run_active",
                            "scheduler.task.skipped"
                        );
                    }
                }
            }
            return;
        }
        state.running = true;
        state.waiters.extend(port);
    }
    let finisher = RunFinisher {
        state: spec.run.clone(),
        outcome: RunOutcome::Failed,
    };
    let shared = shared.clone();
    let job = spec.job.clone();
    let scope = spec.scope;
    let span = tracing::info_span!("scheduled_task", task = name);
    tokio::spawn(
        async move {
            let outcome = run_once(&shared, name, scope, &job).await;
            shared.metrics.task_finished(name, outcome.label());
            finisher.finish(outcome);
        }
        .instrument(span),
    );
}

/// One run: lease (for cluster tasks), the job itself with panics caught, release.
async fn run_once(
    shared: &Arc<Shared>,
    name: &'static str,
    scope: TaskScope,
    job: &TaskJob,
) -> RunOutcome {
    let owner = shared.instance_id.as_str();
    if scope == TaskScope::Cluster {
        let now = chrono::Utc::now();
        let lease = chrono::Duration::milliseconds(
            i64::try_from(shared.settings.scheduler.lease_ms).unwrap_or(i64::MAX),
        );
        match scheduled_tasks::acquire(&shared.db, name, owner, now, now + lease).await {
            Ok(scheduled_tasks::Lease::Acquired) => {}
            Ok(scheduled_tasks::Lease::HeldElsewhere) => return RunOutcome::LeasedElsewhere,
            Err(err) => {
                tracing::error!(error = %err, "scheduler.lease_failed");
                return RunOutcome::Failed;
            }
        }
    }
    let outcome = match AssertUnwindSafe(job(shared.clone())).catch_unwind().await {
        Ok(Ok(())) => RunOutcome::Completed,
        Ok(Err(err)) => {
            tracing::error!(error = %err, "scheduler.task.failed");
            RunOutcome::Failed
        }
        Err(_) => {
            tracing::error!("scheduler.task.panicked");
            RunOutcome::Failed
        }
    };
    if scope == TaskScope::Cluster
        && let Err(err) =
            scheduled_tasks::release(&shared.db, name, owner, chrono::Utc::now(), outcome.label())
                .await
    {
        tracing::error!(error = %err, "scheduler.release_failed");
    }
    outcome
}
