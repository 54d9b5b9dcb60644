//! Stream fan-out: `--users` users join one calendar, `--connections` streams are opened
//! over them (round robin), the server's resident memory is sampled for its peak until the
//! end, then `--broadcasts` events are created one after another; for each, the time from
//! the create's answer to the frame's arrival at the last connection. Every connection must
//! receive every broadcast exactly once and stay open.
//!
//! The growth per stream is read over the second half of the streams: memory the server
//! kept from setting up (the sign-ups' password hashing) goes back to the system once it is
//! busy again, which happens while the first half opens, and would otherwise be taken off
//! the streams' share.
//!
//! With several bases, setup goes through the first, stream `n` and broadcast `n` through
//! base `n` mod the number of bases (so a broadcast reaches the streams of the other
//! instances too). The setup phase is settled on the streams before the broadcasts
//! ([`super::settle`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use uuid::Uuid;

use super::{ServerProbe, StreamGrowth, open_streams, run_tag, settle};
use crate::client::{Bases, Pool};
use crate::model::Model;
use crate::options::{Op, Options};
use crate::progress::Console;
use crate::report::{BaseFigures, BroadcastFigures, Report};
use crate::setup::{self, Layout, Role, Sharing};
use crate::sse::{FrameKey, Hub};
use crate::stats::{Live, Outcome, Recorder};
use crate::verify::FrameLatency;
use crate::writers::event_body;
use crate::{StressError, verify};

/// Runs the fan-out scenario.
pub async fn run(options: &Options) -> Result<Report, StressError> {
    let console = Console::new(options.quiet);
    let bases = Bases::new(&options.bases, Pool::Shared)?;
    let client = bases.first().clone();
    let tag = run_tag();
    let count = options.connections();
    console.note(&format!(
        "setting up {} users on one calendar (run {tag})",
        options.users()
    ));
    let note = |text: String| console.note(&text);
    let users = setup::users(&client, options.users(), &tag, &note).await?;
    let mut layout = Layout::plan(users.len(), 1, Sharing::Everyone(Role::Viewer));
    setup::calendars(&client, &users, &mut layout, &tag).await?;
    let calendar = layout.calendars[0];
    let owner = users
        .first()
        .ok_or_else(|| StressError::Invalid("no users".into()))?;
    let mut notes = Vec::new();
    let metrics = options.metrics.as_deref();
    let mut memory = ServerProbe::start(&client, metrics, options.wire, &mut notes).await?;
    if let Some(memory) = &mut memory {
        memory.sample();
    }

    console.note(&format!("opening {count} streams"));
    let live = Arc::new(Live::default());
    let hub = Arc::new(Hub::new(live.clone(), options.wire));
    let streams = Bases::new(&options.bases, Pool::Streams)?;
    let half = count / 2;
    let mut connections = open_streams(&streams, &users, 0..half, &hub).await?;
    let at_half = match &memory {
        Some(memory) => Some(memory.now().await?),
        None => None,
    };
    connections.extend(open_streams(&streams, &users, half..count, &hub).await?);
    let growth = match (&memory, at_half) {
        (Some(memory), Some(before)) => Some(StreamGrowth {
            // `--metrics` is the first base's: only its streams count.
            streams: (half..count).filter(|n| streams.index(*n) == 0).count(),
            before,
            after: memory.now().await?,
        }),
        _ => None,
    };

    let mut model = Model::new(Arc::new(layout));
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
    console.note(&format!(
        "{} broadcasts to {count} streams",
        options.broadcasts
    ));
    let mut record = Recorder::default();
    let mut per_broadcast = Vec::new();
    let mut last = FrameLatency::default();
    let progress = console.progress("fanout", live.clone(), None);
    let started = Instant::now();
    let started_at = bowline::domain::time::format_timestamp(chrono::Utc::now());
    for n in 0..options.broadcasts {
        let id = Uuid::new_v4();
        let body = event_body(id, &[calendar], &format!("broadcast {n}"));
        let through = bases.nth(n);
        let request = through.request(Method::POST, "/api/v1/events", owner);
        let reply = through.call(request.json(&body)).await;
        per_broadcast.push((bases.index(n), 1));
        let Some(mark) = reply.event_mark(StatusCode::CREATED, options.wire) else {
            record.record(&live, Op::Create, &reply, Outcome::Failed);
            model.taint(id);
            continue;
        };
        record.record(&live, Op::Create, &reply, Outcome::Ok);
        let key = FrameKey::Created(id, mark.clone());
        model.created(id, 0, format!("broadcast {n}"), mark, (&reply).into());
        let deadline = Instant::now() + options.frame_wait;
        let target = (count * (n + 1)) as u64;
        hub.wait_until(deadline, target, || {
            hub.total() >= target || connections.iter().any(|c| c.ended().is_some())
        })
        .await;
        let arrivals: Option<Vec<Instant>> = connections.iter().map(|c| c.arrival(&key)).collect();
        if let Some(latest) = arrivals.and_then(|a| a.into_iter().max()) {
            last.from_answer
                .record(latest.saturating_duration_since(reply.done));
            last.from_request
                .record(latest.saturating_duration_since(reply.sent));
        }
    }
    let elapsed = started.elapsed();
    progress.stop();
    let (memory, writes) = match memory {
        Some(memory) => {
            let (memory, writes) = memory.finish(growth, elapsed).await;
            (Some(memory), writes)
        }
        None => (None, None),
    };

    let mut latency = FrameLatency::default();
    let (frame_checks, frames) =
        verify::frames(&model, &connections, started, &mut latency, options.wire);
    let mut checks = verify::answers(&record, options.wire);
    checks.extend(frame_checks);
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
        bases: BaseFigures::rows(bases.urls(), per_broadcast, per_stream),
        started_at,
        seconds: elapsed.as_secs_f64(),
        users: users.len(),
        calendars: 1,
        workers: 1,
        streams: connections.len(),
        operations: Report::operations(&record, elapsed.max(Duration::from_millis(1))),
        broadcast: Some(BroadcastFigures {
            connections: connections.len(),
            frames,
            latency: latency.from_answer.summary(),
            latency_from_request: latency.from_request.summary(),
            last_connection: Some(last.from_answer.summary()),
            last_connection_from_request: Some(last.from_request.summary()),
        }),
        memory,
        writes,
        statuses: Report::statuses(&record),
        checks,
        notes,
        passed,
    })
}
