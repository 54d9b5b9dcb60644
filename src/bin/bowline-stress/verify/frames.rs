//! The frame check: every connection received every frame of every acknowledged change for
//! its user exactly once (a miss and a duplicate both fail), with each frame's latency. On
//! the original's wire an event frame is known by its event's title instead of its revision.

use std::collections::HashMap;
use std::time::Instant;

use serde::Serialize;

use super::{Check, Problems};
use crate::model::{Model, Timing};
use crate::sse::{Connection, FrameKey};
use crate::stats::Latencies;
use crate::wire::Wire;

/// What the frame check cannot tell on the original's wire.
const FRAMES_WITHOUT_REVISIONS: &str = "the original's frames carry no revision: each is \
    known by its event and title, so the frames of an update and of a later link that \
    carries its title are told apart by their count only";

/// Frame counts of a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FrameCounts {
    /// Frames expected on all connections.
    pub expected: u64,
    /// Frames received.
    pub received: u64,
    /// Expected but never received.
    pub missing: u64,
    /// Received more often than expected.
    pub duplicate: u64,
    /// Received but no acknowledged change sends them.
    pub unexpected: u64,
    /// Arrived before their write's answer (their latency counts as 0).
    pub before_answer: u64,
}

/// Frame latencies: from the write's answer (the definition; a frame that arrived
/// first counts as 0) and from the write's request (an upper bound of commit → arrival).
#[derive(Debug, Clone, Default)]
pub struct FrameLatency {
    /// Answer → arrival.
    pub from_answer: Latencies,
    /// Request → arrival.
    pub from_request: Latencies,
}

/// Every connection against the frames the model expects for its user; records each
/// matched frame's latency in `latency`.
pub fn frames(
    model: &Model,
    connections: &[Connection],
    started: Instant,
    latency: &mut FrameLatency,
    wire: Wire,
) -> (Vec<Check>, FrameCounts) {
    let mut counts = FrameCounts::default();
    let mut problems = Problems::default();
    let mut dropped = Problems::default();
    for connection in connections {
        let user = connection.user;
        let mut expected: HashMap<&FrameKey, Vec<Timing>> = HashMap::new();
        for frame in model.frames() {
            if frame.users.binary_search(&user).is_ok() && !model.is_uncertain(&frame.key) {
                expected.entry(&frame.key).or_default().push(frame.at);
                counts.expected += 1;
            }
        }
        for received in connection.frames() {
            counts.received += 1;
            if model.is_uncertain(&received.key) {
                continue;
            }
            match expected.get_mut(&received.key) {
                Some(acks) if !acks.is_empty() => {
                    let at = acks.remove(0);
                    if received.at < at.answered {
                        counts.before_answer += 1;
                    }
                    latency
                        .from_answer
                        .record(received.at.saturating_duration_since(at.answered));
                    latency
                        .from_request
                        .record(received.at.saturating_duration_since(at.sent));
                }
                Some(_) => {
                    counts.duplicate += 1;
                    problems.push(format!("user {user}: {:?} received twice", received.key));
                }
                None => {
                    counts.unexpected += 1;
                    problems.push(format!("user {user}: unexpected {:?}", received.key));
                }
            }
        }
        for (key, acks) in expected {
            counts.missing += acks.len() as u64;
            for _ in acks {
                problems.push(format!("user {user}: {key:?} never arrived"));
            }
        }
        if let Some(ended) = connection.ended() {
            dropped.push(format!(
                "user {user}: the stream ended {:.1}s into the run ({})",
                ended.at.saturating_duration_since(started).as_secs_f64(),
                ended.reason
            ));
        }
    }
    let every_frame = Check::from_problems(
        "every member received every frame exactly once",
        &problems,
        format!(
            "{} frames on {} connections",
            counts.received,
            connections.len()
        ),
    );
    let checks = vec![
        if wire.has_revisions() {
            every_frame
        } else {
            every_frame.weakened(FRAMES_WITHOUT_REVISIONS)
        },
        Check::from_problems(
            "no stream was dropped",
            &dropped,
            format!("{} connections stayed open", connections.len()),
        ),
    ];
    (checks, counts)
}
