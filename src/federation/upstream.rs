//! One upstream stream: while a user has a live stream here, their session actor holds one
//! of these per connected server. It opens `GET <server>/api/stream` with the member token
//! and turns each frame that arrives into `federated_sync {server, upstreamType}` for the
//! user's own streams. When the stream fails or ends it is opened again after a wait that
//! doubles up to a minute (reset once a stream opens); a panic in an attempt is caught,
//! counted and retried the same way. Dropping the handle stops it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::FutureExt;
use serde_json::{Value, json};
use tokio_util::task::AbortOnDropHandle;

use super::Federation;
use super::home::token_for;
use crate::domain::frames::Frame;
use crate::domain::ids::{ConnectionId, UserId};
use crate::metrics::Metrics;
use crate::store::Database;
use crate::store::federation_connections as connections;

/// The longest wait between two attempts.
const MAX_RETRY: Duration = Duration::from_secs(60);
/// A stream silent this long (no frame, no keep-alive) is taken for dead and reopened.
const SILENCE: Duration = Duration::from_secs(120);
/// The most one frame may hold before the stream is taken for broken.
const MAX_FRAME_BYTES: usize = 1024 * 1024;

/// Where the `federated_sync` frames go (the user's session actor).
pub type Sink = Arc<dyn Fn(Bytes) + Send + Sync>;

/// What an upstream stream needs.
#[derive(Clone)]
pub struct UpstreamContext {
    /// Federation (guard, key, timeouts).
    pub federation: Federation,
    /// The database (the connection's current token).
    pub db: Database,
    /// The metrics.
    pub metrics: Arc<Metrics>,
}

/// A held upstream stream; dropping it stops the stream.
#[derive(Debug)]
pub struct Upstream {
    _task: AbortOnDropHandle<()>,
}

/// Counts the stream as open for as long as it is.
struct Open(Arc<Metrics>);

impl Open {
    fn new(metrics: Arc<Metrics>) -> Self {
        metrics.federated_upstream(1.0);
        Self(metrics)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.federated_upstream(-1.0);
    }
}

