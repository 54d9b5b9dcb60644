//! A loopback stand-in for the original Musubi implementation's wire: an HTTP proxy on
//! 127.0.0.1 in front of a real Bowline server that takes Bowline's extras out of what it
//! relays, so a client sees what the original sends (`musubi-wire.md`).
//!
//! - Events lose `revision` wherever they appear (answers, a 409's `current`, frames'
//!   payloads), and update bodies lose the `revision` a client sent (the original's schema
//!   strips unknown keys), so updates overwrite as they do there.
//! - `deletedIds` of event reads is emptied: the original never lists an event whose every
//!   link was removed there, which is what every full delete does.
//! - Only the headers the original also sends are relayed (`content-type`, cookies and
//!   `set-auth-token`, `x-request-id`, `x-retry-after`, `cache-control`).
//! - `/metrics` is Express's HTML 404.
//!
//! Everything it takes out is counted ([`Stripped`]), so a test can show it did, and it can
//! drop one event frame on purpose ([`Fault`]) to show that a check still catches a loss.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;
use warp::Filter;
use warp::reply::{Reply, Response};

/// Response headers the original sends too; every other one is withheld.
const RELAYED_HEADERS: [&str; 7] = [
    "content-type",
    "cache-control",
    "set-cookie",
    "set-auth-token",
    "x-request-id",
    "x-retry-after",
    "location",
];
/// Request headers passed on to the server.
const FORWARDED_HEADERS: [&str; 4] = ["authorization", "content-type", "cookie", "accept"];

/// What the stand-in took out of what it relayed.
#[derive(Debug, Default)]
pub struct Stripped {
    /// `revision` fields taken out of answers' JSON.
    pub answer_revisions: AtomicU64,
    /// `revision` fields taken out of frames' payloads.
    pub frame_revisions: AtomicU64,
    /// `revision` fields a client sent in a request body (taken out before relaying).
    pub request_revisions: AtomicU64,
    /// Ids taken out of `deletedIds`.
    pub deleted_ids: AtomicU64,
    /// Response headers withheld.
    pub headers: AtomicU64,
    /// Requests for `/metrics` answered 404.
    pub metrics_refused: AtomicU64,
    /// Event frames relayed.
    pub event_frames: AtomicU64,
    /// Event frames dropped by [`Fault::DropEventFrame`].
    pub dropped_frames: AtomicU64,
}

impl Stripped {
    /// The current value of `counter`.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// A fault the stand-in can inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Relays everything.
    None,
    /// Drops the event frame with this number (from 1, counted over all streams).
    DropEventFrame(u64),
}

/// A running stand-in.
pub struct StandIn {
    /// `http://<its address>`.
    pub base: String,
    /// What it took out so far.
    pub stripped: Arc<Stripped>,
}

/// What every request handler shares.
struct Relay {
    upstream: String,
    http: reqwest::Client,
    stripped: Arc<Stripped>,
    fault: Fault,
}

