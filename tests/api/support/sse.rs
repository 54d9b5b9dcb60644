//! Reads `/api/stream` like a client: frames arrive as `data:` lines, waited for with a
//! timeout.

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::WAIT;

/// One open stream.
pub struct SseClient {
    response: reqwest::Response,
    buffer: String,
}

/// One event block of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseEvent {
    /// `retry: <ms>`.
    Retry(u64),
    /// A comment (keep-alive).
    Comment(String),
    /// A `data:` payload.
    Data(String),
}

impl SseClient {
    /// Opens the stream with `request` (already carrying credentials); panics unless 200.
    pub async fn open(request: reqwest::RequestBuilder) -> Self {
        let response = request.send().await.expect("stream request");
        assert_eq!(response.status(), StatusCode::OK, "stream opens");
        let content_type = response.headers()["content-type"].to_str().expect("text");
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The response headers.
    pub fn headers(&self) -> &reqwest::header::HeaderMap {
        self.response.headers()
    }

    /// The next event, within the wait; `None` when the stream ended.
    pub async fn next_event(&mut self) -> Option<SseEvent> {
        tokio::time::timeout(WAIT, self.read_event())
            .await
            .expect("an event within the wait")
    }

    async fn read_event(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(event) = parse(block.trim_end()) {
                    return Some(event);
                }
                continue;
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// The next frame (`{type, payload}`), skipping retry and keep-alive lines.
    pub async fn next_frame(&mut self) -> Value {
        loop {
            match self.next_event().await.expect("stream still open") {
                SseEvent::Data(data) => return serde_json::from_str(&data).expect("frame is JSON"),
                SseEvent::Retry(_) | SseEvent::Comment(_) => continue,
            }
        }
    }

    /// Waits for the stream to end (server shutdown, or the connection dropped).
    pub async fn expect_end(&mut self) {
        loop {
            if self.next_event().await.is_none() {
                return;
            }
        }
    }
}

fn parse(block: &str) -> Option<SseEvent> {
    let mut data = Vec::new();
    for line in block.lines() {
        if let Some(comment) = line.strip_prefix(':') {
            return Some(SseEvent::Comment(comment.trim().to_owned()));
        }
        if let Some(retry) = line.strip_prefix("retry:") {
            return retry.trim().parse().ok().map(SseEvent::Retry);
        }
        if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
        }
    }
    (!data.is_empty()).then(|| SseEvent::Data(data.join("\n")))
}