/// Starts the upstream stream of connection `connection` of `user_id`.
pub fn spawn(
    context: UpstreamContext,
    user_id: UserId,
    connection: ConnectionId,
    sink: Sink,
) -> Upstream {
    let task = tokio::spawn(async move {
        let mut wait = context.federation.stream_retry;
        loop {
            let attempt = AssertUnwindSafe(attempt(&context, &user_id, connection, &sink))
                .catch_unwind()
                .await;
            match attempt {
                Ok(Ended::Gone) => return,
                Ok(Ended::AfterFrames) => wait = context.federation.stream_retry,
                Ok(Ended::Failed(reason)) => context.metrics.federated_upstream_failed(reason),
                Err(_) => {
                    tracing::error!(%connection, "federation.upstream_panicked");
                    context.metrics.federated_upstream_failed("panic");
                }
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(MAX_RETRY);
        }
    });
    Upstream {
        _task: AbortOnDropHandle::new(task),
    }
}

/// How one attempt ended.
enum Ended {
    /// The connection no longer exists: stop.
    Gone,
    /// A stream was open and then ended: reopen soon.
    AfterFrames,
    /// No stream could be opened, or it broke: wait longer each time.
    Failed(&'static str),
}

async fn attempt(
    context: &UpstreamContext,
    user_id: &UserId,
    id: ConnectionId,
    sink: &Sink,
) -> Ended {
    let federation = &context.federation;
    let connection = match connections::find(&context.db, user_id, id).await {
        Ok(Some(connection)) => connection,
        Ok(None) => return Ended::Gone,
        Err(err) => {
            tracing::warn!(error = %err, "federation.upstream_lookup_failed");
            return Ended::Failed("unreachable");
        }
    };
    let token = match token_for(federation, &context.db, &connection).await {
        Ok(Some(token)) => token,
        Ok(None) => return Ended::Gone,
        Err(_) => return Ended::Failed("refused"),
    };
    let mut stream = match federation.open_stream(&connection.server, &token).await {
        Ok(stream) => stream,
        Err(err) => {
            tracing::info!(server = %connection.server, error = %err, "federation.upstream_unreachable");
            return Ended::Failed("unreachable");
        }
    };
    if !stream.status.is_success() {
        tracing::info!(server = %connection.server, status = stream.status.as_u16(), "federation.upstream_refused");
        return Ended::Failed("status");
    }
    tracing::debug!(server = %connection.server, "federation.upstream_open");
    let _open = Open::new(context.metrics.clone());
    let mut frames = FrameReader::default();
    loop {
        let chunk = match tokio::time::timeout(SILENCE, stream.chunk()).await {
            Ok(Ok(Some(chunk))) => chunk,
            Ok(Ok(None)) => return Ended::AfterFrames,
            Ok(Err(_)) | Err(_) => return Ended::Failed("closed"),
        };
        let Some(types) = frames.push(&chunk) else {
            return Ended::Failed("closed");
        };
        for upstream_type in types {
            let frame = Frame::new(
                "federated_sync",
                json!({ "server": connection.server, "upstreamType": upstream_type }),
            );
            sink(frame.block());
        }
    }
}

/// Splits a `text/event-stream` body into events and reads each one's `type`.
#[derive(Debug, Default)]
struct FrameReader {
    buffer: BytesMut,
}

impl FrameReader {
    /// Adds `chunk`; the types of the frames it completed (`unknown` for data without a
    /// readable type), or `None` when a frame grew past the limit.
    fn push(&mut self, chunk: &[u8]) -> Option<Vec<String>> {
        self.buffer.extend_from_slice(chunk);
        let mut types = Vec::new();
        while let Some((end, separator)) = event_end(&self.buffer) {
            let event = self.buffer.split_to(end + separator);
            if let Some(upstream_type) = event_type(&event[..end]) {
                types.push(upstream_type);
            }
        }
        (self.buffer.len() <= MAX_FRAME_BYTES).then_some(types)
    }
}

/// Where the first event in `buffer` ends, and the length of the blank line ending it.
fn event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let mut at = 0;
    while at < buffer.len() {
        if buffer[at..].starts_with(b"\r\n\r\n") {
            return Some((at, 4));
        }
        if buffer[at..].starts_with(b"\n\n") || buffer[at..].starts_with(b"\r\r") {
            return Some((at, 2));
        }
        at += 1;
    }
    None
}

/// The type of one event's data (`None` for an event without data: a comment, `retry:`).
fn event_type(event: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(event);
    let mut data = String::new();
    for line in text.split(['\n', '\r']) {
        if let Some(value) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    if data.is_empty() {
        return None;
    }
    let kind = serde_json::from_str::<Value>(&data)
        .ok()
        .and_then(|value| value.get("type")?.as_str().map(str::to_owned))
        .filter(|kind| kind.len() <= 64)
        .unwrap_or_else(|| "unknown".to_owned());
    Some(kind)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn frames_are_read_across_chunks() {
        let mut reader = FrameReader::default();
        assert_eq!(
            reader.push(b"retry: 3000\n\n: ping\n\n").unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(
            reader
                .push(b"data: {\"type\":\"event_created\",\"pay")
                .unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(
            reader
                .push(b"load\":{}}\n\ndata: {\"type\":\"calendar_updated\"}\r\n\r\ndata: not json\n\n")
                .unwrap(),
            vec!["event_created", "calendar_updated", "unknown"]
        );
        assert!(reader.buffer.is_empty());
    }

    #[test]
    fn an_endless_frame_breaks_the_stream() {
        let mut reader = FrameReader::default();
        let big = vec![b'x'; MAX_FRAME_BYTES + 1];
        assert!(reader.push(&big).is_none());
    }
}
