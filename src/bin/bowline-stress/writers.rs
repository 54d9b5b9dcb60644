//! The mixed writers: each acts as one user and, until the deadline, draws operations from
//! the mix. Creates go to a calendar the user edits; updates send the revision the tool last
//! saw, and a `409` (acknowledged, not applied) is retried on the `current` revision it
//! carries (on the original's wire, which has no revision, updates send none and overwrite);
//! links add a calendar the user also edits; attendance answers on any visible event;
//! deletes remove an event everywhere. Every acknowledged change goes into the [`Model`]
//! with the [`Mark`](crate::wire::Mark) its answer carried; a request without a clear
//! answer taints its event (left out of the exact checks, and counted as a failure).

use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use super::client::{Bases, Client, Reply, User};
use super::model::Model;
use super::options::{Mix, Op};
use super::stats::{Live, Outcome, Recorder};
use super::wire::Wire;

/// Tries of one update before giving up on it after conflicts.
const UPDATE_TRIES: usize = 5;
const STATUSES: [&str; 4] = ["going", "maybe", "declined", "none"];

/// What every writer shares.
#[derive(Debug)]
pub struct Writers {
    /// HTTP, one client per base: writer `n` writes through base `n % bases`.
    pub bases: Bases,
    /// The run's users.
    pub users: Vec<User>,
    /// The model.
    pub model: Arc<Mutex<Model>>,
    /// The operation weights.
    pub mix: Mix,
    /// Progress counters.
    pub live: Arc<Live>,
    /// When to stop.
    pub deadline: Instant,
    /// The server's wire.
    pub wire: Wire,
}

/// An Event body as clients send it.
pub fn event_body(id: Uuid, calendars: &[Uuid], title: &str) -> Value {
    json!({
        "id": id,
        "creatorID": "",
        "organizer": "bowline-stress",
        "title": title,
        "color": "#C8553D",
        "start": "2031-03-04T09:00:00.000Z",
        "end": "2031-03-04T10:00:00.000Z",
        "calendars": calendars,
        "isCanceled": false,
        "isAllDay": false,
        "hasAttendees": true,
        "description": null,
        "location": "Room 1",
        "recurrence": null,
        "url": null
    })
}

struct Writer<'a> {
    shared: &'a Writers,
    client: &'a Client,
    user: &'a User,
    number: usize,
    rng: StdRng,
    record: Recorder,
    written: u64,
}

