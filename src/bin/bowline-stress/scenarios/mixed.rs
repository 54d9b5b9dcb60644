//! The default scenario: users, shared calendars and memberships; with `--sse` every user
//! holds a stream; `--writers` writers run the op mix against the same calendars for
//! `--duration`; then a barrier (one new event per calendar, whose frame each member
//! receives after every earlier frame, since a user's frames leave in order) and a wait for
//! every expected frame, bounded by `--frame-wait`; then the verification (exact on
//! Bowline's wire; on the original's, the checks say which are weakened or skipped).
//!
//! With several bases, setup goes through the first; writer `w`, and user `u`'s stream and
//! reads, go through base `w` (`u`) mod the number of bases. With `--sse` the setup phase
//! is settled on the streams before the writers start ([`super::settle`]).

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use reqwest::{Method, StatusCode};
use uuid::Uuid;

use super::{ServerProbe, open_streams, run_tag, settle, since_marks};
use crate::client::{Bases, Client, Pool, User};
use crate::model::Model;
use crate::options::{Op, Options};
use crate::progress::Console;
use crate::report::{BaseFigures, BroadcastFigures, Report};
use crate::setup::{self, Layout, Sharing};
use crate::sse::{Connection, Hub};
use crate::stats::{Live, Outcome, Recorder};
use crate::verify::FrameLatency;
use crate::wire::Wire;
use crate::writers::{self, Writers, event_body};
use crate::{StressError, verify};

/// Runs the mixed scenario.
pub async fn run(options: &Options) -> Result<Report, StressError> {
    let console = Console::new(options.quiet);
    let bases = Bases::new(&options.bases, Pool::Shared)?;
    let client = bases.first().clone();
    let tag = run_tag();
    console.note(&format!(
        "setting up {} users and {} calendars (run {tag})",
        options.users(),
        options.calendars()
    ));
    let note = |text: String| console.note(&text);
    let users = setup::users(&client, options.users(), &tag, &note).await?;
    let mut layout = Layout::plan(users.len(), options.calendars(), Sharing::Spread);
    setup::calendars(&client, &users, &mut layout, &tag).await?;
    let since = since_marks(&bases, &users).await?;
    let live = Arc::new(Live::default());
    let hub = Arc::new(Hub::new(live.clone(), options.wire));
    let connections = if options.sse {
        let streams = Bases::new(&options.bases, Pool::Streams)?;
        open_streams(&streams, &users, 0..users.len(), &hub).await?
    } else {
        Vec::new()
    };
    let mut notes = Vec::new();
    let layout = Arc::new(layout);
    let mut model = Model::new(layout.clone());
    if options.sse {
        console.note("settling the setup's frames on every stream");
        let wait = options.frame_wait;
        settle(
            &client,
            &users,
            &mut model,
            &connections,
            &hub,
            wait,
            &mut notes,
        )
        .await?;
    }
    let metrics = options.metrics.as_deref();
    let mut memory = ServerProbe::start(&client, metrics, options.wire, &mut notes).await?;
    let model = Arc::new(Mutex::new(model));
    let seed = options.seed.unwrap_or_else(rand::random);
    console.note(&format!(
        "{} writers for {} (seed {seed})",
        options.writers,
        humantime::format_duration(options.duration)
    ));

    let started = Instant::now();
    let started_at = bowline::domain::time::format_timestamp(chrono::Utc::now());
    let shared = Arc::new(Writers {
        bases: bases.clone(),
        users: users.clone(),
        model: model.clone(),
        mix: options.mix.clone(),
        live: live.clone(),
        deadline: started + options.duration,
        wire: options.wire,
    });
    if let Some(memory) = &mut memory {
        memory.sample();
    }
    let progress = console.progress("mixed", live.clone(), Some(options.duration));
    let handles: Vec<_> = (0..options.writers)
        .map(|number| tokio::spawn(writers::run(shared.clone(), number, seed)))
        .collect();
    let mut record = Recorder::default();
    let mut per_writer = Vec::new();
    for (number, handle) in handles.into_iter().enumerate() {
        let writer = handle
            .await
            .map_err(|err| StressError::Invalid(format!("a writer stopped: {err}")))?;
        record.merge(&writer);
        per_writer.push((bases.index(number), writer.answers()));
    }
    let elapsed = started.elapsed();
    progress.stop();
    drop(shared);
    let mut model = Arc::try_unwrap(model)
        .map_err(|_| StressError::Invalid("the writers still hold the model".into()))?
        .into_inner();

    let mut after = Recorder::default();
    if options.sse {
        console.note("waiting for the last frames");
        barrier(&client, &users, &mut model, &live, &mut after, options.wire).await;
        let deadline = Instant::now() + options.frame_wait;
        let expected = expected_counts(&model, users.len());
        let total: usize = connections
            .iter()
            .map(|c| expected.get(c.user).copied().unwrap_or(0))
            .sum();
        hub.wait_until(deadline, total as u64, || {
            all_arrived(&connections, &expected)
        })
        .await;
    }
    let (memory, writes) = match memory {
        Some(memory) => {
            let (memory, writes) = memory.finish(None, elapsed).await;
            (Some(memory), writes)
        }
        None => (None, None),
    };

    console.note("verifying");
    let mut everything = record.clone();
    everything.merge(&after);
    let mut checks = verify::answers(&everything, options.wire);
    checks.extend(verify::revisions(&model, options.wire));
    checks.extend(verify::reads(&bases, &users, &model, &since, options.wire).await);
    let broadcast = options.sse.then(|| {
        let mut latency = FrameLatency::default();
        let (frame_checks, frames) =
            verify::frames(&model, &connections, started, &mut latency, options.wire);
        checks.extend(frame_checks);
        BroadcastFigures {
            connections: connections.len(),
            frames,
            latency: latency.from_answer.summary(),
            latency_from_request: latency.from_request.summary(),
            last_connection: None,
            last_connection_from_request: None,
        }
    });
    let per_stream: Vec<(usize, u64)> = connections
        .iter()
        .map(|c| (c.base, c.frame_count() as u64))
        .collect();
    for connection in &connections {
        connection.close();
    }
    let passed = verify::all_passed(&checks);
    Ok(Report {
        scenario: options.scenario,
        wire: options.wire,
        bases: BaseFigures::rows(bases.urls(), per_writer, per_stream),
        started_at,
        seconds: elapsed.as_secs_f64(),
        users: users.len(),
        calendars: layout.calendars.len(),
        workers: options.writers,
        streams: connections.len(),
        operations: Report::operations(&record, elapsed),
        broadcast,
        memory,
        writes,
        statuses: Report::statuses(&everything),
        checks,
        notes,
        passed,
    })
}

