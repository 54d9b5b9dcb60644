//! The end-of-run checks, each exact on Bowline's wire: every user's full read and delta read
//! (`GET /api/v1/events`, and `?since=` a time taken before the run) list exactly the
//! acknowledged live events they can see, at the acknowledged revision and title, and the
//! delta lists every acknowledged deletion they saw; each event's acknowledged revisions are
//! 1, 2, 3… with none answered twice and no update applied over a revision its writer had
//! not seen; every connection received every frame of every acknowledged change for its
//! user exactly once (a miss and a duplicate both fail); no answer was a 5xx.
//!
//! On the original's wire (no revision, updates overwrite) the checks that need Bowline's
//! extras are weakened or skipped, and each [`Check`] says so ([`Coverage`]): a read event
//! must hold the title of a write no later write followed, deletions missing from a delta
//! are not failures (the original never lists an event whose every link was removed), frames
//! are known by title, and the revision check is replaced by one that every answer carried
//! the title written.

use std::collections::{BTreeSet, HashMap};

use futures::{StreamExt, stream};
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

mod frames;

pub use frames::{FrameCounts, FrameLatency, frames};

use super::client::{Bases, Client, User};
use super::model::{EventState, Model};
use super::stats::Recorder;
use super::wire::Wire;

/// Examples named in a failed check's detail.
const EXAMPLES: usize = 3;

/// One verification outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Whether it held (never for a check that did not run).
    pub passed: bool,
    /// Counts, or what went wrong (with a few examples).
    pub detail: String,
    /// How much of it the server's wire let run.
    pub coverage: Coverage,
    /// What the wire could not show, when weakened or skipped.
    pub limit: Option<String>,
}

/// How much of a check ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Coverage {
    /// All of it.
    Exact,
    /// A weaker form, decidable from the server's wire.
    Weakened,
    /// Not at all: the wire does not carry what it needs. Never counted as passed.
    Skipped,
}

/// Whether a run passed: at least one check ran and every check that ran held.
pub fn all_passed(checks: &[Check]) -> bool {
    let ran: Vec<&Check> = checks
        .iter()
        .filter(|c| c.coverage != Coverage::Skipped)
        .collect();
    !ran.is_empty() && ran.iter().all(|c| c.passed)
}

/// Problems found by one check: how many, and the first few.
#[derive(Debug, Clone, Default)]
pub struct Problems {
    count: u64,
    examples: Vec<String>,
}

impl Problems {
    /// Adds one.
    pub fn push(&mut self, problem: String) {
        self.count += 1;
        if self.examples.len() < EXAMPLES {
            self.examples.push(problem);
        }
    }

    /// Adds several.
    pub fn extend(&mut self, other: Problems) {
        self.count += other.count;
        let room = EXAMPLES.saturating_sub(self.examples.len());
        self.examples.extend(other.examples.into_iter().take(room));
    }

    /// How many were found.
    pub fn count(&self) -> u64 {
        self.count
    }
}

impl Check {
    /// Passed when there are no `problems`; `passed_detail` says what was covered.
    pub fn from_problems(name: &str, problems: &Problems, passed_detail: String) -> Self {
        let detail = if problems.count == 0 {
            passed_detail
        } else {
            format!(
                "{} problems, e.g. {}",
                problems.count,
                problems.examples.join("; ")
            )
        };
        Self {
            name: name.to_owned(),
            passed: problems.count == 0,
            detail,
            coverage: Coverage::Exact,
            limit: None,
        }
    }

    /// The check in a weaker form, `limit` saying what it could not show.
    pub fn weakened(self, limit: &str) -> Self {
        Self {
            coverage: Coverage::Weakened,
            limit: Some(limit.to_owned()),
            ..self
        }
    }

    /// A check that could not run, `limit` saying why.
    pub fn skipped(name: &str, limit: &str) -> Self {
        Self {
            name: name.to_owned(),
            passed: false,
            detail: "not run on this wire".into(),
            coverage: Coverage::Skipped,
            limit: Some(limit.to_owned()),
        }
    }
}

/// No 5xx, and every request had a clear answer (on the original's wire there are no
/// conflicts to retry: a 409 is a failure).
pub fn answers(record: &Recorder, wire: Wire) -> Vec<Check> {
    let total: u64 = record.statuses.values().sum();
    let server_errors = record.server_errors();
    let failed: u64 = record.ops.values().map(|s| s.failed).sum();
    let failures = Problems {
        count: failed,
        examples: record.failures.iter().take(EXAMPLES).cloned().collect(),
    };
    vec![
        Check {
            name: "no 5xx answers".into(),
            passed: server_errors == 0,
            detail: format!("{server_errors} of {total} answers were 5xx"),
            coverage: Coverage::Exact,
            limit: None,
        },
        Check::from_problems(
            if wire.has_revisions() {
                "every request acknowledged (2xx, or 409 then retried)"
            } else {
                "every request acknowledged (2xx)"
            },
            &failures,
            format!("{total} answers"),
        ),
    ]
}

