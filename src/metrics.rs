//! Metric names and the per-server Prometheus registry.
//!
//! Every name is a constant here (prefix `svc_`, as the spec writes it). Each server owns its
//! own [`Metrics`] registry instead of the `metrics` crate's global recorder, so two servers
//! in one process (federation tests) never mix their counters; recording goes through the
//! typed methods below, which install the registry as the local recorder for the call.

use std::time::{Duration, Instant};

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

/// Completed HTTP requests by method, route pattern and status.
pub const HTTP_REQUESTS_TOTAL: &str = "svc_http_requests_total";
/// HTTP request duration (until the response head) by method, route pattern and status.
pub const HTTP_REQUEST_DURATION_SECONDS: &str = "svc_http_request_duration_seconds";
/// HTTP requests in progress by method.
pub const HTTP_REQUESTS_IN_FLIGHT: &str = "svc_http_requests_in_flight";
/// Failed provider discovery, account sync, event push or scheduler runs, by provider.
pub const EXTERNAL_SYNC_FAILURES_TOTAL: &str = "svc_external_sync_failures_total";
/// The providers whose sync failures [`EXTERNAL_SYNC_FAILURES_TOTAL`] counts (its
/// `provider` label).
pub const SYNC_PROVIDERS: [&str; 3] = ["google", "microsoft", "caldav"];
/// Provider writes waiting in the outbox, by provider.
pub const OUTBOX_PENDING: &str = "svc_outbox_pending";
/// Connected accounts whose sync this instance runs (holds the lease of).
pub const PROVIDER_LEASES_HELD: &str = "svc_provider_leases_held";
/// Age in seconds of the oldest provider write waiting in the outbox, by provider.
pub const OUTBOX_OLDEST_AGE_SECONDS: &str = "svc_outbox_oldest_age_seconds";
/// Ticks skipped because the task's previous run was still active, by task.
pub const SCHEDULED_TASK_SKIPS_TOTAL: &str = "svc_scheduled_task_skips_total";
/// Finished scheduled-task runs by task and outcome (`ok`, `failed`, `leased_elsewhere`).
pub const SCHEDULED_TASK_RUNS_TOTAL: &str = "svc_scheduled_task_runs_total";
/// Actor restarts performed by a supervisor, by actor kind.
pub const ACTOR_RESTARTS_TOTAL: &str = "svc_actor_restarts_total";
/// Actor failures (panic or error from a handler), by actor kind.
pub const ACTOR_FAILURES_TOTAL: &str = "svc_actor_failures_total";
/// Live actors by kind.
pub const ACTORS: &str = "svc_actors";
/// Time an actor spends handling one message, by actor kind.
pub const ACTOR_MESSAGE_DURATION_SECONDS: &str = "svc_actor_message_duration_seconds";
/// Open `/api/stream` connections.
pub const SSE_CONNECTIONS: &str = "svc_sse_connections";
/// Histogram: event commands committed together by a calendar actor (group commit), by
/// `kind` (`create`: creations; `edit`: updates, deletes, links, attendance answers).
pub const EVENT_COMMIT_BATCH_SIZE: &str = "svc_event_commit_batch_size";
/// Full events reads by cache outcome (`hit`, `miss`, `not_modified`, `streamed`).
pub const EVENT_READ_CACHE_TOTAL: &str = "svc_event_read_cache_total";
/// Users with at least one open `/api/stream` connection.
pub const SSE_USERS: &str = "svc_sse_users";
/// Gauge: streams open to connected servers on behalf of local users with an open
/// `/api/stream` (federation fan-in); one waiting to reconnect is not counted.
pub const FEDERATED_UPSTREAM_STREAMS: &str = "svc_federated_upstream_streams";
/// Counter: upstream streams to connected servers that ended or could not be opened, by
/// `reason` (`closed`, `refused`, `unreachable`, `status`, `panic`).
pub const FEDERATED_UPSTREAM_FAILURES_TOTAL: &str = "svc_federated_upstream_failures_total";
/// Gauge: open HTTP connections.
pub const HTTP_CONNECTIONS: &str = "svc_http_connections";
/// Counter: connections the listener closed or refused, by `reason` (`idle`: nothing moved
/// for the idle timeout; `evicted`: the oldest idle one, to make room; `refused`: every
/// connection was busy).
pub const HTTP_CONNECTIONS_CLOSED_TOTAL: &str = "svc_http_connections_closed_total";
/// The `reason` labels of [`HTTP_CONNECTIONS_CLOSED_TOTAL`].
pub const HTTP_CLOSE_REASONS: [&str; 3] = ["idle", "evicted", "refused"];
/// The `reason` labels of [`FEDERATED_UPSTREAM_FAILURES_TOTAL`].
pub const UPSTREAM_FAILURE_REASONS: [&str; 5] =
    ["closed", "refused", "unreachable", "status", "panic"];
