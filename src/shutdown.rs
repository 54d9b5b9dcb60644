//! [`Shutdown`]: one server's stop signal, shared by its listeners, streams and actors, and
//! why it fired when the server cannot go on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

/// The server's shutdown signal, and why it fired if not on request.
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    token: CancellationToken,
    fatal: Arc<OnceLock<String>>,
    abandoned: Arc<AtomicBool>,
}

impl Shutdown {
    /// A signal that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a graceful shutdown.
    pub fn trigger(&self) {
        self.token.cancel();
    }

    /// Starts a shutdown because the server cannot go on (e.g. a supervisor gave up), so the
    /// process exits with an error and its manager restarts it.
    pub fn escalate(&self, reason: String) {
        let _ = self.fatal.set(reason);
        self.token.cancel();
    }

    /// Stops the server as a killed process stops, as far as the other instances sharing
    /// its database can tell: what it holds there (accounts' leases) is left to expire rather
    /// than released (tests of takeover).
    #[cfg(feature = "fault-injection")]
    pub fn abandon(&self) {
        self.abandoned.store(true, Ordering::SeqCst);
        self.token.cancel();
    }

    /// Whether the server stops without releasing what it holds in the database.
    pub fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::SeqCst)
    }

    /// Resolves once shutdown has started.
    pub async fn triggered(&self) {
        self.token.cancelled().await;
    }

    /// Whether shutdown has started.
    pub fn is_triggered(&self) -> bool {
        self.token.is_cancelled()
    }

    /// The reason of an escalated shutdown.
    pub fn fatal_reason(&self) -> Option<&str> {
        self.fatal.get().map(String::as_str)
    }

    /// The underlying token, for stream combinators.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}