/// Why the revision check cannot run on the original's wire.
const NO_REVISIONS: &str = "the original's events carry no revision and its updates \
    overwrite (last writer wins), so a lost update cannot be told from an overwrite; the \
    reads check each event's title against the writes no later write followed instead";

/// Each event's acknowledged revisions are 1..n, none twice, none over an unseen one; on
/// the original's wire, skipped, and every write answered with the title it wrote instead.
pub fn revisions(model: &Model, wire: Wire) -> Vec<Check> {
    if wire.has_revisions() {
        return vec![revision_sequence(model)];
    }
    let mut problems = Problems::default();
    for anomaly in model.anomalies() {
        problems.push(anomaly.clone());
    }
    let writes: usize = model.events().values().map(|e| e.writes.len()).sum();
    vec![
        Check::skipped("no update lost (revisions)", NO_REVISIONS),
        Check::from_problems(
            "every write and link answered with the title written",
            &problems,
            format!("{writes} writes over {} events", model.events().len()),
        )
        .weakened(
            "no revision: an answer can only be compared with the title written, and a link's \
             with the titles no earlier write overwrote",
        ),
    ]
}

fn revision_sequence(model: &Model) -> Check {
    let mut problems = Problems::default();
    for anomaly in model.anomalies() {
        problems.push(anomaly.clone());
    }
    let mut changes = 0;
    for (id, event) in model.events() {
        if event.tainted {
            continue;
        }
        let mut revisions = event.revisions.clone();
        revisions.sort_unstable();
        changes += revisions.len();
        let gapless = revisions
            .iter()
            .zip(1_i64..)
            .all(|(revision, expected)| *revision == expected);
        if !gapless {
            problems.push(format!(
                "event {id}: acknowledged revisions {revisions:?} are not 1, 2, 3…"
            ));
        }
    }
    Check::from_problems(
        "no update lost (revisions)",
        &problems,
        format!("{changes} revisions over {} events", model.events().len()),
    )
}

/// What one user's reads showed.
#[derive(Default)]
struct UserReads {
    full: Problems,
    delta: Problems,
    listed: usize,
}

/// Why the reads are weaker on the original's wire.
const READS_WITHOUT_REVISIONS: &str = "the original's events carry no revision: each event's \
    title must be that of a write no later acknowledged write followed, not that of one \
    known revision";
/// Why the deltas are weaker still.
const DELTAS_WITHOUT_DELETIONS: &str = "a deletion missing from `deletedIds` is not a \
    failure (the original lists no event whose every link was removed there), a listed one \
    must have been deleted";

/// Every user's full read and delta read, through the user's base, against the model
/// (each answer is compared as soon as it arrives, so the answers of all users are never
/// held at once).
pub async fn reads(
    bases: &Bases,
    users: &[User],
    model: &Model,
    since: &[String],
    wire: Wire,
) -> Vec<Check> {
    let every_deletion_listed = wire.lists_full_deletions();
    let answers: Vec<UserReads> = stream::iter(users)
        .map(|user| async move {
            let client = bases.nth(user.index);
            let mut seen = UserReads::default();
            match read(client, user, "").await {
                Ok(full) => {
                    seen.listed = full["events"].as_array().map_or(0, Vec::len);
                    seen.full = compare_events(model, user.index, &full);
                }
                Err(err) => seen.full.push(format!("user {}: {err}", user.index)),
            }
            let Some(since) = since.get(user.index) else {
                seen.delta
                    .push(format!("user {}: no `since` recorded", user.index));
                return seen;
            };
            let since: String = url::form_urlencoded::byte_serialize(since.as_bytes()).collect();
            match read(client, user, &format!("?since={since}")).await {
                Ok(delta) => {
                    seen.delta = compare_events(model, user.index, &delta);
                    seen.delta.extend(compare_deleted(
                        model,
                        user.index,
                        &delta,
                        every_deletion_listed,
                    ));
                }
                Err(err) => seen.delta.push(format!("user {}: {err}", user.index)),
            }
            seen
        })
        .buffer_unordered(4)
        .collect()
        .await;
    let mut full_problems = Problems::default();
    let mut delta_problems = Problems::default();
    let mut listed = 0;
    for seen in answers {
        listed += seen.listed;
        full_problems.extend(seen.full);
        delta_problems.extend(seen.delta);
    }
    let full = Check::from_problems(
        "full reads equal the model",
        &full_problems,
        format!("{} users, {listed} events listed", users.len()),
    );
    let delta = Check::from_problems(
        "delta reads (since before the run) equal the model",
        &delta_problems,
        format!("{} users", users.len()),
    );
    let full = if wire.has_revisions() {
        full
    } else {
        full.weakened(READS_WITHOUT_REVISIONS)
    };
    let mut delta_limits = Vec::new();
    if !wire.has_revisions() {
        delta_limits.push(READS_WITHOUT_REVISIONS);
    }
    if !every_deletion_listed {
        delta_limits.push(DELTAS_WITHOUT_DELETIONS);
    }
    let delta = if delta_limits.is_empty() {
        delta
    } else {
        delta.weakened(&delta_limits.join("; "))
    };
    vec![full, delta]
}

