//! Bowline: a self-hostable shared-calendar server.
//!
//! warp routes turn requests into messages for supervised ractor actors; sea-orm persists to
//! SQLite (embedded default) or PostgreSQL. See `README.md` for the actor tree and
//! `DESIGN.md` in the shared folder for the architecture.

#![warn(missing_docs)]

/// Supervised actors (one per file) and the `ask` hand-off.
pub mod actors;
/// The authentication subsystem (better-auth wire) and session resolution.
pub mod auth;
/// The mutations calendar actors run (validate, authorize, commit, broadcast).
pub mod commands;
/// Typed, layered configuration.
pub mod config;
/// The context shared by one server's requests and actors.
pub mod context;
/// CPU-heavy request work, run off the async runtime.
pub mod cpu;
/// Pure rules and value types.
pub mod domain;
/// The one error type and its status table.
pub mod error;
/// Federation's home side: connections to other servers, the gateway, upstream streams.
pub mod federation;
/// The warp edge: pipeline, routes, renderer, listener.
pub mod http;
/// iCalendar import and export (pure: no database).
pub mod ical;
/// Outgoing mail: transport and templates.
pub mod mail;
/// Metric names and the per-server registry.
pub mod metrics;
/// Clients of calendar providers (CalDAV) behind the one outbound guard.
pub mod providers;
/// The web push wire: message encryption (RFC 8291) and VAPID (RFC 8292).
pub mod push;
/// In-memory, per-process rate limits.
pub mod rate_limit;
/// AES-256-GCM sealing of stored credentials (`CALDAV_ENC_KEY`).
pub mod secret_box;
/// One server's stop signal.
pub mod shutdown;
/// Building and running a server.
pub mod startup;
/// Persistence: the only code that touches the database.
pub mod store;
/// JSON logging.
pub mod telemetry;
/// JSON documents shared by responses and frames.
pub mod views;

pub use config::Settings;
pub use error::AppError;
pub use startup::{Application, StartupError};
