//! The HTTP listener: accepts connections, serves them with hyper (HTTP/1.1 and h2c) through
//! the [`Pipeline`], and shuts down gracefully: stop accepting, let open requests finish
//! (SSE streams end on the same signal), give up after the grace period.
//!
//! Connection tasks are the one kind of task spawned outside `actors/`: one per TCP
//! connection, owned by hyper's graceful-shutdown watcher.

use std::convert::Infallible;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

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
        let service = hyper::service::service_fn(move |request| {
            let pipeline = pipeline.clone();
            async move { Ok::<_, Infallible>(pipeline.handle(request, client_addr).await) }
        });
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let builder = auto::Builder::new(TokioExecutor::new());
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            if let Err(err) = watcher.watch(connection).await {
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

fn is_connection_error(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}
