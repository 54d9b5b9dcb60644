//! The HTTP listener: accepts connections, serves them with hyper (HTTP/1.1 and h2c) through
//! the [`Pipeline`], and shuts down gracefully: stop accepting, let open requests finish
//! (SSE streams end on the same signal), give up after the grace period.
//!
//! Connection tasks are the one kind of task spawned outside `actors/`: one per TCP
//! connection, owned by hyper's graceful-shutdown watcher.
//!
//! The protocol is chosen by peeking at the first bytes (the HTTP/2 preface means
//! prior-knowledge h2c) and the connection is then served by hyper's HTTP/1 or HTTP/2
//! connection alone. hyper-util's auto-detecting connection holds room for both in every
//! connection's task, about 9 KiB more per open stream.

use std::convert::Infallible;
use std::time::Duration;

use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};

use super::pipeline::Pipeline;
use crate::context::Shutdown;

/// Serves `listener` until `shutdown` fires, then drains open connections for up to `grace`.
pub async fn serve(listener: TcpListener, pipeline: Pipeline, shutdown: Shutdown, grace: Duration) {
    let graceful = GracefulShutdown::new();
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
        let pipeline = pipeline.clone();
        // The request's future is boxed: it is large (the whole pipeline and its routes) and
        // done once the response head is ready, while a connection's task lives as long as
        // the connection (an open stream would otherwise carry it for hours).
        let service = hyper::service::service_fn(move |request| {
            let pipeline = pipeline.clone();
            Box::pin(
                async move { Ok::<_, Infallible>(pipeline.handle(request, client_addr).await) },
            )
        });
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let h2 = opens_with_h2_preface(&stream).await;
            let io = TokioIo::new(stream);
            let served = if h2 {
                let builder = http2::Builder::new(TokioExecutor::new());
                watcher.watch(builder.serve_connection(io, service)).await
            } else {
                watcher
                    .watch(http1::Builder::new().serve_connection(io, service))
                    .await
            };
            if let Err(err) = served {
                // Clients going away mid-response (an SSE tab closed) end up here.
                tracing::debug!(error = %err, "http.connection.error");
            }
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => tracing::debug!("http.drained"),
        () = tokio::time::sleep(grace) => tracing::warn!(grace_ms = grace.as_millis() as u64, "http.shutdown.grace_expired"),
    }
}

/// What a prior-knowledge HTTP/2 client sends first (RFC 9113, section 3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether the client opens with the HTTP/2 preface, read without consuming it. A client
/// that sends the start of it and stalls is given a second, then served as HTTP/1 (which
/// refuses it).
async fn opens_with_h2_preface(stream: &TcpStream) -> bool {
    let mut first = [0_u8; H2_PREFACE.len()];
    for _ in 0..200 {
        match stream.peek(&mut first).await {
            Ok(0) | Err(_) => return false,
            Ok(n) if first[..n] != H2_PREFACE[..n] => return false,
            Ok(n) if n == H2_PREFACE.len() => return true,
            // Only a part of the preface so far: peek again once more has arrived.
            Ok(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
    false
}

fn is_connection_error(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}
