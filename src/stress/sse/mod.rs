//! A client of `GET /api/stream` that records when each frame arrived. The stream is parsed
//! as Server-Sent Events (`retry:` and `: ping` lines are skipped, `data:` lines make a
//! frame at the blank line); each frame is reduced to a [`FrameKey`] that names the change
//! it reports. A stream that ends while the run still listens (the server dropped a slow
//! connection, or went away) is recorded as [`Ended`], so missing frames are explained
//! rather than silently absent.

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
