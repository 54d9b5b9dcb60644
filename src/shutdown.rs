//! [`Shutdown`]: one server's stop signal, shared by its listeners, streams and actors, and
//! why it fired when the server cannot go on.

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

/// The server's shutdown signal, and why it fired if not on request.
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    token: CancellationToken,
    fatal: Arc<OnceLock<String>>,
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