/// Runs writer `number` (acting as user `number % users`, through base `number % bases`)
/// until the deadline.
pub async fn run(shared: Arc<Writers>, number: usize, seed: u64) -> Recorder {
    let Some(user) = shared.users.get(number % shared.users.len().max(1)) else {
        return Recorder::default();
    };
    let mut writer = Writer {
        shared: &shared,
        client: shared.bases.nth(number),
        user,
        number,
        rng: StdRng::seed_from_u64(seed ^ (number as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        record: Recorder::default(),
        written: 0,
    };
    while Instant::now() < shared.deadline {
        let op = shared
            .mix
            .pick(writer.rng.random_range(0..shared.mix.total()));
        writer.step(op).await;
    }
    writer.record
}

impl Writer<'_> {
    /// The run's model, locked.
    fn model(&self) -> MutexGuard<'_, Model> {
        self.shared.model.lock()
    }

    fn choose<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        (!items.is_empty()).then(|| items[self.rng.random_range(0..items.len())])
    }

    fn title(&mut self) -> String {
        self.written += 1;
        format!("w{}-{}", self.number, self.written)
    }

    fn calendar_ids(&self, links: &[usize]) -> Vec<Uuid> {
        let model = self.model();
        links
            .iter()
            .filter_map(|c| model.layout().calendars.get(*c).copied())
            .collect()
    }

    /// Runs `op`, or a simpler one when it has nothing to act on (no events yet...).
    async fn step(&mut self, op: Op) {
        let done = match op {
            Op::Update => self.update().await,
            Op::Link => self.link().await || self.update().await,
            Op::Attendance => self.attendance().await,
            Op::Delete => self.delete().await,
            Op::Create | Op::List => false,
        };
        if !done {
            self.create().await;
        }
    }

    fn outcome(&mut self, op: Op, reply: &Reply, outcome: Outcome, event: Uuid) {
        self.record.record(&self.shared.live, op, reply, outcome);
        if outcome == Outcome::Failed {
            self.model().taint(event);
        }
    }

    async fn create(&mut self) {
        let editable = self.model().layout().editable(self.user.index);
        let Some(home) = self.choose(&editable) else {
            return;
        };
        let id = Uuid::new_v4();
        let title = self.title();
        let body = event_body(id, &self.calendar_ids(&[home]), &title);
        let client = self.client;
        let reply = client
            .call(
                client
                    .request(Method::POST, "/api/v1/events", self.user)
                    .json(&body),
            )
            .await;
        match reply.event_mark(StatusCode::CREATED, self.shared.wire) {
            Some(mark) => {
                self.model().created(id, home, title, mark, (&reply).into());
                self.outcome(Op::Create, &reply, Outcome::Ok, id);
            }
            None => self.outcome(Op::Create, &reply, Outcome::Failed, id),
        }
    }

    /// A hot event homed in one of the user's editable calendars, with its lock.
    fn pick_editable(&mut self) -> Option<(Uuid, Arc<tokio::sync::RwLock<()>>)> {
        let editable = self.model().layout().editable(self.user.index);
        let calendar = self.choose(&editable)?;
        let roll = self.rng.random();
        self.model().pick_homed(calendar, roll)
    }

    async fn update(&mut self) -> bool {
        let Some((id, lock)) = self.pick_editable() else {
            return false;
        };
        let _shared = lock.read_owned().await;
        let Some(event) = self.model().snapshot(id) else {
            return false;
        };
        let title = self.title();
        let mut body = event_body(id, &self.calendar_ids(&event.links), &title);
        let mut base = event.revision;
        for _ in 0..UPDATE_TRIES {
            if let Some(base) = base {
                body["revision"] = json!(base);
            }
            let client = self.client;
            let reply = client
                .call(
                    client
                        .request(Method::PUT, "/api/v1/events", self.user)
                        .json(&body),
                )
                .await;
            if let Some(mark) = reply.event_mark(StatusCode::OK, self.shared.wire) {
                self.model().updated(id, base, title, mark, (&reply).into());
                self.outcome(Op::Update, &reply, Outcome::Ok, id);
                return true;
            }
            if self.shared.wire.has_revisions()
                && reply.is(StatusCode::CONFLICT)
                && let Some(current) = reply
                    .json()
                    .and_then(|answer| answer["current"]["revision"].as_i64())
            {
                self.outcome(Op::Update, &reply, Outcome::Conflict, id);
                base = Some(current);
                continue;
            }
            self.outcome(Op::Update, &reply, Outcome::Failed, id);
            return true;
        }
        true
    }

    async fn link(&mut self) -> bool {
        let Some((id, lock)) = self.pick_editable() else {
            return false;
        };
        let _exclusive = lock.write_owned().await;
        let Some(event) = self.model().snapshot(id) else {
            return false;
        };
        let editable = self.model().layout().editable(self.user.index);
        let targets: Vec<usize> = editable
            .into_iter()
            .filter(|c| !event.links.contains(c))
            .collect();
        let Some(target) = self.choose(&targets) else {
            return false;
        };
        let Some(target_id) = self.calendar_ids(&[target]).first().copied() else {
            return false;
        };
        let client = self.client;
        let path = format!("/api/v1/events/{id}/link");
        let request = client.request(Method::POST, &path, self.user);
        let reply = client
            .call(request.json(&json!({ "calendarID": target_id })))
            .await;
        match reply.event_mark(StatusCode::OK, self.shared.wire) {
            Some(mark) => {
                self.model().linked(id, target, mark, (&reply).into());
                self.outcome(Op::Link, &reply, Outcome::Ok, id);
            }
            None => self.outcome(Op::Link, &reply, Outcome::Failed, id),
        }
        true
    }

    async fn attendance(&mut self) -> bool {
        let visible = self.model().layout().visible(self.user.index);
        let Some(calendar) = self.choose(&visible) else {
            return false;
        };
        let roll = self.rng.random();
        let Some((id, lock)) = self.model().pick_linked(calendar, roll) else {
            return false;
        };
        let _shared = lock.read_owned().await;
        if self.model().snapshot(id).is_none() {
            return false;
        }
        let Some(status) = self.choose(&STATUSES) else {
            return false;
        };
        let client = self.client;
        let path = format!("/api/v1/events/{id}/attendance");
        let request = client.request(Method::PUT, &path, self.user);
        let reply = client
            .call(request.json(&json!({ "status": status })))
            .await;
        match reply
            .json()
            .filter(|b| b.is_array() && reply.is(StatusCode::OK))
        {
            Some(attendees) => {
                self.model()
                    .attendance(id, attendees.to_string(), (&reply).into());
                self.outcome(Op::Attendance, &reply, Outcome::Ok, id);
            }
            None => self.outcome(Op::Attendance, &reply, Outcome::Failed, id),
        }
        true
    }

    async fn delete(&mut self) -> bool {
        let Some((id, lock)) = self.pick_editable() else {
            return false;
        };
        let _exclusive = lock.write_owned().await;
        let Some(event) = self.model().snapshot(id) else {
            return false;
        };
        let body = event_body(id, &self.calendar_ids(&event.links), "deleted");
        let client = self.client;
        let reply = client
            .call(
                client
                    .request(Method::DELETE, "/api/v1/events", self.user)
                    .json(&body),
            )
            .await;
        let removed = reply.json().and_then(|b| b["removed"].as_bool());
        if reply.is(StatusCode::OK) && removed == Some(true) {
            self.model().deleted(id, (&reply).into());
            self.outcome(Op::Delete, &reply, Outcome::Ok, id);
        } else {
            self.outcome(Op::Delete, &reply, Outcome::Failed, id);
        }
        true
    }
}
