//! A client of `GET /api/stream` that records when each frame arrived. The stream is parsed
//! as Server-Sent Events (`retry:` and `: ping` lines are skipped, `data:` lines make a
//! frame at the blank line); each frame is reduced to a [`FrameKey`] that names the change
//! it reports. The reading task only counts a frame and keeps its text with its arrival
//! time; keys are read when the run asks for them (or once `KEY_BACKLOG` texts wait), so
//! with ten thousand streams on the server's two cores the JSON is not read while a
//! broadcast is being timed. A stream that ends while the run still listens (the server
//! dropped a slow connection, or went away) is recorded as [`Ended`], so missing frames are
//! explained rather than silently absent.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;
use reqwest::StatusCode;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::StressError;
use super::client::{Client, User, error_chain};
use super::stats::Live;
use super::wire::Wire;

mod parse;

pub use parse::{FrameKey, Parser};

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

/// Frame texts a connection keeps unread before its reading task reads their keys.
const KEY_BACKLOG: usize = 64;

#[derive(Debug)]
struct Log {
    frames: Mutex<Frames>,
    ended: Mutex<Option<Ended>>,
}

/// A connection's frames: those whose key was read, then texts waiting to be read.
#[derive(Debug)]
struct Frames {
    /// The wire the keys are read for.
    wire: Wire,
    keyed: Vec<Received>,
    unread: Vec<(Instant, Vec<u8>)>,
}

impl Frames {
    /// No frames yet, keyed for `wire`.
    fn new(wire: Wire) -> Self {
        Self {
            wire,
            keyed: Vec::new(),
            unread: Vec::new(),
        }
    }

    /// Keeps the texts of frames that arrived `at`, reading the keys of all waiting texts
    /// once there are [`KEY_BACKLOG`].
    fn push(&mut self, at: Instant, texts: Vec<Vec<u8>>) {
        self.unread.extend(texts.into_iter().map(|text| (at, text)));
        if self.unread.len() >= KEY_BACKLOG {
            self.keyed();
        }
    }

    /// How many frames arrived.
    fn len(&self) -> usize {
        self.keyed.len() + self.unread.len()
    }

    /// Reads the key of every waiting text.
    fn keyed(&mut self) -> &[Received] {
        let wire = self.wire;
        let unread = self.unread.drain(..);
        self.keyed.extend(unread.map(|(at, text)| Received {
            at,
            key: FrameKey::parse(&text, wire),
        }));
        &self.keyed
    }
}

/// Wakes whoever waits for frames; shared by every connection of a run.
#[derive(Debug)]
pub struct Hub {
    /// Notified once `wanted` frames arrived in all, and on every end of a stream.
    notify: Notify,
    /// The frame total a waiter waits for (0: wake on every frame).
    wanted: AtomicU64,
    /// Live counters (`frames`: the total so far).
    pub live: Arc<Live>,
    /// The wire the connections' frames are read for.
    wire: Wire,
}

impl Hub {
    /// A hub counting frames on `live`, whose connections read frames for `wire`.
    pub fn new(live: Arc<Live>, wire: Wire) -> Self {
        Self {
            notify: Notify::new(),
            wanted: AtomicU64::new(0),
            live,
            wire,
        }
    }

    /// The wire the connections' frames are read for.
    pub fn wire(&self) -> Wire {
        self.wire
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

    /// Takes `count` frames off the total (frames a connection no longer counts).
    fn forget(&self, count: u64) {
        self.live.frames.fetch_sub(count, Ordering::AcqRel);
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
    /// The position of the base it was opened on among the run's bases.
    pub base: usize,
    log: Arc<Log>,
    hub: Arc<Hub>,
    task: JoinHandle<()>,
}

impl Connection {
    /// Opens `/api/stream` as `user` through `client`, the run's base number `base`;
    /// returns once the server answered 200 (from then on the connection receives every
    /// frame sent to the user).
    pub async fn open(
        client: &Client,
        base: usize,
        user: &User,
        hub: Arc<Hub>,
    ) -> Result<Self, StressError> {
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
        let log = Arc::new(Log {
            frames: Mutex::new(Frames::new(hub.wire)),
            ended: Mutex::new(None),
        });
        let task = tokio::spawn(read(response, log.clone(), hub.clone()));
        Ok(Self {
            user: user.index,
            base,
            log,
            hub,
            task,
        })
    }

    /// The frames received so far.
    pub fn frames(&self) -> Vec<Received> {
        self.log.frames.lock().keyed().to_vec()
    }

    /// How many frames were received so far.
    pub fn frame_count(&self) -> usize {
        self.log.frames.lock().len()
    }

    /// When `key` arrived, if it did.
    pub fn arrival(&self, key: &FrameKey) -> Option<Instant> {
        let mut frames = self.log.frames.lock();
        let keyed = frames.keyed();
        keyed.iter().rev().find(|f| f.key == *key).map(|f| f.at)
    }

    /// Forgets the frames received so far: from now on [`frames`](Self::frames) and
    /// [`frame_count`](Self::frame_count) hold only those that arrive later (the end of the
    /// setup phase).
    pub fn forget_received(&self) {
        let mut frames = self.log.frames.lock();
        let count = frames.len() as u64;
        frames.keyed.clear();
        frames.unread.clear();
        self.hub.forget(count);
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
                let texts = parser.push(&chunk);
                if texts.is_empty() {
                    continue;
                }
                let count = texts.len() as u64;
                // Counted under the lock, so that forgetting the frames so far takes off
                // exactly those counted.
                let mut frames = log.frames.lock();
                frames.push(at, texts);
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

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::wire::Mark;

    #[test]
    fn unread_texts_are_keyed_on_demand_with_their_arrival() {
        let id = Uuid::new_v4();
        let earlier = Instant::now();
        let later = earlier + std::time::Duration::from_millis(5);
        let text = |revision: i64| {
            format!(r#"{{"type":"event_updated","payload":{{"id":"{id}","revision":{revision}}}}}"#)
                .into_bytes()
        };
        let mut frames = Frames::new(Wire::Bowline);
        frames.push(earlier, vec![text(2)]);
        frames.push(later, vec![text(3)]);
        assert_eq!(frames.len(), 2);
        let keyed = frames.keyed();
        assert_eq!(keyed.len(), 2);
        assert_eq!(keyed[0].key, FrameKey::Updated(id, Mark::Revision(2)));
        assert_eq!(keyed[0].at, earlier);
        assert_eq!(keyed[1].key, FrameKey::Updated(id, Mark::Revision(3)));
        assert_eq!(keyed[1].at, later);
        assert!(frames.unread.is_empty());
        frames.push(later, vec![b"not json".to_vec()]);
        assert_eq!(frames.keyed()[2].key, FrameKey::Other("unreadable".into()));
    }
}
