//! What a run measures: latency histograms (HdrHistogram, microseconds, 3 significant
//! digits), per-operation counters, answers by status, and the live counters the progress
//! line reads. Each worker records into its own [`Recorder`]; they are merged at the end.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::client::Reply;
use super::options::Op;

/// A latency distribution.
#[derive(Debug, Clone)]
pub struct Latencies {
    // `Histogram::new` fails only for more than 5 significant digits, so this is always
    // `Some`; an `Option` keeps that certainty out of the code's error paths.
    histogram: Option<Histogram<u64>>,
}

impl Default for Latencies {
    fn default() -> Self {
        Self::new()
    }
}

impl Latencies {
    /// An empty distribution (microseconds, 3 significant digits, 1 µs to an hour, growing
    /// beyond when needed).
    pub fn new() -> Self {
        let histogram =
            Histogram::new_with_bounds(1, 3_600_000_000, 3)
                .ok()
                .map(|mut histogram| {
                    histogram.auto(true);
                    histogram
                });
        Self { histogram }
    }

    /// Records one duration.
    pub fn record(&mut self, duration: Duration) {
        let micros = u64::try_from(duration.as_micros())
            .unwrap_or(u64::MAX)
            .max(1);
        if let Some(histogram) = &mut self.histogram
            && histogram.record(micros).is_err()
        {
            histogram.saturating_record(micros);
        }
    }

    /// Adds another distribution.
    pub fn merge(&mut self, other: &Self) {
        if let (Some(mine), Some(theirs)) = (&mut self.histogram, &other.histogram) {
            let _ = mine.add(theirs);
        }
    }

    /// How many were recorded.
    pub fn count(&self) -> u64 {
        self.histogram.as_ref().map_or(0, Histogram::len)
    }

    /// p50, p90, p99 and max in milliseconds.
    pub fn summary(&self) -> Summary {
        let at = |q: f64| {
            self.histogram
                .as_ref()
                .map_or(0.0, |h| h.value_at_quantile(q) as f64 / 1000.0)
        };
        Summary {
            count: self.count(),
            p50_ms: at(0.50),
            p90_ms: at(0.90),
            p99_ms: at(0.99),
            max_ms: self
                .histogram
                .as_ref()
                .map_or(0.0, |h| h.max() as f64 / 1000.0),
        }
    }
}

/// Percentiles of a distribution, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// One operation's counters.
#[derive(Debug, Clone, Default)]
pub struct OpStats {
    /// Acknowledged and applied.
    pub ok: u64,
    /// `409`: acknowledged, not applied (a newer revision existed).
    pub conflicts: u64,
    /// Anything else: 4xx, 5xx, transport errors.
    pub failed: u64,
    /// Latency of every answer.
    pub latency: Latencies,
}

/// How an answer counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Applied.
    Ok,
    /// A `409`.
    Conflict,
    /// A failure.
    Failed,
}

/// What one worker saw.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    /// Per operation.
    pub ops: BTreeMap<Op, OpStats>,
    /// Answers by status code (`0`: transport error).
    pub statuses: BTreeMap<u16, u64>,
    /// Descriptions of the first failures (at most [`Recorder::KEEP`]).
    pub failures: Vec<String>,
}

impl Recorder {
    /// How many failure descriptions are kept.
    pub const KEEP: usize = 20;

    /// Records `reply` to `op` as `outcome`; also counts it on `live`.
    pub fn record(&mut self, live: &Live, op: Op, reply: &Reply, outcome: Outcome) {
        let stats = self.ops.entry(op).or_default();
        stats.latency.record(reply.latency());
        let code = reply.status.map_or(0, |s| s.as_u16());
        *self.statuses.entry(code).or_default() += 1;
        live.requests.fetch_add(1, Ordering::Relaxed);
        if reply.is_server_error() {
            live.server_errors.fetch_add(1, Ordering::Relaxed);
        }
        match outcome {
            Outcome::Ok => stats.ok += 1,
            Outcome::Conflict => {
                stats.conflicts += 1;
                live.conflicts.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Failed => {
                stats.failed += 1;
                live.failures.fetch_add(1, Ordering::Relaxed);
                if self.failures.len() < Self::KEEP {
                    self.failures
                        .push(format!("{}: {}", op.name(), reply.describe()));
                }
            }
        }
    }

    /// Adds another worker's record.
    pub fn merge(&mut self, other: &Self) {
        for (op, stats) in &other.ops {
            let mine = self.ops.entry(*op).or_default();
            mine.ok += stats.ok;
            mine.conflicts += stats.conflicts;
            mine.failed += stats.failed;
            mine.latency.merge(&stats.latency);
        }
        for (code, count) in &other.statuses {
            *self.statuses.entry(*code).or_default() += count;
        }
        let room = Self::KEEP.saturating_sub(self.failures.len());
        self.failures
            .extend(other.failures.iter().take(room).cloned());
    }

    /// Answers of every kind (transport errors included).
    pub fn answers(&self) -> u64 {
        self.statuses.values().sum()
    }

    /// Answers with a 5xx status.
    pub fn server_errors(&self) -> u64 {
        self.statuses
            .iter()
            .filter(|(code, _)| **code >= 500)
            .map(|(_, count)| count)
            .sum()
    }

    /// Requests that failed in transport.
    pub fn transport_errors(&self) -> u64 {
        self.statuses.get(&0).copied().unwrap_or(0)
    }
}

/// Counters shared by all workers, for the progress line.
#[derive(Debug, Default)]
pub struct Live {
    /// Answers received.
    pub requests: AtomicU64,
    /// `409`s.
    pub conflicts: AtomicU64,
    /// Failed requests.
    pub failures: AtomicU64,
    /// 5xx answers.
    pub server_errors: AtomicU64,
    /// Frames received on all streams.
    pub frames: AtomicU64,
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_out_in_milliseconds_and_merge() {
        let mut a = Latencies::new();
        for ms in 1..=100 {
            a.record(Duration::from_millis(ms));
        }
        let mut b = Latencies::new();
        b.record(Duration::from_secs(2));
        b.record(Duration::from_nanos(10));
        a.merge(&b);
        let summary = a.summary();
        assert_eq!(summary.count, 102);
        assert!((summary.p50_ms - 50.0).abs() < 0.1, "{summary:?}");
        assert!((summary.max_ms - 2000.0).abs() < 2.0, "{summary:?}");
    }
}