async fn read(client: &Client, user: &User, query: &str) -> Result<Value, String> {
    let path = format!("/api/v1/events{query}");
    let reply = client.call(client.request(Method::GET, &path, user)).await;
    reply
        .expect_json(StatusCode::OK, "reading events")
        .map_err(|err| err.to_string())
}

fn compare_events(model: &Model, user: usize, answer: &Value) -> Problems {
    let layout = model.layout();
    let mine: BTreeSet<usize> = layout.visible(user).into_iter().collect();
    let mut expected: HashMap<Uuid, (&EventState, BTreeSet<Uuid>)> = HashMap::new();
    for (id, event) in model.events() {
        if event.deleted || event.tainted {
            continue;
        }
        let calendars: BTreeSet<Uuid> = event
            .links
            .iter()
            .filter(|c| mine.contains(c))
            .filter_map(|c| layout.calendars.get(*c).copied())
            .collect();
        if !calendars.is_empty() {
            expected.insert(*id, (event, calendars));
        }
    }
    let mut problems = Problems::default();
    let listed = answer["events"].as_array().map_or(&[][..], Vec::as_slice);
    for event in listed {
        let Some(id) = event["id"].as_str().and_then(|id| Uuid::parse_str(id).ok()) else {
            problems.push(format!("user {user}: an event without an id"));
            continue;
        };
        let uncertain = model.is_unknown(&id) || model.events().get(&id).is_some_and(|e| e.tainted);
        if uncertain {
            continue;
        }
        let Some((state, calendars)) = expected.remove(&id) else {
            let deleted = model.events().get(&id).is_some_and(|e| e.deleted);
            problems.push(if deleted {
                format!("user {user}: deleted event {id} is still listed")
            } else {
                format!("user {user}: event {id} was never acknowledged for them")
            });
            continue;
        };
        let listed_calendars: BTreeSet<Uuid> = event["calendars"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c.as_str().and_then(|c| Uuid::parse_str(c).ok()))
            .collect();
        if let Some(problem) = differs(state, event) {
            problems.push(format!("user {user}: event {id} {problem}"));
        } else if listed_calendars != calendars {
            problems.push(format!("user {user}: event {id} lists other calendars"));
        }
    }
    for id in expected.keys() {
        problems.push(format!("user {user}: acknowledged event {id} is missing"));
    }
    problems
}

/// How a listed `event` differs from its acknowledged `state`: the revision and title on
/// Bowline's wire; without revisions, a title no later acknowledged write overwrote.
fn differs(state: &EventState, event: &Value) -> Option<String> {
    let title = event["title"].as_str().unwrap_or_default();
    match state.revision {
        Some(revision) => (event["revision"].as_i64() != Some(revision) || title != state.title)
            .then(|| {
                format!(
                    "is at revision {} \"{title}\", acknowledged {revision} \"{}\"",
                    event["revision"], state.title
                )
            }),
        None => {
            let latest = state.latest_titles();
            (!latest.contains(title))
                .then(|| format!("holds \"{title}\", the last acknowledged writes {latest:?}"))
        }
    }
}

/// The delta's `deletedIds` against the model: none that was not deleted, and (when
/// `every_deletion_listed`) every deletion the user saw.
fn compare_deleted(
    model: &Model,
    user: usize,
    answer: &Value,
    every_deletion_listed: bool,
) -> Problems {
    let mut expected: BTreeSet<Uuid> = model
        .deleted_for()
        .iter()
        .filter(|(id, users)| {
            users.contains(&user) && model.events().get(id).is_some_and(|e| !e.tainted)
        })
        .map(|(id, _)| *id)
        .collect();
    let mut problems = Problems::default();
    let listed = answer["deletedIds"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    for id in listed
        .iter()
        .filter_map(|id| id.as_str().and_then(|id| Uuid::parse_str(id).ok()))
    {
        let uncertain = model.is_unknown(&id) || model.events().get(&id).is_some_and(|e| e.tainted);
        if !expected.remove(&id) && !uncertain {
            problems.push(format!(
                "user {user}: event {id} is reported deleted but was not"
            ));
        }
    }
    if every_deletion_listed {
        for id in expected {
            problems.push(format!(
                "user {user}: deletion of {id} is missing from the delta"
            ));
        }
    }
    problems
}
