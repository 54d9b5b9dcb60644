//! The HTTP listener: accepts connections, serves them with hyper (HTTP/1.1 and h2c) through
//! the [`Pipeline`], and shuts down gracefully: stop accepting, let open requests finish
//! (SSE streams end on the same signal), give up after the grace period.
//!
//! Connection tasks are the one kind of task spawned outside `actors/`: one per TCP
//! connection, owned by hyper's graceful-shutdown watcher, and the listener's one sweeper of
//! silent connections.
//!
//! No connection holds its place for nothing ([`super::connections`]): its request head must
//! arrive within `HEADER_READ_TIMEOUT_MS` of the connection being ready for one (hyper's
//! header timer, which also ends kept-alive connections left idle that long), it is closed
//! once no byte moved either way for `IDLE_TIMEOUT_MS` (open streams send keep-alives), and
//! at `MAX_CONNECTIONS` the oldest connection without a request in progress gives its place
//! to a new one; when all are busy the new one is answered 503 and closed.
//!
//! The protocol is chosen from the first bytes ([`super::preface`]: the HTTP/2 preface means
//! prior-knowledge h2c), read within the header timeout and handed back to the protocol, and
//! the connection is then served by hyper's HTTP/1 or HTTP/2 connection alone. hyper-util's
//! auto-detecting connection does the same reading but holds room for both protocols in
//! every connection's task, about 9 KiB more per open stream, and waits for the preface
//! without a timeout.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use super::connections::{Registry, Slot, Tracked, Watched};
use super::pipeline::Pipeline;
use super::preface::read_opening;
use crate::metrics::Metrics;
use crate::shutdown::Shutdown;

/// How the listener treats connections.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A request head must arrive within this.
    pub header_read_timeout: Duration,
    /// A connection on which nothing moved this long is closed.
    pub idle_timeout: Duration,
    /// Open connections at most.
    pub capacity: usize,
    /// How long shutdown waits for open requests.
    pub grace: Duration,
}

/// Serves `listener` until `shutdown` fires, then drains open connections for up to the
/// grace period.
pub async fn serve(
    listener: TcpListener,
    pipeline: Pipeline,
    shutdown: Shutdown,
    metrics: Arc<Metrics>,
    limits: Limits,
) {
    let graceful = GracefulShutdown::new();
    let registry = Registry::new(limits.capacity);
    let sweeper = tokio::spawn(close_silent_connections(
        registry.clone(),
        limits.idle_timeout,
        metrics.clone(),
    ));
    loop {
        let accepted = tokio::select! {
            () = shutdown.triggered() => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, client_addr) = match accepted {
            Ok(pair) => pair,
            Err(err) if is_connection_error(&err) => continue,
            Err(err) => {
                // Typically EMFILE: back off briefly instead of spinning on accept.
                tracing::error!(error = %err, "http.accept_failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let Some(slot) = registry.admit() else {
            metrics.http_connection_closed("refused");
            tokio::spawn(refuse(stream));
            continue;
        };
        if slot.evicted {
            metrics.http_connection_closed("evicted");
        }
        metrics.http_connections(registry.len());
        let pipeline = pipeline.clone();
        let watcher = graceful.watcher();
        let metrics = metrics.clone();
        let registry = registry.clone();
        tokio::spawn(async move {
            let connection = slot.connection.clone();
            tokio::select! {
                () = serve_connection(stream, client_addr, pipeline, &slot, watcher, limits) => {}
                () = connection.closing() => tracing::debug!("http.connection.closed"),
            }
            drop(slot);
            metrics.http_connections(registry.len());
        });
    }
    drop(listener);
    sweeper.abort();
    tokio::select! {
        () = graceful.shutdown() => tracing::debug!("http.drained"),
        () = tokio::time::sleep(limits.grace) => tracing::warn!(grace_ms = limits.grace.as_millis() as u64, "http.shutdown.grace_expired"),
    }
}

/// Closes, every quarter of the idle timeout (at least every 100 ms, at most every 5 s), the
/// connections on which nothing moved for the idle timeout.
async fn close_silent_connections(registry: Arc<Registry>, idle: Duration, metrics: Arc<Metrics>) {
    let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        for _ in 0..registry.close_silent(idle) {
            metrics.http_connection_closed("idle");
        }
    }
}

/// Serves one admitted connection until it ends.
async fn serve_connection(
    stream: TcpStream,
    client_addr: std::net::SocketAddr,
    pipeline: Pipeline,
    slot: &Slot,
    watcher: hyper_util::server::graceful::Watcher,
    limits: Limits,
) {
    let stream = Watched::new(stream, slot.connection.clone());
    let stream = match tokio::time::timeout(limits.header_read_timeout, read_opening(stream)).await
    {
        Ok(Ok(stream)) => stream,
        Ok(Err(err)) => {
            tracing::debug!(error = %err, "http.connection.error");
            return;
        }
        Err(_) => {
            tracing::debug!("http.connection.silent");
            return;
        }
    };
    let h2 = stream.is_h2();
    let connection = slot.connection.clone();
    // The request's future is boxed: it is large (the whole pipeline and its routes) and
    // done once the response head is ready, while a connection's task lives as long as
    // the connection (an open stream would otherwise carry it for hours).
    let service = hyper::service::service_fn(move |request| {
        let pipeline = pipeline.clone();
        let in_progress = connection.request_started();
        Box::pin(async move {
            let response = pipeline.handle(request, client_addr).await;
            Ok::<_, Infallible>(response.map(|body| Tracked::new(body, in_progress)))
        })
    });
    let io = TokioIo::new(stream);
    let served = if h2 {
        let mut builder = http2::Builder::new(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .keep_alive_interval(limits.idle_timeout / 2)
            .keep_alive_timeout(limits.header_read_timeout);
        watcher.watch(builder.serve_connection(io, service)).await
    } else {
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout);
        watcher.watch(builder.serve_connection(io, service)).await
    };
    if let Err(err) = served {
        // Clients going away mid-response (an SSE tab closed), and heads that did not
        // arrive in time, end up here.
        tracing::debug!(error = %err, "http.connection.error");
    }
}

/// Answers a connection the listener has no room for (every open one is busy) with 503.
async fn refuse(mut stream: TcpStream) {
    let body = format!(
        "{{\"error\":\"The server is at its connection limit. Try again shortly.\",\"requestId\":\"{}\"}}",
        uuid::Uuid::new_v4()
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

fn is_connection_error(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}
