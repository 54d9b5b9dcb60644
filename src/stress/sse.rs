//! A client of `GET /api/stream` that records when each frame arrived. The stream is parsed
//! as Server-Sent Events (`retry:` and `: ping` lines are skipped, `data:` lines make a
//! frame at the blank line); each frame is reduced to a [`FrameKey`] that names the change
//! it reports. A stream that ends while the run still listens (the server dropped a slow
//! connection, or went away) is recorded as [`Ended`], so missing frames are explained
//! rather than silently absent.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::StressError;
use super::client::{Client, User, error_chain};
use super::stats::Live;

/// The change a frame reports: enough to tell two changes apart, and a repeat of one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameKey {
    /// `event_created` of an event at a revision.
    Created(Uuid, i64),
    /// `event_updated` of an event at a revision.
    Updated(Uuid, i64),
    /// `event_removed` of an event.
    Removed(Uuid),
    /// `attendance_changed` of an event with this attendee list (JSON text).
    Attendance(Uuid, String),
    /// Any other frame (the run makes no change that sends one).
    Other(String),
}

/// The parts of a frame the key needs; everything else is skipped without being built.
#[derive(Deserialize)]
struct RawFrame<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    payload: RawPayload<'a>,
}

#[derive(Default, Deserialize)]
struct RawPayload<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, rename = "eventID", borrow)]
    event_id: Option<Cow<'a, str>>,
    #[serde(default)]
    revision: Option<i64>,
    #[serde(default)]
    attendees: Option<Value>,
}

impl FrameKey {
    /// The key of a frame's JSON text (cheaper than [`FrameKey::of`]: with ten thousand
    /// streams the tool shares the machine with the server).
    pub fn parse(text: &[u8]) -> Self {
        let Ok(raw) = serde_json::from_slice::<RawFrame<'_>>(text) else {
            return Self::Other("unreadable".into());
        };
        let id =
            |field: &Option<Cow<'_, str>>| field.as_deref().and_then(|id| Uuid::parse_str(id).ok());
        let payload = &raw.payload;
        let key = match &*raw.kind {
            "event_created" => id(&payload.id)
                .zip(payload.revision)
                .map(|(id, r)| Self::Created(id, r)),
            "event_updated" => id(&payload.id)
                .zip(payload.revision)
                .map(|(id, r)| Self::Updated(id, r)),
            "event_removed" => id(&payload.id).map(Self::Removed),
            "attendance_changed" => id(&payload.event_id)
                .zip(payload.attendees.as_ref())
                .map(|(id, attendees)| Self::Attendance(id, attendees.to_string())),
            _ => None,
        };
        key.unwrap_or_else(|| Self::Other(raw.kind.into_owned()))
    }

    /// The key of a frame `{type, payload}`.
    pub fn of(frame: &Value) -> Self {
        let kind = frame["type"].as_str().unwrap_or_default();
        let payload = &frame["payload"];
        let id = |field: &str| {
            payload[field]
                .as_str()
                .and_then(|id| Uuid::parse_str(id).ok())
        };
        let revision = payload["revision"].as_i64();
        let key = match kind {
            "event_created" => id("id").zip(revision).map(|(id, r)| Self::Created(id, r)),
            "event_updated" => id("id").zip(revision).map(|(id, r)| Self::Updated(id, r)),
            "event_removed" => id("id").map(Self::Removed),
            "attendance_changed" => {
                id("eventID").map(|id| Self::Attendance(id, payload["attendees"].to_string()))
            }
            _ => None,
        };
        key.unwrap_or_else(|| Self::Other(kind.to_owned()))
    }

    /// The event the frame is about.
    pub fn event(&self) -> Option<Uuid> {
        match self {
            Self::Created(id, _)
            | Self::Updated(id, _)
            | Self::Removed(id)
            | Self::Attendance(id, _) => Some(*id),
            Self::Other(_) => None,
        }
    }
}

/// A frame and when it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    /// Arrival (when its chunk was read).
    pub at: Instant,
    /// What it reports.
    pub key: FrameKey,
}

