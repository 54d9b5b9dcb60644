//! Request throughput over a fixed number of keep-alive connections (`--connections`, one
//! worker each, every worker with its own single-connection client), for `--duration`:
//! `create` posts new events (spread over `--calendars` calendars that every user edits)
//! and checks at the end that the full read lists exactly the acknowledged ones; `list`
//! first creates `--events` events, then reads them all, checking each answer. With several
//! bases, setup and the final read go through the first, worker `n` through base `n` mod
//! the number of bases.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use reqwest::{Method, StatusCode};
use uuid::Uuid;

use super::{ServerProbe, run_tag};
use crate::StressError;
use crate::client::{Bases, Client, Pool, User};
use crate::options::{Op, Options, Scenario};
use crate::progress::Console;
use crate::report::{BaseFigures, Report};
use crate::setup::{self, Layout, Role, Sharing};
use crate::stats::{Live, Outcome, Recorder};
use crate::verify::{self, Check, Problems};
use crate::writers::event_body;

/// `list` parses every answer fully once in this many (the others are compared by length).
const PARSE_EVERY: u64 = 64;

/// What one worker needs.
struct Worker {
    client: Client,
    user: User,
    calendar: Uuid,
    deadline: Instant,
    live: Arc<Live>,
    events: usize,
}

/// What one worker did.
#[derive(Default)]
struct Done {
    record: Recorder,
    created: Vec<Uuid>,
    problems: Problems,
}

/// Runs `create` or `list`.
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
    let mut layout = Layout::plan(
        users.len(),
        options.calendars(),
        Sharing::Everyone(Role::Editor),
    );
    setup::calendars(&client, &users, &mut layout, &tag).await?;
    let first = users
        .first()
        .ok_or_else(|| StressError::Invalid("no users".into()))?;
    if options.scenario == Scenario::List {
        console.note(&format!("creating {} events to read", options.events));
        seed_events(&client, first, layout.calendars[0], options.events).await?;
    }
    let mut notes = Vec::new();
    let metrics = options.metrics.as_deref();
    let mut memory = ServerProbe::start(&client, metrics, options.wire, &mut notes).await?;
    let live = Arc::new(Live::default());
    let started = Instant::now();
    let started_at = bowline::domain::time::format_timestamp(chrono::Utc::now());
    let deadline = started + options.duration;
    let mut workers = Vec::new();
    let mut worker_bases = Vec::new();
    for n in 0..options.connections() {
        worker_bases.push(bases.index(n));
        workers.push(Worker {
            client: Client::new(bases.nth(n).base(), Pool::Single)?,
            user: users[n % users.len()].clone(),
            calendar: layout.calendars[n % layout.calendars.len()],
            deadline,
            live: live.clone(),
            events: options.events,
        });
    }
    if let Some(memory) = &mut memory {
        memory.sample();
    }
    let label = if options.scenario == Scenario::List {
        "list"
    } else {
        "create"
    };
    let progress = console.progress(label, live.clone(), Some(options.duration));
    let handles: Vec<_> = workers
        .into_iter()
        .map(|worker| match options.scenario {
            Scenario::List => tokio::spawn(list(worker)),
            _ => tokio::spawn(create(worker)),
        })
        .collect();
    let mut record = Recorder::default();
    let mut created = HashSet::new();
    let mut problems = Problems::default();
    let mut per_worker = Vec::new();
    for (handle, base) in handles.into_iter().zip(worker_bases) {
        let done = handle
            .await
            .map_err(|err| StressError::Invalid(format!("a worker stopped: {err}")))?;
        record.merge(&done.record);
        per_worker.push((base, done.record.answers()));
        created.extend(done.created);
        problems.extend(done.problems);
    }
    let elapsed = started.elapsed();
    progress.stop();
    let (memory, writes) = match memory {
        Some(memory) => {
            let (memory, writes) = memory.finish(None, elapsed).await;
            (Some(memory), writes)
        }
        None => (None, None),
    };

    console.note("verifying");
    let mut checks = verify::answers(&record, options.wire);
    if options.scenario == Scenario::List {
        checks.push(Check::from_problems(
            "every read returned every event",
            &problems,
            format!("{} events per read", options.events),
        ));
    } else {
        checks.push(listed_exactly(&client, first, &created).await);
    }
    let passed = verify::all_passed(&checks);
    Ok(Report {
        scenario: options.scenario,
        wire: options.wire,
        bases: BaseFigures::rows(bases.urls(), per_worker, []),
        started_at,
        seconds: elapsed.as_secs_f64(),
        users: users.len(),
        calendars: layout.calendars.len(),
        workers: options.connections(),
        streams: 0,
        operations: Report::operations(&record, elapsed),
        broadcast: None,
        memory,
        writes,
        statuses: Report::statuses(&record),
        checks,
        notes,
        passed,
    })
}

