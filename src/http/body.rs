//! Request bodies: every body must arrive within `BODY_READ_TIMEOUT_MS` of its head
//! ([`Deadline`]; a late one is a 408), and the rest of a body refused as too large is read
//! and thrown away for a bounded time before the 413 is sent ([`discard`]), as nginx's
//! lingering close does: a client that writes its whole body before it reads the answer
//! (Python's `http.client`, curl without `Expect`) would otherwise find the connection reset
//! under it and never see the 413.

use std::error::Error as StdError;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Buf;
use futures::StreamExt;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::error::AppError;

/// The most of a refused body that is read and thrown away.
const DISCARD_BYTES: u64 = 16 * 1024 * 1024;
/// How long a refused body is read and thrown away at most.
const DISCARD_TIME: Duration = Duration::from_secs(5);

/// The answer to a body that missed its deadline.
pub fn timed_out() -> AppError {
    AppError::RequestTimeout("The request body did not arrive in time.".into())
}

/// Why reading a body failed.
#[derive(Debug)]
pub enum BodyError {
    /// The body's deadline passed.
    TimedOut,
    /// The connection failed.
    Broken(Box<dyn StdError + Send + Sync>),
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TimedOut => f.write_str("the request body did not arrive in time"),
            Self::Broken(err) => write!(f, "the request body could not be read: {err}"),
        }
    }
}

impl StdError for BodyError {}

/// Whether `err`, or an error it wraps, is a missed body deadline.
pub fn is_timeout(err: &(dyn StdError + 'static)) -> bool {
    let mut current = Some(err);
    while let Some(err) = current {
        if matches!(err.downcast_ref::<BodyError>(), Some(BodyError::TimedOut)) {
            return true;
        }
        current = err.source();
    }
    false
}

/// A request body that fails with [`BodyError::TimedOut`] once its deadline passed. Its
/// timer starts only when the body is first waited for: most requests have no body, or one
/// that has already arrived.
pub struct Deadline<B> {
    body: B,
    due: Instant,
    timer: Option<Pin<Box<Sleep>>>,
}

impl<B> Deadline<B> {
    /// `body`, due by `at`.
    pub fn new(body: B, at: Instant) -> Self {
        Self {
            body,
            due: at,
            timer: None,
        }
    }
}

impl<B> Body for Deadline<B>
where
    B: Body + Unpin,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    type Data = B::Data;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, BodyError>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(|e| BodyError::Broken(e.into()))));
        }
        let due = self.due;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(BodyError::TimedOut))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Reads what is left of a body refused as too large and throws it away, for at most
/// [`DISCARD_TIME`] and [`DISCARD_BYTES`], unless the client asked to be told before sending
/// it (`Expect: 100-continue`, never answered with a 100 here). Past those bounds the
/// connection is closed with the answer, as before.
pub async fn discard<S, D, E>(headers: &HeaderMap, rest: S)
where
    S: futures::Stream<Item = Result<D, E>>,
    D: Buf,
{
    let expects_continue = headers
        .get(http::header::EXPECT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.eq_ignore_ascii_case("100-continue"));
    if expects_continue {
        return;
    }
    let _ = tokio::time::timeout(DISCARD_TIME, async {
        let mut rest = std::pin::pin!(rest);
        let mut thrown = 0_u64;
        while let Some(Ok(chunk)) = rest.next().await {
            thrown += chunk.remaining() as u64;
            if thrown > DISCARD_BYTES {
                break;
            }
        }
    })
    .await;
}
