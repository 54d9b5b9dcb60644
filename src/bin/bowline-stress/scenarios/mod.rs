//! The scenarios, one per kind of README figure: [`mixed`] (concurrent writers with
//! verification), [`throughput`] (`create` and `list`: requests per second over N
//! connections), [`fanout`] (broadcast latency to the last of N streams, memory per
//! stream). This module holds what they share.

pub mod fanout;
pub mod mixed;
pub mod throughput;

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use reqwest::{Method, StatusCode};

use super::StressError;
use super::client::{Bases, Client, User};
use super::model::Model;
use super::report::{MemoryFigures, WriteFigures};
use super::server_metrics::{self, Sampler, WriteTotals, mib};
use super::sse::{Connection, FrameKey, Hub};
use super::wire::Wire;
use super::writers::event_body;

/// Streams opened at once.
const PARALLEL_OPENS: usize = 64;

/// A tag unique to this run, for email addresses and names.
pub fn run_tag() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()
}

/// Each user's `serverTime` of a first read (the `since` of the final delta read), read
/// through the user's base (as the final reads are); fails unless every user starts with no
/// events.
pub async fn since_marks(bases: &Bases, users: &[User]) -> Result<Vec<String>, StressError> {
    stream::iter(users)
        .map(|user| async move {
            let client = bases.nth(user.index);
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

/// Opens the streams numbered `numbers`, the `n`th as `users[n % users.len()]` through
/// base `n % bases.len()`.
pub async fn open_streams(
    bases: &Bases,
    users: &[User],
    numbers: Range<usize>,
    hub: &Arc<Hub>,
) -> Result<Vec<Connection>, StressError> {
    if users.is_empty() {
        return Ok(Vec::new());
    }
    stream::iter(numbers)
        .map(|n| {
            let user = &users[n % users.len()];
            Connection::open(bases.nth(n), bases.index(n), user, hub.clone())
        })
        .buffered(PARALLEL_OPENS)
        .try_collect()
        .await
}

/// Ends the setup phase on the streams. Streams are opened once setup (through the first
/// base) is done, but a server may hand its streams a change's frames a moment after it
/// answered: on PostgreSQL frames go through the database, so another instance gets all of
/// them a few milliseconds late, and even the instance that made the change those not
/// carried by an event write (`calendar_updated` of the joins). So a stream may still
/// receive frames of the setup. The owner of each calendar creates one event through the
/// first base: every instance hands its streams frames in commit order, so once a
/// connection has received those of its user's calendars, every setup frame it will get
/// has arrived. Then each connection forgets what it received and `model` the frames it
/// expected (the events stay, and are read back at the end). Within `wait`; past it,
/// nothing is forgotten (the checks then name the frames that did not arrive and those of
/// the setup) and `notes` says so, as it does for a create without a clear answer.
pub async fn settle(
    client: &Client,
    users: &[User],
    model: &mut Model,
    connections: &[Connection],
    hub: &Hub,
    wait: Duration,
    notes: &mut Vec<String>,
) -> Result<(), StressError> {
    let wire = hub.wire();
    // Counted before the marks are created: a mark's frames may arrive before its answer,
    // and a count taken after them would wait for frames that already came.
    let frames_before = hub.total();
    let calendars = model.layout().calendars.clone();
    let owners = model.layout().owners.clone();
    let mut marks: Vec<(FrameKey, Vec<usize>)> = Vec::new();
    for (index, (calendar, owner)) in calendars.iter().zip(owners).enumerate() {
        let owner = users
            .get(owner)
            .ok_or_else(|| StressError::Invalid(format!("no user {owner}")))?;
        let id = uuid::Uuid::new_v4();
        let title = format!("setup done {index}");
        let body = event_body(id, &[*calendar], &title);
        let request = client.request(Method::POST, "/api/v1/events", owner);
        let reply = client.call(request.json(&body)).await;
        let Some(mark) = reply.event_mark(StatusCode::CREATED, wire) else {
            // Left out of the checks, as a writer's unclear answer is; a setup frame that
            // arrives later is then reported as unexpected.
            model.taint(id);
            notes.push(format!(
                "the event that ends the setup in calendar {index} was not acknowledged ({}): \
                 its members' streams may still receive setup frames",
                reply.describe()
            ));
            continue;
        };
        marks.push((FrameKey::Created(id, mark.clone()), model.readers(&[index])));
        model.created(id, index, title, mark, (&reply).into());
    }
    let expected: u64 = marks.iter().map(|(_, users)| users.len() as u64).sum();
    let received = |connection: &Connection| {
        connection.ended().is_some()
            || marks
                .iter()
                .filter(|(_, users)| users.binary_search(&connection.user).is_ok())
                .all(|(key, _)| connection.arrival(key).is_some())
    };
    let deadline = Instant::now() + wait;
    let settled = hub
        .wait_until(deadline, frames_before + expected, || {
            connections.iter().all(received)
        })
        .await;
    if settled {
        for connection in connections {
            connection.forget_received();
        }
        model.forget_frames();
    } else {
        notes.push(format!(
            "the setup's frames had not settled on every stream after {} (the frame check \
             names what was missing and what arrived)",
            humantime::format_duration(wait)
        ));
    }
    Ok(())
}

/// Reads the server's metrics around a load: its resident memory before, during and after,
/// and its write totals before and after.
#[derive(Debug)]
pub struct ServerProbe {
    http: reqwest::Client,
    url: String,
    /// The sample the listener has (the wire's names are tried in order).
    name: &'static str,
    baseline: f64,
    sampler: Option<Sampler>,
    /// The server's write totals at the baseline (Bowline's listener has them).
    writes: Option<WriteTotals>,
}

impl ServerProbe {
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
        let read = server_metrics::exposition(&http, url)
            .await
            .and_then(|text| {
                let (baseline, name) = server_metrics::first_sample(&text, url, names)?;
                Ok((baseline, name, WriteTotals::read(&text)))
            });
        let (baseline, name, writes) = match read {
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
            writes,
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

    /// Ends the probe: baseline, peak, end, and the growth per stream of `growth`; and how
    /// long the server's writes held the database over the `load` (from the baseline, so
    /// writes before or after the load but since the baseline count too).
    pub async fn finish(
        self,
        growth: Option<StreamGrowth>,
        load: Duration,
    ) -> (MemoryFigures, Option<WriteFigures>) {
        let text = server_metrics::exposition(&self.http, &self.url).await.ok();
        let end = text
            .as_deref()
            .and_then(|text| server_metrics::sample(text, self.name))
            .unwrap_or(0.0);
        let writes = self
            .writes
            .zip(text.as_deref().and_then(WriteTotals::read))
            .and_then(|(before, after)| WriteFigures::between(before, after, load));
        let peak = self.sampler.map_or(0.0, Sampler::stop).max(end);
        let memory = MemoryFigures {
            baseline_mib: mib(self.baseline),
            peak_mib: mib(peak),
            end_mib: mib(end),
            per_stream_kib: growth
                .filter(|growth| growth.streams > 0)
                .map(|growth| (growth.after - growth.before) / 1024.0 / growth.streams as f64),
        };
        (memory, writes)
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