/// How and when a stream ended on its own.
#[derive(Debug, Clone)]
pub struct Ended {
    /// When.
    pub at: Instant,
    /// Why (end of stream, or the transport error).
    pub reason: String,
}

#[derive(Debug, Default)]
struct Log {
    frames: Mutex<Vec<Received>>,
    ended: Mutex<Option<Ended>>,
}

/// Wakes whoever waits for frames; shared by every connection of a run.
#[derive(Debug, Default)]
pub struct Hub {
    /// Notified once `wanted` frames arrived in all, and on every end of a stream.
    notify: Notify,
    /// The frame total a waiter waits for (0: wake on every frame).
    wanted: AtomicU64,
    /// Live counters (`frames`: the total so far).
    pub live: Arc<Live>,
}

impl Hub {
    /// A hub counting frames on `live`.
    pub fn new(live: Arc<Live>) -> Self {
        Self {
            notify: Notify::new(),
            wanted: AtomicU64::new(0),
            live,
        }
    }

    /// Frames received on all connections so far.
    pub fn total(&self) -> u64 {
        self.live.frames.load(Ordering::Acquire)
    }

    /// Waits until `done()` holds or `deadline` passes; whether it held. `done()` is checked
    /// once `wanted` frames arrived in all, then after every further frame, and whenever a
    /// stream ends (so ten thousand streams do not wake the waiter ten thousand times).
    pub async fn wait_until(
        &self,
        deadline: Instant,
        wanted: u64,
        done: impl Fn() -> bool,
    ) -> bool {
        self.wanted.store(wanted, Ordering::Release);
        let deadline = tokio::time::Instant::from_std(deadline);
        let held = loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if done() {
                break true;
            }
            if self.total() >= wanted {
                self.wanted.store(self.total() + 1, Ordering::Release);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                break done();
            }
        };
        self.wanted.store(0, Ordering::Release);
        held
    }

    fn arrived(&self, count: u64) {
        let total = self.live.frames.fetch_add(count, Ordering::AcqRel) + count;
        if total >= self.wanted.load(Ordering::Acquire) {
            self.notify.notify_waiters();
        }
    }
}

/// One open stream of one user.
#[derive(Debug)]
pub struct Connection {
    /// The user's position among the run's users.
    pub user: usize,
    log: Arc<Log>,
    task: JoinHandle<()>,
}

impl Connection {
    /// Opens `/api/stream` as `user`; returns once the server answered 200 (from then on
    /// the connection receives every frame sent to the user).
    pub async fn open(client: &Client, user: &User, hub: Arc<Hub>) -> Result<Self, StressError> {
        let response = client
            .request(reqwest::Method::GET, "/api/stream", user)
            .send()
            .await
            .map_err(|err| {
                StressError::Client(format!("opening a stream: {}", error_chain(&err)))
            })?;
        let event_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if response.status() != StatusCode::OK || !event_stream {
            return Err(StressError::Server {
                what: "opening a stream".into(),
                answer: format!("HTTP {}", response.status().as_u16()),
            });
        }
        let log = Arc::new(Log::default());
        let task = tokio::spawn(read(response, log.clone(), hub));
        Ok(Self {
            user: user.index,
            log,
            task,
        })
    }

    /// The frames received so far.
    pub fn frames(&self) -> Vec<Received> {
        self.log.frames.lock().clone()
    }

    /// How many frames were received so far.
    pub fn frame_count(&self) -> usize {
        self.log.frames.lock().len()
    }

    /// When `key` arrived, if it did.
    pub fn arrival(&self, key: &FrameKey) -> Option<Instant> {
        let frames = self.log.frames.lock();
        frames.iter().rev().find(|f| f.key == *key).map(|f| f.at)
    }

    /// How the stream ended, if it did on its own.
    pub fn ended(&self) -> Option<Ended> {
        self.log.ended.lock().clone()
    }