/// One new event per calendar, created by its owner after every writer stopped: its frame
/// reaches each member after all earlier frames.
async fn barrier(
    client: &Client,
    users: &[User],
    model: &mut Model,
    live: &Live,
    record: &mut Recorder,
    wire: Wire,
) {
    let calendars = model.layout().calendars.clone();
    let owners = model.layout().owners.clone();
    for (index, (calendar, owner)) in calendars.iter().zip(owners).enumerate() {
        let Some(owner) = users.get(owner) else {
            continue;
        };
        let id = Uuid::new_v4();
        let body = event_body(id, &[*calendar], "barrier");
        let request = client.request(Method::POST, "/api/v1/events", owner);
        let reply = client.call(request.json(&body)).await;
        match reply.event_mark(StatusCode::CREATED, wire) {
            Some(mark) => {
                model.created(id, index, "barrier".into(), mark, (&reply).into());
                record.record(live, Op::Create, &reply, Outcome::Ok);
            }
            None => {
                model.taint(id);
                record.record(live, Op::Create, &reply, Outcome::Failed);
            }
        }
    }
}

/// How many frames each user must receive.
fn expected_counts(model: &Model, users: usize) -> Vec<usize> {
    let mut counts = vec![0; users];
    for frame in model.frames() {
        for user in &frame.users {
            if let Some(count) = counts.get_mut(*user) {
                *count += 1;
            }
        }
    }
    counts
}

/// Whether every open connection has received as many frames as its user must (a missing
/// frame keeps the wait going until the deadline; a duplicate is caught by verification).
fn all_arrived(connections: &[Connection], expected: &[usize]) -> bool {
    connections.iter().all(|c| {
        c.ended().is_some() || c.frame_count() >= expected.get(c.user).copied().unwrap_or(0)
    })
}
