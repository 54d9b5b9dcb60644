//! The server's own figures, read from its metrics listener (`--metrics`): resident memory
//! (`svc_process_resident_memory_bytes`, or the original's `musubi_` one) before, during
//! (sampled, the peak kept) and after the load, the open stream count, and how long its
//! write transactions held their database connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;

use super::StressError;
use super::client::error_chain;

/// Open `/api/stream` connections.
#[cfg(test)]
pub const SSE_CONNECTIONS: &str = "svc_sse_connections";

/// The value of the unlabelled sample `name` in exposition `text`.
pub fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        let value = rest.strip_prefix(' ')?;
        value.split_whitespace().next()?.parse().ok()
    })
}

/// Reads `name` from the metrics listener at `url`.
pub async fn read(
    http: &reqwest::Client,
    url: &str,
    name: &'static str,
) -> Result<f64, StressError> {
    let text = exposition(http, url).await?;
    first_sample(&text, url, &[name]).map(|(value, _)| value)
}

/// The first of `names` that `text`, read from the listener at `url`, has, and which one
/// it was.
pub fn first_sample(
    text: &str,
    url: &str,
    names: &[&'static str],
) -> Result<(f64, &'static str), StressError> {
    names
        .iter()
        .find_map(|name| sample(text, name).map(|value| (value, *name)))
        .ok_or_else(|| {
            StressError::Client(format!("reading {url}: no {} sample", names.join(" or ")))
        })
}

/// The exposition text of the metrics listener at `url`.
pub async fn exposition(http: &reqwest::Client, url: &str) -> Result<String, StressError> {
    let failed = |why: String| StressError::Client(format!("reading {url}: {why}"));
    let response = http
        .get(url)
        .send()
        .await
        .map_err(|err| failed(error_chain(&err)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(format!("HTTP {}", status.as_u16())));
    }
    response
        .text()
        .await
        .map_err(|err| failed(error_chain(&err)))
}

/// Bowline's totals of its write transactions' holds of their connection and of its SQLite
/// commits (`svc_db_write_hold_seconds`, `svc_db_commit_writes`), at one reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteTotals {
    /// Seconds held, summed.
    pub held_seconds: f64,
    /// Write transactions.
    pub writes: f64,
    /// Writes committed, summed over the commits (SQLite).
    pub committed: f64,
    /// Commits (SQLite; 0 on PostgreSQL, where they are not counted).
    pub commits: f64,
}

impl WriteTotals {
    /// The totals in `text`, if it has them (the original's listener does not).
    pub fn read(text: &str) -> Option<Self> {
        Some(Self {
            held_seconds: sample(text, "svc_db_write_hold_seconds_sum")?,
            writes: sample(text, "svc_db_write_hold_seconds_count")?,
            committed: sample(text, "svc_db_commit_writes_sum").unwrap_or(0.0),
            commits: sample(text, "svc_db_commit_writes_count").unwrap_or(0.0),
        })
    }
}

/// Samples resident memory periodically and keeps the peak.
#[derive(Debug)]
pub struct Sampler {
    peak: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl Sampler {
    /// Starts sampling `name` at `url` every `every`.
    pub fn start(http: reqwest::Client, url: String, name: &'static str, every: Duration) -> Self {
        let peak = Arc::new(AtomicU64::new(0));
        let seen = peak.clone();
        let task = tokio::spawn(async move {
            let mut ticker = tokio::time::interval(every);
            loop {
                ticker.tick().await;
                if let Ok(bytes) = read(&http, &url, name).await {
                    seen.fetch_max(bytes as u64, Ordering::Relaxed);
                }
            }
        });
        Self { peak, task }
    }

    /// Stops sampling; the peak in bytes.
    pub fn stop(self) -> f64 {
        self.task.abort();
        self.peak.load(Ordering::Relaxed) as f64
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Bytes as MiB.
pub fn mib(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_found_by_their_exact_unlabelled_name() {
        let text = "# TYPE svc_process_resident_memory_bytes gauge\n\
                    svc_process_resident_memory_bytes_total 1\n\
                    svc_process_resident_memory_bytes 31457280\n\
                    svc_sse_connections{x=\"y\"} 3\nsvc_sse_connections 1000\n";
        assert_eq!(
            sample(text, crate::wire::BOWLINE_RESIDENT_MEMORY),
            Some(31_457_280.0)
        );
        assert_eq!(sample(text, SSE_CONNECTIONS), Some(1000.0));
        assert_eq!(sample(text, "svc_missing"), None);
        assert_eq!(mib(31_457_280.0), 30.0);
    }

    #[test]
    fn write_totals_need_the_hold_and_take_commits_where_counted() {
        let sqlite = "svc_db_write_hold_seconds_sum 1.5\n\
                      svc_db_write_hold_seconds_count 1000\n\
                      svc_db_commit_writes_sum 1000\nsvc_db_commit_writes_count 400\n";
        assert_eq!(
            WriteTotals::read(sqlite),
            Some(WriteTotals {
                held_seconds: 1.5,
                writes: 1000.0,
                committed: 1000.0,
                commits: 400.0,
            })
        );
        let postgres = "svc_db_write_hold_seconds_sum 2\nsvc_db_write_hold_seconds_count 10\n";
        assert_eq!(WriteTotals::read(postgres).map(|t| t.commits), Some(0.0));
        assert_eq!(WriteTotals::read("musubi_x 1\n"), None);
    }
}