    /// Closes the connection.
    pub fn close(&self) {
        self.task.abort();
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads the stream until it ends, logging frames.
async fn read(mut response: reqwest::Response, log: Arc<Log>, hub: Arc<Hub>) {
    let mut parser = Parser::default();
    let reason = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let at = Instant::now();
                let keys = parser.push(&chunk);
                if keys.is_empty() {
                    continue;
                }
                let count = keys.len() as u64;
                log.frames
                    .lock()
                    .extend(keys.into_iter().map(|key| Received { at, key }));
                hub.arrived(count);
            }
            Ok(None) => {
                break "the server ended it; it drops a connection that falls STREAM_BUFFER \
                       frames behind"
                    .to_owned();
            }
            Err(err) => break error_chain(&err),
        }
    };
    *log.ended.lock() = Some(Ended {
        at: Instant::now(),
        reason,
    });
    hub.notify.notify_waiters();
}

/// Server-Sent-Events parsing: bytes in, frames out. Lines are cut and `data:` values
/// gathered as bytes, and a frame's JSON is read straight from them (no text is built per
/// line: with ten thousand streams the tool shares the machine with the server).
#[derive(Debug, Default)]
pub struct Parser {
    /// The start of a line whose end has not arrived yet.
    pending: Vec<u8>,
    /// The `data:` values of the frame so far, joined by newlines.
    data: Vec<u8>,
    /// Whether the frame so far has a `data:` line (an empty value is still one).
    has_data: bool,
}

impl Parser {
    /// Feeds a chunk; returns the frames it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<FrameKey> {
        self.pending.extend_from_slice(chunk);
        let mut keys = Vec::new();
        let mut start = 0;
        while let Some(offset) = self.pending[start..].iter().position(|b| *b == b'\n') {
            let line = &self.pending[start..start + offset];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                if self.has_data {
                    keys.push(FrameKey::parse(&self.data));
                    self.data.clear();
                    self.has_data = false;
                }
            } else if let Some(value) = line.strip_prefix(b"data:") {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data
                    .extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
                self.has_data = true;
            }
            start += offset + 1;
        }
        self.pending.drain(..start);
        keys
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_cut_at_blank_lines_across_chunks_and_comments_are_skipped() {
        let id = Uuid::new_v4();
        let mut parser = Parser::default();
        assert!(parser.push(b"retry: 3000\n\n: ping\n\nda").is_empty());
        let frame = format!(
            "ta: {{\"type\":\"event_updated\",\"payload\":{{\"id\":\"{id}\",\"revision\":3}}}}\n"
        );
        assert!(parser.push(frame.as_bytes()).is_empty());
        let removed = format!(
            "\ndata: {{\"type\":\"event_removed\",\"payload\":{{\"id\":\"{id}\"}}}}\r\n\r\n"
        );
        assert_eq!(
            parser.push(removed.as_bytes()),
            vec![FrameKey::Updated(id, 3), FrameKey::Removed(id)]
        );
    }

    #[test]
    fn a_frame_of_several_data_lines_is_read_as_one_text() {
        let id = Uuid::new_v4();
        let mut parser = Parser::default();
        let frame = format!(
            "data: {{\"type\":\"event_created\",\ndata:\"payload\":{{\"id\":\"{id}\",\"revision\":1}}}}\n\ndata: not json\n\n"
        );
        assert_eq!(
            parser.push(frame.as_bytes()),
            vec![
                FrameKey::Created(id, 1),
                FrameKey::Other("unreadable".into())
            ]
        );
    }

    #[test]
    fn attendance_frames_are_told_apart_by_their_attendees() {
        let id = Uuid::new_v4();
        let frame = serde_json::json!({"type": "attendance_changed", "payload": {"eventID": id, "attendees": [{"id": "u1", "status": "going"}]}});
        assert_eq!(
            FrameKey::of(&frame),
            FrameKey::Attendance(id, r#"[{"id":"u1","status":"going"}]"#.into())
        );
        let other = serde_json::json!({"type": "calendar_updated", "payload": {}});
        assert_eq!(
            FrameKey::of(&other),
            FrameKey::Other("calendar_updated".into())
        );
    }
}
