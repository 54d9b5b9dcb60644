//! Reads `/api/stream` like a client: frames arrive as `data: ` lines, waited for with a
//! timeout. The parser is strict about the bytes Bowline promises (`retry: 3000`, `: ping`,
//! `data: <json>`, each block ended by a blank line): anything else fails the test, so a
//! change in the framing (e.g. `data:{…}` without the space) cannot slip through.

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
        Self::from_response(request.send().await.expect("stream request"))
    }

    /// The stream `response` opened; panics unless it is one.
    pub fn from_response(response: reqwest::Response) -> Self {
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
                if let Some(event) = parse(&block[..end]) {
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

    /// The next frame (`{type, payload}`), skipping retry and keep-alive lines, within the
    /// wait as a whole (keep-alives do not extend it).
    pub async fn next_frame(&mut self) -> Value {
        tokio::time::timeout(WAIT, async {
            loop {
                match self.read_event().await.expect("stream still open") {
                    SseEvent::Data(data) => {
                        return serde_json::from_str(&data).expect("frame is JSON");
                    }
                    SseEvent::Retry(_) | SseEvent::Comment(_) => continue,
                }
            }
        })
        .await
        .expect("a frame within the wait")
    }

    /// Waits for the stream to end (server shutdown, or the connection dropped), within the
    /// wait as a whole (keep-alives do not extend it).
    pub async fn expect_end(&mut self) {
        tokio::time::timeout(WAIT, async { while self.read_event().await.is_some() {} })
            .await
            .expect("the stream ends within the wait");
    }
}

/// One block (without its blank line) as the server must write it; panics on anything else.
fn parse(block: &str) -> Option<SseEvent> {
    if block.is_empty() {
        return None;
    }
    let mut lines = block.split('\n');
    let first = lines.next().unwrap_or_default();
    assert!(
        lines.next().is_none(),
        "one line per block, as Bowline writes them: {block:?}"
    );
    if let Some(comment) = first.strip_prefix(": ") {
        return Some(SseEvent::Comment(comment.to_owned()));
    }
    if let Some(retry) = first.strip_prefix("retry: ") {
        let millis = retry
            .parse()
            .unwrap_or_else(|_| panic!("retry is a number of milliseconds: {block:?}"));
        return Some(SseEvent::Retry(millis));
    }
    if let Some(data) = first.strip_prefix("data: ") {
        return Some(SseEvent::Data(data.to_owned()));
    }
    panic!("not a block Bowline writes (`retry: `, `: ` or `data: `): {block:?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parser_takes_bowlines_blocks_and_nothing_looser() {
        assert_eq!(parse("retry: 3000"), Some(SseEvent::Retry(3000)));
        assert_eq!(parse(": ping"), Some(SseEvent::Comment("ping".into())));
        assert_eq!(
            parse(r#"data: {"type":"x"}"#),
            Some(SseEvent::Data(r#"{"type":"x"}"#.into()))
        );
        for loose in [
            "data:{}",
            "retry:3000",
            ":ping",
            "data: a\ndata: b",
            "event: x",
        ] {
            let refused = std::panic::catch_unwind(|| parse(loose));
            assert!(refused.is_err(), "{loose:?} must be refused");
        }
    }
}
