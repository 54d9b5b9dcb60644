//! Version strings clients and peers compare.
//!
//! Clients of this API compare `minClientVersion` with their own version, and peers refuse
//! servers whose `version` is below the wire version they need, so `version` is the API wire
//! version Bowline implements, not the crate version (reported separately as `implementation`).

/// The API wire version Bowline is compatible with.
pub const WIRE_VERSION: &str = "0.1.5";
/// The oldest client version this server supports.
pub const MIN_CLIENT_VERSION: &str = "0.1.3";
/// This implementation and its own version.
pub const IMPLEMENTATION: &str = concat!("bowline/", env!("CARGO_PKG_VERSION"));
