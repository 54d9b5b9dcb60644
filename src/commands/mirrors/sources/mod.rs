//! The adapters behind [`super::source::Source`]: one per provider, each turning its
//! provider's calendars and items into what the engine stores ([`super::resources`]) and the
//! engine's writes into its provider's requests.

pub mod caldav;
pub mod google;
pub mod microsoft;
pub mod vevent;

use chrono_tz::Tz;

use super::Mirrors;
use super::resources::{self, Fetched, Resource};
use crate::error::AppError;

/// Reads fetched items off the async runtime; unreadable ones are logged and left out (they
/// are tried again when they change).
pub(super) async fn read(
    env: &Mirrors,
    fetched: Vec<Fetched>,
    zone: Tz,
) -> Result<Vec<Resource>, AppError> {
    if fetched.is_empty() {
        return Ok(Vec::new());
    }
    let (read, unreadable) = env
        .cpu
        .run("reading remote events", move || {
            resources::read(fetched, zone)
        })
        .await?;
    for bad in &unreadable {
        tracing::warn!(reason = %bad.reason, "sync.resource_unreadable");
    }
    Ok(read)
}

/// Whether a listed item needs reading: it is not waiting for a local delete, and its tag
/// differs from the one the mirror holds (or there is none to compare).
pub(super) fn wanted(
    href: &str,
    etag: Option<&String>,
    known: &super::source::Known,
    skip: &std::collections::HashSet<String>,
) -> bool {
    !skip.contains(href)
        && (etag.is_none() || known.get(href).is_none_or(|held| held.tag.as_ref() != etag))
}