/// Counter: transactions the database aborted to break a deadlock or a serialization
/// conflict and that ran again (writes take their locks in one order, so this stays at zero).
pub const DB_TRANSACTION_RETRIES_TOTAL: &str = "svc_db_transaction_retries_total";
/// Counter: PostgreSQL write transactions a calendar began ahead, while its batch of
/// creations before was written, by `outcome`: `taken` by its next batch, or `released`
/// (rolled back: no event command was waiting).
pub const DB_WRITES_AHEAD_TOTAL: &str = "svc_db_writes_ahead_total";
/// The `outcome` labels of [`DB_WRITES_AHEAD_TOTAL`].
pub const WRITE_AHEAD_OUTCOMES: [&str; 2] = ["taken", "released"];
/// Histogram: time a message waited in an actor's mailbox, from being sent through the
/// actor's handle until its handler started, by `actor` kind. Measured for the messages
/// that arrive from outside the actor: commands to the calendar supervisor and (from the
/// supervisor's forward) to a calendar actor, frame deliveries to a stream session, mails
/// and batch notices to the mailer. Timers and messages an actor sends itself are not
/// measured.
pub const ACTOR_MAILBOX_WAIT_SECONDS: &str = "svc_actor_mailbox_wait_seconds";
/// The actor kinds whose mailbox wait [`ACTOR_MAILBOX_WAIT_SECONDS`] measures.
pub const MAILBOX_WAIT_KINDS: [&str; 4] = ["calendar_supervisor", "calendar", "session", "mailer"];
/// Gauge: change-notification mail batches waiting to be sent (one per recipient with
/// pending rows), sampled every few seconds.
pub const MAIL_BATCHES_PENDING: &str = "svc_mail_batches_pending";
/// Gauge: seconds the most overdue change-notification batch has waited past its due time
/// (0 when no batch is overdue), sampled every few seconds. A batch is sent at its due time,
/// so a value that keeps growing means mail is not going out.
pub const MAIL_OLDEST_BATCH_AGE_SECONDS: &str = "svc_mail_oldest_batch_age_seconds";
/// Gauge: database connections by `pool` (`main`: sea-orm's pool; `writer`: SQLite's one
/// write connection) and `state` (`in_use`, `idle`), sampled every few seconds.
pub const DB_POOL_CONNECTIONS: &str = "svc_db_pool_connections";
/// The `pool` labels of [`DB_POOL_CONNECTIONS`].
pub const DB_POOLS: [&str; 2] = ["main", "writer"];
/// Histogram: time to obtain the connection a transaction runs on, by `mode` (`read`,
/// `write`): a pooled connection (PostgreSQL: with its `BEGIN`), or for an SQLite write,
/// the writer connection. Statements outside transactions are not timed.
pub const DB_POOL_ACQUIRE_SECONDS: &str = "svc_db_pool_acquire_seconds";
/// Histogram: time a write transaction held its connection. On SQLite, the one writer
/// connection, from obtaining it to handing it on (a checkpoint's hold too): the rate of
/// its sum is the share of time the writer was busy, and at 1 writes queue. On PostgreSQL,
/// a pooled connection from obtaining it to its `COMMIT` or `ROLLBACK`, the time its row
/// locks are held.
pub const DB_WRITE_HOLD_SECONDS: &str = "svc_db_write_hold_seconds";
/// Histogram: SQLite write transactions committed by one `COMMIT` (writes waiting for the
/// writer share the commit of the one before them). Not recorded on PostgreSQL, where each
/// write transaction commits alone.
pub const DB_COMMIT_WRITES: &str = "svc_db_commit_writes";
/// Counter: `/api/stream` connections the server dropped, by `reason` (`slow`: its bounded
/// queue was full when a frame came; `credentials`: its session or member token ended;
/// `closed`: the server closed every stream of the user, e.g. at shutdown).
pub const SSE_DROPPED_TOTAL: &str = "svc_sse_dropped_total";
/// The `reason` labels of [`SSE_DROPPED_TOTAL`].
pub const SSE_DROP_REASONS: [&str; 3] = ["slow", "credentials", "closed"];
/// Counter: reminder pushes a push service accepted (one per browser).
pub const PUSH_SENT_TOTAL: &str = "svc_push_sent_total";
/// Counter: reminder pushes not delivered, by `reason` ([`PUSH_FAILURE_REASONS`]).
pub const PUSH_FAILURES_TOTAL: &str = "svc_push_failures_total";
/// The `reason` labels of [`PUSH_FAILURES_TOTAL`]: `gone` (404/410, the subscription was
/// dropped), `refused` (another 4xx, or not encryptable), `throttled` (429), `unavailable`
/// (5xx) and `unreachable` (no answer), the last three after the retries.
pub const PUSH_FAILURE_REASONS: [&str; 5] =
    ["gone", "refused", "throttled", "unavailable", "unreachable"];
