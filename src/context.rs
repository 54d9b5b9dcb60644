//! [`AppContext`]: the one value the HTTP edge of one server shares between its requests.
//!
//! It holds what the actors share ([`Shared`]: configuration, the database, metrics, the
//! actors' handles, the shutdown signal; reached through it as if its own fields) and what
//! only requests use: sign-in, the offered capabilities, outgoing HTTP and CPU-heavy work.
//! Nothing is global, so several servers can run in one process.

use std::ops::Deref;
use std::sync::Arc;

use crate::actors::Shared;
use crate::auth::Auth;
use crate::config::capabilities::Capabilities;
use crate::cpu::CpuWork;

/// Everything one server's requests share.
#[derive(Debug)]
pub struct AppContext {
    /// What the server's actors share with its requests.
    pub shared: Arc<Shared>,
    /// What this server offers clients (sign-in providers, sync providers, mail).
    pub capabilities: Capabilities,
    /// Sign-in, sessions and the origin rules.
    pub auth: Auth,
    /// Outgoing HTTP (JWKS, providers, federation), rustls with compiled-in roots.
    pub http_client: reqwest::Client,
    /// CPU-heavy request work, off the async runtime and a few pieces at a time.
    pub cpu: Arc<CpuWork>,
}

impl Deref for AppContext {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// Shared handle to a server's context.
pub type Ctx = Arc<AppContext>;
