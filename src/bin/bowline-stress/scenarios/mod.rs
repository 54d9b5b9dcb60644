//! The scenarios, one per kind of README figure: [`mixed`] (concurrent writers with
//! verification), [`throughput`] (`create` and `list`: requests per second over N
//! connections), [`fanout`] (broadcast latency to the last of N streams, memory per
//! stream). This module holds what they share.

pub mod fanout;
pub mod mixed;
pub mod throughput;

use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt, stream};
use reqwest::{Method, StatusCode};

use super::StressError;
use super::client::{Client, User};
use super::report::MemoryFigures;
use super::server_metrics::{self, Sampler, mib};
use super::sse::{Connection, Hub};
use super::wire::Wire;

/// Streams opened at once.
const PARALLEL_OPENS: usize = 64;

/// A tag unique to this run, for email addresses and names.
pub fn run_tag() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()
}

/// Each user's `serverTime` of a first read (the `since` of the final delta read); fails
/// unless every user starts with no events.
pub async fn since_marks(client: &Client, users: &[User]) -> Result<Vec<String>, StressError> {
    stream::iter(users)
        .map(|user| async move {
            let reply = client
                .call(client.request(Method::GET, "/api/v1/events", user))
                .await;
            let read = reply.expect_json(StatusCode::OK, "the first read of events")?;
            if read["events"]
                .as_array()
                .is_none_or(|events| !events.is_empty())
            {
                return Err(StressError::Invalid(
                    "a new user already sees events".into(),
                ));
            }
            read["serverTime"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| StressError::Invalid("a read has no serverTime".into()))
        })
        .buffered(8)
        .try_collect()
        .await
}

/// Opens `count` streams, the `n`th as `users[n % users.len()]`.
pub async fn open_streams(
    client: &Client,
    users: &[User],
    count: usize,
    hub: &Arc<Hub>,
) -> Result<Vec<Connection>, StressError> {
    if users.is_empty() {
        return Ok(Vec::new());
    }
    stream::iter(0..count)
        .map(|n| Connection::open(client, &users[n % users.len()], hub.clone()))
        .buffered(PARALLEL_OPENS)
        .try_collect()
        .await
}

/// Reads the server's resident memory before, during and after a load.
#[derive(Debug)]
pub struct MemoryProbe {
    http: reqwest::Client,
    url: String,
    /// The sample the listener has (the wire's names are tried in order).
    name: &'static str,
    baseline: f64,
    sampler: Option<Sampler>,
}

impl MemoryProbe {
    /// Takes the baseline from `url` (when given). On Bowline's wire a listener that cannot
    /// be read fails the run; on the original's, whose listener may be absent or name its
    /// samples otherwise, the memory is left unmeasured and `notes` says why.
    pub async fn start(
        client: &Client,
        url: Option<&str>,
        wire: Wire,
        notes: &mut Vec<String>,
    ) -> Result<Option<Self>, StressError> {
        let Some(url) = url else {
            return Ok(None);
        };
        let http = client.http().clone();
        let names = wire.resident_memory_samples();
        let (baseline, name) = match server_metrics::read_first(&http, url, names).await {
            Ok(found) => found,
            Err(err) if !wire.requires_metrics() => {
                notes.push(format!("server memory not measured: {err}"));
                return Ok(None);
            }
            Err(err) => return Err(err),
        };
        Ok(Some(Self {
            http,
            url: url.to_owned(),
            name,
            baseline,
            sampler: None,
        }))
    }

    /// Starts sampling the peak (during the load).
    pub fn sample(&mut self) {
        self.sampler = Some(Sampler::start(
            self.http.clone(),
            self.url.clone(),
            self.name,
            Duration::from_millis(250),
        ));
    }

    /// The current reading, in bytes.
    pub async fn now(&self) -> Result<f64, StressError> {
        server_metrics::read(&self.http, &self.url, self.name).await
    }

    /// Ends the probe: baseline, peak, end, and the growth per stream of `growth`.
    pub async fn finish(self, growth: Option<StreamGrowth>) -> MemoryFigures {
        let end = self.now().await.unwrap_or(0.0);
        let peak = self.sampler.map_or(0.0, Sampler::stop).max(end);
        MemoryFigures {
            baseline_mib: mib(self.baseline),
            peak_mib: mib(peak),
            end_mib: mib(end),
            per_stream_kib: growth
                .filter(|growth| growth.streams > 0)
                .map(|growth| (growth.after - growth.before) / 1024.0 / growth.streams as f64),
        }
    }
}

/// The server's resident memory (bytes) before and after `streams` more streams opened.
#[derive(Debug, Clone, Copy)]
pub struct StreamGrowth {
    /// How many streams were opened between the two readings.
    pub streams: usize,
    /// The reading before.
    pub before: f64,
    /// The reading after.
    pub after: f64,
}