/// Counter: reminders skipped because they fell due more than `PUSH_MAX_CATCHUP_MS` before
/// the dispatcher looked (after an outage).
pub const PUSH_SKIPPED_TOTAL: &str = "svc_push_skipped_total";
/// Gauge: browsers subscribed to web push (as of the last pass here).
pub const PUSH_SUBSCRIPTIONS: &str = "svc_push_subscriptions";
/// Gauge: how far behind now the dispatcher's cursor was after its last pass here.
pub const PUSH_DISPATCH_LAG_SECONDS: &str = "svc_push_dispatch_lag_seconds";
/// Gauge: Unix time of this instance's last completed dispatch pass (0: none yet).
pub const PUSH_DISPATCH_LAST_PASS: &str = "svc_push_dispatch_last_pass_timestamp_seconds";
/// Prefix of the standard process metrics (`svc_process_cpu_seconds_total`, ...).
pub const PROCESS_PREFIX: &str = "svc_";

/// Label value for a request that matched no route.
pub const UNMATCHED_ROUTE: &str = "<unmatched>";
/// Status label of a request whose client went away before the response.
pub const ABORTED_STATUS: &str = "aborted";

const HTTP_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
const ACTOR_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];
const WAIT_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];
const BATCH_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// One server's metric registry.
pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    process: metrics_process::Collector,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with histogram buckets and descriptions of every metric.
    pub fn new() -> Self {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full(HTTP_REQUEST_DURATION_SECONDS.into()),
                HTTP_BUCKETS,
            )
            .and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Full(ACTOR_MESSAGE_DURATION_SECONDS.into()),
                    ACTOR_BUCKETS,
                )
            })
            .and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Full(EVENT_COMMIT_BATCH_SIZE.into()),
                    BATCH_BUCKETS,
                )
            })
            .and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Full(ACTOR_MAILBOX_WAIT_SECONDS.into()),
                    WAIT_BUCKETS,
                )
            })
            .and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Full(DB_POOL_ACQUIRE_SECONDS.into()),
                    WAIT_BUCKETS,
                )
            })
            .and_then(|b| {
                b.set_buckets_for_metric(Matcher::Full(DB_WRITE_HOLD_SECONDS.into()), WAIT_BUCKETS)
            })
            .and_then(|b| {
                b.set_buckets_for_metric(Matcher::Full(DB_COMMIT_WRITES.into()), BATCH_BUCKETS)
            });
        // The bucket lists are non-empty constants, so the builder cannot refuse them.
        let recorder = builder
            .unwrap_or_else(|_| PrometheusBuilder::new())
            .build_recorder();
        let handle = recorder.handle();
        let metrics = Self {
            recorder,
            handle,
            process: metrics_process::Collector::new(PROCESS_PREFIX),
        };
        metrics.scoped(|| {
            describe_counter!(HTTP_REQUESTS_TOTAL, "Completed HTTP requests.");
            describe_histogram!(
                HTTP_REQUEST_DURATION_SECONDS,
                metrics::Unit::Seconds,
                "HTTP request duration until the response head."
            );
            describe_gauge!(HTTP_REQUESTS_IN_FLIGHT, "HTTP requests in progress.");
            describe_counter!(
                EXTERNAL_SYNC_FAILURES_TOTAL,
                "Failed provider discovery, account sync, push or scheduler runs."
            );
            describe_counter!(
                SCHEDULED_TASK_SKIPS_TOTAL,
                "Ticks skipped because the previous run was still active."
            );
            describe_counter!(SCHEDULED_TASK_RUNS_TOTAL, "Finished scheduled-task runs.");
            describe_counter!(ACTOR_RESTARTS_TOTAL, "Actor restarts by a supervisor.");
            describe_counter!(ACTOR_FAILURES_TOTAL, "Actor panics and handler errors.");
            describe_gauge!(ACTORS, "Live actors.");
            describe_gauge!(OUTBOX_PENDING, "Provider writes waiting in the outbox.");
            describe_gauge!(
                OUTBOX_OLDEST_AGE_SECONDS,
                "Age of the oldest provider write waiting in the outbox."
            );
            describe_gauge!(
                PROVIDER_LEASES_HELD,
                "Connected accounts whose sync this instance runs."
            );
            describe_gauge!(SSE_CONNECTIONS, "Open /api/stream connections.");
            describe_gauge!(SSE_USERS, "Users with an open /api/stream connection.");
            describe_gauge!(HTTP_CONNECTIONS, "Open HTTP connections.");
            describe_gauge!(
                FEDERATED_UPSTREAM_STREAMS,
                "Streams held open to connected servers for local users' live streams."
            );
            describe_counter!(
                FEDERATED_UPSTREAM_FAILURES_TOTAL,
                "Upstream streams to connected servers that ended or could not be opened."
            );
            describe_counter!(
                HTTP_CONNECTIONS_CLOSED_TOTAL,
                "HTTP connections closed by the listener (idle, evicted) or refused."
            );
            describe_counter!(
                DB_TRANSACTION_RETRIES_TOTAL,
                "Transactions run again after the database aborted them (deadlock, serialization)."
            );
            describe_counter!(
                DB_WRITES_AHEAD_TOTAL,
                "Write transactions begun ahead of a calendar's next batch, taken or released."
            );
            describe_counter!(
                EVENT_READ_CACHE_TOTAL,
                "Full events reads by cache outcome."
            );
            describe_histogram!(
                ACTOR_MESSAGE_DURATION_SECONDS,
                metrics::Unit::Seconds,
                "Time an actor spends on one message."
            );
            describe_histogram!(
                EVENT_COMMIT_BATCH_SIZE,
                "Event creations committed in one transaction by a calendar actor."
            );
            describe_histogram!(
                ACTOR_MAILBOX_WAIT_SECONDS,
                metrics::Unit::Seconds,
                "Time a message waited in an actor's mailbox before its handler started."
            );
            describe_gauge!(
                MAIL_BATCHES_PENDING,
                "Change-notification mail batches waiting to be sent."
            );
            describe_gauge!(
                MAIL_OLDEST_BATCH_AGE_SECONDS,
                metrics::Unit::Seconds,
                "Seconds the most overdue mail batch has waited past its due time."
            );
            describe_gauge!(DB_POOL_CONNECTIONS, "Database connections in use and idle.");
            describe_histogram!(
                DB_POOL_ACQUIRE_SECONDS,
                metrics::Unit::Seconds,
                "Time to obtain the connection a transaction runs on."
            );
            describe_histogram!(
                DB_WRITE_HOLD_SECONDS,
                metrics::Unit::Seconds,
                "Time a write transaction held its connection (SQLite: the one writer)."
            );
            describe_histogram!(
                DB_COMMIT_WRITES,
                "SQLite write transactions committed by one COMMIT."
            );
            describe_counter!(
                SSE_DROPPED_TOTAL,
                "Stream connections dropped by the server (slow client, credentials, closed)."
            );
            describe_counter!(
                PUSH_SENT_TOTAL,
                "Reminders a push service accepted (one per browser)."
            );
            describe_counter!(
                PUSH_FAILURES_TOTAL,
                "Reminder pushes not delivered, by reason (gone, refused, throttled, unavailable, unreachable)."
            );
            describe_counter!(
                PUSH_SKIPPED_TOTAL,
                "Reminders skipped because they fell due longer than PUSH_MAX_CATCHUP_MS before the dispatcher looked."
            );
            describe_gauge!(PUSH_SUBSCRIPTIONS, "Browsers subscribed to web push.");
            describe_gauge!(
                PUSH_DISPATCH_LAG_SECONDS,
                metrics::Unit::Seconds,
                "How far behind now the reminder dispatcher's cursor was after its last pass."
            );
            describe_gauge!(
                PUSH_DISPATCH_LAST_PASS,
                metrics::Unit::Seconds,
                "Unix time of this instance's last completed reminder dispatch pass (0: none)."
            );
            metrics.process.describe();
        });
        metrics
    }

    /// Runs `f` with this registry as the `metrics` macros' recorder.
    pub fn scoped<T>(&self, f: impl FnOnce() -> T) -> T {
        metrics::with_local_recorder(&self.recorder, f)
    }

    /// The exposition text for `GET /metrics`, process metrics refreshed first.
    pub fn render(&self) -> String {
        self.scoped(|| self.process.collect());
        self.handle.render()
    }

    /// Drains histogram samples into their buckets; run periodically.
    pub fn run_upkeep(&self) {
        self.handle.run_upkeep();
    }

    /// A request started.
    pub fn http_started(&self, method: &'static str) {
        self.scoped(|| gauge!(HTTP_REQUESTS_IN_FLIGHT, "method" => method).increment(1.0));
    }

    /// A request ended (`status` may be [`ABORTED_STATUS`]).
    pub fn http_finished(
        &self,
        method: &'static str,
        route: &'static str,
        status: &str,
        elapsed: Duration,
    ) {
        let status = status.to_owned();
        self.scoped(|| {
            gauge!(HTTP_REQUESTS_IN_FLIGHT, "method" => method).decrement(1.0);
            counter!(HTTP_REQUESTS_TOTAL, "method" => method, "route" => route, "status" => status.clone())
                .increment(1);
            histogram!(HTTP_REQUEST_DURATION_SECONDS, "method" => method, "route" => route, "status" => status)
                .record(elapsed.as_secs_f64());
        });
    }

    /// Exports at zero the counters dashboards and alerts watch, for every label value they
    /// can take, so that a healthy server has the series too: restarts and failures per
    /// actor kind, skipped ticks per scheduled task, sync failures per provider, dropped
    /// streams and closed connections per reason; and the mail gauges and the mailbox-wait
    /// and acquire histograms (buckets at zero).
    pub fn export_zeros(&self, actor_kinds: &[&'static str], tasks: &[&'static str]) {
        self.scoped(|| {
            for kind in actor_kinds {
                counter!(ACTOR_RESTARTS_TOTAL, "actor" => *kind).increment(0);
                counter!(ACTOR_FAILURES_TOTAL, "actor" => *kind).increment(0);
            }
            for task in tasks {
                counter!(SCHEDULED_TASK_SKIPS_TOTAL, "task" => *task).increment(0);
            }
            for provider in SYNC_PROVIDERS {
                counter!(EXTERNAL_SYNC_FAILURES_TOTAL, "provider" => provider).increment(0);
                gauge!(OUTBOX_PENDING, "provider" => provider).set(0.0);
                gauge!(OUTBOX_OLDEST_AGE_SECONDS, "provider" => provider).set(0.0);
            }
            counter!(DB_TRANSACTION_RETRIES_TOTAL).increment(0);
            for outcome in WRITE_AHEAD_OUTCOMES {
                counter!(DB_WRITES_AHEAD_TOTAL, "outcome" => outcome).increment(0);
            }
            for kind in MAILBOX_WAIT_KINDS {
                // Registered without a sample: the scrape shows its buckets at zero.
                let _ = histogram!(ACTOR_MAILBOX_WAIT_SECONDS, "actor" => kind);
            }
            for reason in SSE_DROP_REASONS {
                counter!(SSE_DROPPED_TOTAL, "reason" => reason).increment(0);
            }
            for reason in HTTP_CLOSE_REASONS {
                counter!(HTTP_CONNECTIONS_CLOSED_TOTAL, "reason" => reason).increment(0);
            }
            for reason in UPSTREAM_FAILURE_REASONS {
                counter!(FEDERATED_UPSTREAM_FAILURES_TOTAL, "reason" => reason).increment(0);
            }
            gauge!(MAIL_BATCHES_PENDING).increment(0.0);
            gauge!(MAIL_OLDEST_BATCH_AGE_SECONDS).increment(0.0);
            for mode in ["read", "write"] {
                let _ = histogram!(DB_POOL_ACQUIRE_SECONDS, "mode" => mode);
            }
            let _ = histogram!(DB_WRITE_HOLD_SECONDS);
            let _ = histogram!(DB_COMMIT_WRITES);
            gauge!(FEDERATED_UPSTREAM_STREAMS).increment(0.0);
            gauge!(PROVIDER_LEASES_HELD).increment(0.0);
            counter!(PUSH_SENT_TOTAL).increment(0);
            for reason in PUSH_FAILURE_REASONS {
                counter!(PUSH_FAILURES_TOTAL, "reason" => reason).increment(0);
            }
            counter!(PUSH_SKIPPED_TOTAL).increment(0);
            gauge!(PUSH_SUBSCRIPTIONS).increment(0.0);
            gauge!(PUSH_DISPATCH_LAG_SECONDS).increment(0.0);
            gauge!(PUSH_DISPATCH_LAST_PASS).increment(0.0);
        });
    }

    /// A reminder dispatch pass finished: `sent` pushes accepted, `skipped` reminders too old
    /// to send, the cursor `lag_seconds` behind now, `subscriptions` browsers subscribed.
    pub fn push_pass(&self, sent: u64, skipped: u64, lag_seconds: f64, subscriptions: u64) {
        self.scoped(|| {
            counter!(PUSH_SENT_TOTAL).increment(sent);
            counter!(PUSH_SKIPPED_TOTAL).increment(skipped);
            gauge!(PUSH_DISPATCH_LAG_SECONDS).set(lag_seconds);
            gauge!(PUSH_SUBSCRIPTIONS).set(subscriptions as f64);
            gauge!(PUSH_DISPATCH_LAST_PASS).set(chrono::Utc::now().timestamp() as f64);
        });
    }

    /// A reminder push failed for `reason` (one of [`PUSH_FAILURE_REASONS`]).
    pub fn push_failed(&self, reason: &'static str) {
        self.scoped(|| counter!(PUSH_FAILURES_TOTAL, "reason" => reason).increment(1));
    }

    /// An actor of `kind` started (+1) or stopped (-1).
    pub fn actor_alive(&self, kind: &'static str, delta: f64) {
        self.scoped(|| gauge!(ACTORS, "actor" => kind).increment(delta));
    }

    /// An actor of `kind` panicked or returned an error from a handler.
    pub fn actor_failed(&self, kind: &'static str) {
        self.scoped(|| counter!(ACTOR_FAILURES_TOTAL, "actor" => kind).increment(1));
    }

    /// A supervisor restarted an actor of `kind`.
    pub fn actor_restarted(&self, kind: &'static str) {
        self.scoped(|| counter!(ACTOR_RESTARTS_TOTAL, "actor" => kind).increment(1));
    }

    /// An actor of `kind` handled one message in `elapsed`.
    pub fn actor_message(&self, kind: &'static str, elapsed: Duration) {
        self.scoped(|| {
            histogram!(ACTOR_MESSAGE_DURATION_SECONDS, "actor" => kind)
                .record(elapsed.as_secs_f64())
        });
    }

    /// A calendar actor committed `size` event commands of `kind` (`create`, `edit`)
    /// together.
    pub fn event_batch(&self, kind: &'static str, size: usize) {
        self.scoped(|| histogram!(EVENT_COMMIT_BATCH_SIZE, "kind" => kind).record(size as f64));
    }

    /// A write transaction begun ahead was taken by the write after it, or released
    /// ([`DB_WRITES_AHEAD_TOTAL`]).
    pub fn write_ahead(&self, outcome: &'static str) {
        self.scoped(|| counter!(DB_WRITES_AHEAD_TOTAL, "outcome" => outcome).increment(1));
    }

    /// The database aborted a transaction to let another go on, and it runs again.
    pub fn transaction_retried(&self) {
        self.scoped(|| counter!(DB_TRANSACTION_RETRIES_TOTAL).increment(1));
    }

    /// A full events read was answered 304: the client holds the current events.
    pub fn event_read_not_modified(&self) {
        self.scoped(|| counter!(EVENT_READ_CACHE_TOTAL, "outcome" => "not_modified").increment(1));
    }

    /// A full events read was served from the cache (`hit`) or rendered from the database
    /// (`miss`).
    pub fn event_read(&self, hit: bool) {
        let outcome = if hit { "hit" } else { "miss" };
        self.scoped(|| counter!(EVENT_READ_CACHE_TOTAL, "outcome" => outcome).increment(1));
    }

    /// A full events read too big to cache was streamed from the database.
    pub fn event_read_streamed(&self) {
        self.scoped(|| counter!(EVENT_READ_CACHE_TOTAL, "outcome" => "streamed").increment(1));
    }

    /// Sets the stream gauges.
    pub fn sse_gauges(&self, connections: usize, users: usize) {
        self.scoped(|| {
            gauge!(SSE_CONNECTIONS).set(connections as f64);
            gauge!(SSE_USERS).set(users as f64);
        });
    }

    /// Counts an upstream stream to a connected server opened (`1.0`) or ended (`-1.0`).
    pub fn federated_upstream(&self, delta: f64) {
        self.scoped(|| gauge!(FEDERATED_UPSTREAM_STREAMS).increment(delta));
    }

    /// Counts an upstream stream that ended or could not be opened.
    pub fn federated_upstream_failed(&self, reason: &'static str) {
        self.scoped(|| {
            counter!(FEDERATED_UPSTREAM_FAILURES_TOTAL, "reason" => reason).increment(1)
        });
    }

    /// Sets the open-connections gauge.
    pub fn http_connections(&self, open: usize) {
        self.scoped(|| gauge!(HTTP_CONNECTIONS).set(open as f64));
    }

    /// The listener closed or refused a connection for `reason`.
    pub fn http_connection_closed(&self, reason: &'static str) {
        self.scoped(|| counter!(HTTP_CONNECTIONS_CLOSED_TOTAL, "reason" => reason).increment(1));
    }

    /// A scheduled task's tick was skipped because its previous run was still active.
    pub fn task_skipped(&self, task: &'static str) {
        self.scoped(|| counter!(SCHEDULED_TASK_SKIPS_TOTAL, "task" => task).increment(1));
    }

    /// A provider sync step failed: `stage` is `discovery`, `account`, `push` or
    /// `scheduler`.
    pub fn sync_failed(&self, provider: &'static str, stage: &'static str) {
        self.scoped(|| {
            counter!(EXTERNAL_SYNC_FAILURES_TOTAL, "provider" => provider, "stage" => stage)
                .increment(1)
        });
    }

    /// Sets the outbox gauges of `provider`.
    pub fn outbox(&self, provider: &'static str, pending: i64, oldest_age_seconds: f64) {
        self.scoped(|| {
            gauge!(OUTBOX_PENDING, "provider" => provider).set(pending as f64);
            gauge!(OUTBOX_OLDEST_AGE_SECONDS, "provider" => provider).set(oldest_age_seconds);
        });
    }

    /// This instance took (`1.0`) or gave up (`-1.0`) an account's lease.
    pub fn provider_lease_held(&self, delta: f64) {
        self.scoped(|| gauge!(PROVIDER_LEASES_HELD).increment(delta));
    }

    /// A scheduled task's run finished with `outcome`.
    pub fn task_finished(&self, task: &'static str, outcome: &'static str) {
        self.scoped(|| {
            counter!(SCHEDULED_TASK_RUNS_TOTAL, "task" => task, "outcome" => outcome).increment(1)
        });
    }

    /// A message sent to an actor of `kind` at `sent` reached its handler now.
    pub fn actor_mailbox_wait(&self, kind: &'static str, sent: Instant) {
        let waited = sent.elapsed();
        self.scoped(|| {
            histogram!(ACTOR_MAILBOX_WAIT_SECONDS, "actor" => kind).record(waited.as_secs_f64());
        });
    }

    /// Sets the mail queue gauges: `pending` batches, the most overdue `overdue_seconds`
    /// past its due time.
    pub fn mail_queue(&self, pending: u64, overdue_seconds: f64) {
        self.scoped(|| {
            gauge!(MAIL_BATCHES_PENDING).set(pending as f64);
            gauge!(MAIL_OLDEST_BATCH_AGE_SECONDS).set(overdue_seconds);
        });
    }

    /// Sets the connection gauges of `pool` (one of [`DB_POOLS`]).
    pub fn db_pool(&self, pool: &'static str, in_use: u32, idle: u32) {
        self.scoped(|| {
            gauge!(DB_POOL_CONNECTIONS, "pool" => pool, "state" => "in_use").set(f64::from(in_use));
            gauge!(DB_POOL_CONNECTIONS, "pool" => pool, "state" => "idle").set(f64::from(idle));
        });
    }

    /// A transaction of `mode` (`read`, `write`) waited `elapsed` for its connection.
    pub fn db_acquired(&self, mode: &'static str, elapsed: Duration) {
        self.scoped(|| {
            histogram!(DB_POOL_ACQUIRE_SECONDS, "mode" => mode).record(elapsed.as_secs_f64());
        });
    }

    /// A write transaction held its connection for `held` ([`DB_WRITE_HOLD_SECONDS`]).
    pub fn db_write_held(&self, held: Duration) {
        self.scoped(|| histogram!(DB_WRITE_HOLD_SECONDS).record(held.as_secs_f64()));
    }

    /// One SQLite `COMMIT` committed `writes` write transactions ([`DB_COMMIT_WRITES`]).
    pub fn db_committed(&self, writes: usize) {
        self.scoped(|| histogram!(DB_COMMIT_WRITES).record(writes as f64));
    }

    /// The server dropped `count` stream connections for `reason` (one of
    /// [`SSE_DROP_REASONS`]).
    pub fn sse_dropped(&self, reason: &'static str, count: u64) {
        if count > 0 {
            self.scoped(|| counter!(SSE_DROPPED_TOTAL, "reason" => reason).increment(count));
        }
    }
}
