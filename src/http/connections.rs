//! The listener's open connections: at most a capacity of them, each watched for silence.
//!
//! [`Registry::admit`] gives a new connection a [`Slot`]. At capacity, the oldest connection
//! with no request in progress (one that sent nothing yet, or a kept-alive one between
//! requests) is told to close and the new one takes its place: silent or slow clients can
//! never lock out a real one. Only when every connection is busy is the new one refused. A
//! request counts as in progress from its head until its response body has been written (an
//! open stream is busy for as long as it is open).
//!
//! [`Watched`] wraps a connection's socket and notes when bytes last moved either way;
//! [`Registry::close_silent`], run by one sweeper for all connections, closes those on which
//! nothing moved for the idle timeout (one timer for the listener, not one per connection).

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// Descriptors kept free beside the connections when the capacity follows the open-file
/// limit: the database pool, SQLite's files, logs, outgoing requests, the metrics listener.
const RESERVED_DESCRIPTORS: u64 = 64;

/// The connection capacity: `configured`, or (0) the open-file limit less a reserve.
pub fn capacity(configured: u32) -> usize {
    if configured > 0 {
        return usize::try_from(configured).unwrap_or(usize::MAX);
    }
    let soft = rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1_024, |(soft, _)| soft);
    let reserve = RESERVED_DESCRIPTORS.max(soft / 8);
    usize::try_from(soft.saturating_sub(reserve).max(16)).unwrap_or(usize::MAX)
}

/// One server's open connections.
#[derive(Debug)]
pub struct Registry {
    capacity: usize,
    epoch: Instant,
    next_id: AtomicU64,
    open: Mutex<BTreeMap<u64, Arc<Connection>>>,
}

/// What the registry knows of one connection.
#[derive(Debug)]
pub struct Connection {
    requests: AtomicUsize,
    last_io_ms: AtomicU64,
    epoch: Instant,
    closed: AtomicBool,
    close: Notify,
}

impl Connection {
    /// When bytes last moved either way.
    pub fn last_io(&self) -> Instant {
        self.epoch + Duration::from_millis(self.last_io_ms.load(Ordering::Relaxed))
    }

    fn touch(&self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_io_ms.store(now, Ordering::Relaxed);
    }

    /// Resolves when the registry wants this connection closed.
    pub async fn closing(&self) {
        self.close.notified().await;
    }

    /// Tells the connection's task to close it (once; a later wait still sees it).
    fn close(&self) {
        if !self.closed.swap(true, Ordering::Relaxed) {
            self.close.notify_one();
        }
    }

    /// Whether it was told to close.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Marks a request in progress until the returned guard is dropped.
    pub fn request_started(self: &Arc<Self>) -> InProgress {
        self.requests.fetch_add(1, Ordering::Relaxed);
        InProgress(self.clone())
    }
}

/// A request in progress on its connection.
#[derive(Debug)]
pub struct InProgress(Arc<Connection>);

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.requests.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection's place in the registry; dropping it frees the place.
#[derive(Debug)]
pub struct Slot {
    registry: Arc<Registry>,
    id: u64,
    /// The connection.
    pub connection: Arc<Connection>,
    /// Whether an idle connection was closed to make room for this one.
    pub evicted: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.registry.open.lock().remove(&self.id);
    }
}

impl Registry {
    /// A registry of at most `capacity` connections.
    pub fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            capacity: capacity.max(1),
            epoch: Instant::now(),
            next_id: AtomicU64::new(0),
            open: Mutex::new(BTreeMap::new()),
        })
    }

    /// Open connections.
    pub fn len(&self) -> usize {
        self.open.lock().len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes the connections on which nothing moved for `idle`; how many.
    pub fn close_silent(&self, idle: Duration) -> usize {
        let now = Instant::now();
        let mut open = self.open.lock();
        let silent: Vec<u64> = open
            .iter()
            .filter(|(_, c)| now.saturating_duration_since(c.last_io()) >= idle)
            .map(|(id, _)| *id)
            .collect();
        for id in &silent {
            if let Some(connection) = open.remove(id) {
                connection.close();
            }
        }
        silent.len()
    }

    /// A place for a new connection, closing the oldest idle one at capacity (then
    /// `evicted` is set); `None` when every open connection is busy.
    pub fn admit(self: &Arc<Self>) -> Option<Slot> {
        let mut open = self.open.lock();
        let mut evicted = false;
        if open.len() >= self.capacity {
            let idle = open
                .iter()
                .find(|(_, c)| c.requests.load(Ordering::Relaxed) == 0)
                .map(|(id, _)| *id)?;
            if let Some(oldest) = open.remove(&idle) {
                oldest.close();
                evicted = true;
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection {
            requests: AtomicUsize::new(0),
            last_io_ms: AtomicU64::new(0),
            epoch: self.epoch,
            closed: AtomicBool::new(false),
            close: Notify::new(),
        });
        connection.touch();
        open.insert(id, connection.clone());
        Some(Slot {
            registry: self.clone(),
            id,
            connection,
            evicted,
        })
    }
}

/// A socket that notes on its connection when bytes move.
#[derive(Debug)]
pub struct Watched<S> {
    inner: S,
    connection: Arc<Connection>,
}

impl<S> Watched<S> {
    /// Watches `inner` for `connection`.
    pub fn new(inner: S, connection: Arc<Connection>) -> Self {
        Self { inner, connection }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.connection.touch();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.connection.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.connection.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A response body that keeps its request in progress until it has been written.
pub struct Tracked<B> {
    body: B,
    _request: InProgress,
}

impl<B> Tracked<B> {
    /// `body`, its request in progress until it ends.
    pub fn new(body: B, request: InProgress) -> Self {
        Self {
            body,
            _request: request,
        }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for Tracked<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn at_capacity_the_oldest_idle_connection_makes_room() {
        let registry = Registry::new(2);
        let first = registry.admit().expect("room");
        let second = registry.admit().expect("room");
        let busy = first.connection.request_started();
        let third = registry.admit().expect("the idle second makes room");
        assert!(second.connection.is_closed());
        assert!(!first.connection.is_closed());
        let _also_busy = third.connection.request_started();
        assert!(registry.admit().is_none(), "every connection is busy");
        drop(busy);
        let _fourth = registry.admit().expect("the first is idle again");
        assert!(first.connection.is_closed());
        drop(second);
        drop(first);
        assert_eq!(registry.len(), 2, "third and fourth");
    }

    #[tokio::test]
    async fn connections_on_which_nothing_moved_are_closed() {
        let registry = Arc::new(Registry {
            capacity: 10,
            epoch: Instant::now() - Duration::from_secs(7_200),
            next_id: AtomicU64::new(0),
            open: Mutex::new(BTreeMap::new()),
        });
        let quiet = registry.admit().expect("room");
        let busy = registry.admit().expect("room");
        // Nothing moved on `quiet` since two hours ago.
        quiet.connection.last_io_ms.store(0, Ordering::Relaxed);
        assert_eq!(registry.close_silent(Duration::from_secs(3_600)), 1);
        assert!(quiet.connection.is_closed());
        assert!(!busy.connection.is_closed());
        assert_eq!(registry.len(), 1);
        // The task waiting for it is told even if it only starts waiting now.
        tokio::time::timeout(Duration::from_secs(1), quiet.connection.closing())
            .await
            .expect("told");
    }
}

/// This module's operations in the OpenAPI document (see [`crate::http::openapi`]): none, the
/// listener's connection registry answers no route.
#[derive(utoipa::OpenApi)]
pub struct Api;