impl StandIn {
    /// Starts a stand-in on 127.0.0.1:0 in front of the server at `upstream`.
    pub async fn start(upstream: &str, fault: Fault) -> Self {
        let stripped = Arc::new(Stripped::default());
        let relay = Arc::new(Relay {
            upstream: upstream.trim_end_matches('/').to_owned(),
            http: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("the stand-in's client"),
            stripped: stripped.clone(),
            fault,
        });
        let query = warp::query::raw()
            .map(Some)
            .or(warp::any().map(|| None))
            .unify();
        let route = warp::any()
            .and(warp::method())
            .and(warp::path::full())
            .and(query)
            .and(warp::header::headers_cloned())
            .and(warp::body::bytes())
            .then(
                move |method: Method,
                      path: warp::path::FullPath,
                      query: Option<String>,
                      headers: HeaderMap,
                      body: Bytes| {
                    let relay = relay.clone();
                    async move {
                        let target = match query {
                            Some(query) => format!("{}?{query}", path.as_str()),
                            None => path.as_str().to_owned(),
                        };
                        relay.handle(method, &target, &headers, body).await
                    }
                },
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the stand-in");
        let addr = listener.local_addr().expect("the stand-in's address");
        tokio::spawn(warp::serve(route).incoming(listener).run());
        Self {
            base: format!("http://{addr}"),
            stripped,
        }
    }
}

impl Relay {
    async fn handle(
        &self,
        method: Method,
        target: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Response {
        if target == "/metrics" || target.starts_with("/metrics?") {
            self.stripped
                .metrics_refused
                .fetch_add(1, Ordering::Relaxed);
            let page = format!("<!DOCTYPE html><pre>Cannot {method} /metrics</pre>");
            let mut response = warp::reply::html(page).into_response();
            *response.status_mut() = StatusCode::NOT_FOUND;
            return response;
        }
        let mut request = self
            .http
            .request(method, format!("{}{target}", self.upstream));
        for name in FORWARDED_HEADERS {
            if let Some(value) = headers.get(name) {
                request = request.header(name, value);
            }
        }
        let upstream = match request.body(self.request_body(body)).send().await {
            Ok(upstream) => upstream,
            Err(err) => {
                let mut response = format!("upstream: {err}").into_response();
                *response.status_mut() = StatusCode::BAD_GATEWAY;
                return response;
            }
        };
        let status = upstream.status();
        let relayed = self.relayed_headers(upstream.headers());
        let content_type = relayed
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let mut response = if content_type.starts_with("text/event-stream") {
            self.stream(upstream)
        } else {
            let bytes = upstream.bytes().await.unwrap_or_default();
            let bytes = if content_type.starts_with("application/json") {
                self.answer_body(target, bytes)
            } else {
                bytes
            };
            Response::new(bytes.into())
        };
        *response.status_mut() = status;
        *response.headers_mut() = relayed;
        response
    }

    /// A request body without the `revision` the original's schemas would strip.
    fn request_body(&self, body: Bytes) -> Bytes {
        let Ok(mut json) = serde_json::from_slice::<Value>(&body) else {
            return body;
        };
        let removed = strip_revisions(&mut json);
        if removed == 0 {
            return body;
        }
        self.stripped
            .request_revisions
            .fetch_add(removed, Ordering::Relaxed);
        Bytes::from(serde_json::to_vec(&json).expect("JSON"))
    }

    /// The headers of `upstream` the original also sends.
    fn relayed_headers(&self, upstream: &HeaderMap) -> HeaderMap {
        let mut relayed = HeaderMap::new();
        for (name, value) in upstream {
            if RELAYED_HEADERS.contains(&name.as_str()) {
                relayed.append(name.clone(), value.clone());
            } else {
                self.stripped.headers.fetch_add(1, Ordering::Relaxed);
            }
        }
        relayed
    }

    /// A JSON answer without Bowline's extras.
    fn answer_body(&self, target: &str, bytes: Bytes) -> Bytes {
        let Ok(mut json) = serde_json::from_slice::<Value>(&bytes) else {
            return bytes;
        };
        let removed = strip_revisions(&mut json);
        self.stripped
            .answer_revisions
            .fetch_add(removed, Ordering::Relaxed);
        if target.starts_with("/api/v1/events")
            && let Some(deleted) = json.get_mut("deletedIds").and_then(Value::as_array_mut)
        {
            self.stripped
                .deleted_ids
                .fetch_add(deleted.len() as u64, Ordering::Relaxed);
            deleted.clear();
        }
        Bytes::from(serde_json::to_vec(&json).expect("JSON"))
    }

    /// Relays a stream block by block (each ends in a blank line), taking `revision` out of
    /// every frame's payload and, with [`Fault::DropEventFrame`], dropping one event frame.
    fn stream(&self, mut upstream: reqwest::Response) -> Response {
        let (sender, receiver) = mpsc::channel::<Bytes>(64);
        let stripped = self.stripped.clone();
        let fault = self.fault;
        tokio::spawn(async move {
            let mut pending: Vec<u8> = Vec::new();
            while let Ok(Some(chunk)) = upstream.chunk().await {
                pending.extend_from_slice(&chunk);
                let mut out = Vec::new();
                while let Some(end) = find_block_end(&pending) {
                    let block: Vec<u8> = pending.drain(..end).collect();
                    if let Some(block) = relay_block(&block, &stripped, fault) {
                        out.extend_from_slice(&block);
                    }
                }
                if !out.is_empty() && sender.send(Bytes::from(out)).await.is_err() {
                    return;
                }
            }
        });
        warp::reply::stream(Chunks(receiver)).into_response()
    }
}

/// The end (after the blank line) of the first complete block of `text`.
fn find_block_end(text: &[u8]) -> Option<usize> {
    text.windows(2).position(|w| w == b"\n\n").map(|at| at + 2)
}

/// One block as the original would send it, or nothing when the fault drops it.
fn relay_block(block: &[u8], stripped: &Stripped, fault: Fault) -> Option<Vec<u8>> {
    let Some(data) = block.strip_prefix(b"data: ") else {
        return Some(block.to_vec());
    };
    let text = data.strip_suffix(b"\n\n").unwrap_or(data);
    let Ok(mut frame) = serde_json::from_slice::<Value>(text) else {
        return Some(block.to_vec());
    };
    let is_event_frame = frame["type"].as_str().is_some_and(|kind| {
        matches!(
            kind,
            "event_created" | "event_updated" | "event_removed" | "attendance_changed"
        )
    });
    if is_event_frame {
        let number = stripped.event_frames.fetch_add(1, Ordering::Relaxed) + 1;
        if fault == Fault::DropEventFrame(number) {
            stripped.dropped_frames.fetch_add(1, Ordering::Relaxed);
            return None;
        }
    }
    let removed = strip_revisions(&mut frame);
    stripped
        .frame_revisions
        .fetch_add(removed, Ordering::Relaxed);
    let mut out = b"data: ".to_vec();
    out.extend_from_slice(&serde_json::to_vec(&frame).expect("JSON"));
    out.extend_from_slice(b"\n\n");
    Some(out)
}

/// Takes `revision` out of every event document in `value` (an object with `id`, `title`
/// and `calendars`); how many it took out.
fn strip_revisions(value: &mut Value) -> u64 {
    match value {
        Value::Object(object) => {
            let is_event = ["id", "title", "calendars"]
                .iter()
                .all(|key| object.contains_key(*key));
            let mut removed = u64::from(is_event && object.shift_remove("revision").is_some());
            for nested in object.values_mut() {
                removed += strip_revisions(nested);
            }
            removed
        }
        Value::Array(items) => items.iter_mut().map(strip_revisions).sum(),
        _ => 0,
    }
}

/// The relayed stream's body.
struct Chunks(mpsc::Receiver<Bytes>);

impl futures::Stream for Chunks {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(Ok))
    }
}