async fn create(worker: Worker) -> Done {
    let mut done = Done::default();
    let calendars = [worker.calendar];
    let mut n = 0_u64;
    while Instant::now() < worker.deadline {
        n += 1;
        let id = Uuid::new_v4();
        let body = event_body(id, &calendars, &format!("load {n}"));
        let request = worker
            .client
            .request(Method::POST, "/api/v1/events", &worker.user);
        let reply = worker.client.call(request.json(&body)).await;
        if reply.is(StatusCode::CREATED) {
            done.created.push(id);
            done.record
                .record(&worker.live, Op::Create, &reply, Outcome::Ok);
        } else {
            done.record
                .record(&worker.live, Op::Create, &reply, Outcome::Failed);
        }
    }
    done
}

async fn list(worker: Worker) -> Done {
    let mut done = Done::default();
    let mut length = None;
    let mut n = 0_u64;
    while Instant::now() < worker.deadline {
        let request = worker
            .client
            .request(Method::GET, "/api/v1/events", &worker.user);
        let reply = worker.client.call(request).await;
        if !reply.is(StatusCode::OK) {
            done.record
                .record(&worker.live, Op::List, &reply, Outcome::Failed);
            continue;
        }
        done.record
            .record(&worker.live, Op::List, &reply, Outcome::Ok);
        if length.is_none() || n.is_multiple_of(PARSE_EVERY) {
            let count = reply
                .json()
                .and_then(|b| b["events"].as_array().map(Vec::len));
            if count != Some(worker.events) {
                done.problems.push(format!(
                    "a read listed {} events, not {}",
                    count.map_or("no".into(), |c| c.to_string()),
                    worker.events
                ));
            }
            length.get_or_insert(reply.body.len());
        } else if length != Some(reply.body.len()) {
            done.problems.push(format!(
                "a read was {} bytes long, the first {} bytes",
                reply.body.len(),
                length.unwrap_or_default()
            ));
        }
        n += 1;
    }
    done
}

/// Creates `count` events in `calendar` as `user`.
async fn seed_events(
    client: &Client,
    user: &User,
    calendar: Uuid,
    count: usize,
) -> Result<(), StressError> {
    stream::iter(0..count)
        .map(|n| async move {
            let body = event_body(Uuid::new_v4(), &[calendar], &format!("listed {n}"));
            let request = client
                .request(Method::POST, "/api/v1/events", user)
                .json(&body);
            client
                .call(request)
                .await
                .expect_json(StatusCode::CREATED, "creating an event to list")
                .map(|_| ())
        })
        .buffer_unordered(8)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// The full read of `user` lists exactly the acknowledged creates.
async fn listed_exactly(client: &Client, user: &User, created: &HashSet<Uuid>) -> Check {
    let name = "the full read lists exactly the acknowledged creates";
    let mut problems = Problems::default();
    let reply = client
        .call(
            client
                .request(Method::GET, "/api/v1/events", user)
                .timeout(Duration::from_secs(300)),
        )
        .await;
    match reply.expect_json(StatusCode::OK, "the final read") {
        Ok(read) => {
            let listed: HashSet<Uuid> = read["events"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["id"].as_str().and_then(|id| Uuid::parse_str(id).ok()))
                .collect();
            for id in created.difference(&listed) {
                problems.push(format!("acknowledged event {id} is missing"));
            }
            for id in listed.difference(created) {
                problems.push(format!("event {id} was never acknowledged"));
            }
        }
        Err(err) => problems.push(err.to_string()),
    }
    Check::from_problems(name, &problems, format!("{} events", created.len()))
}
