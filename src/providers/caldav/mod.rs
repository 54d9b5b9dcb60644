//! A CalDAV client (RFC 4791, sync-collection of RFC 6578) over the outbound guard:
//! discovery, calendar listing and management, incremental sync, multiget and conditional
//! writes, tested against Radicale and Xandikos.
//!
//! URLs: hrefs in multistatus replies (percent-encoded paths, sometimes absolute URLs) are
//! resolved against the URL of the request that returned them, and members are compared as
//! URLs. ETags and ctags are kept exactly as the server sent them, quotes included, so they
//! can go back in `If-Match`.

mod client;
mod xml;

use std::time::Duration;

use crate::providers::outbound::OutboundError;

pub use client::CaldavClient;

/// Where a user's calendars live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// The user's principal (`current-user-principal`).
    pub principal: url::Url,
    /// The collection holding the user's calendars (`calendar-home-set`).
    pub home: url::Url,
}

/// A calendar collection on the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteCalendar {
    /// The collection's URL.
    pub url: url::Url,
    /// `displayname`.
    pub name: Option<String>,
    /// `calendar-color` (Apple namespace) as the server sent it, e.g. `#FF5733FF`.
    pub color: Option<String>,
    /// `getctag` (Calendar Server namespace), as sent (quotes included).
    pub ctag: Option<String>,
    /// `sync-token` (RFC 6578), when the server supports sync-collection.
    pub sync_token: Option<String>,
    /// The server reported a `current-user-privilege-set` without write access.
    pub read_only: bool,
    /// The collection may hold events: `supported-calendar-component-set` is absent or
    /// contains VEVENT.
    pub has_events: bool,
}

/// A resource of a calendar and its current ETag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The resource's URL.
    pub url: url::Url,
    /// Its ETag as sent (quotes included), when the server reported one.
    pub etag: Option<String>,
}

/// What changed in a calendar since a sync token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncChanges {
    /// The token to send next time.
    pub token: String,
    /// New or changed resources.
    pub changed: Vec<Member>,
    /// Removed resources (404 entries; these can appear even in an initial sync).
    pub removed: Vec<url::Url>,
}

/// A calendar resource with its iCalendar text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteObject {
    /// The resource's URL.
    pub url: url::Url,
    /// Its ETag as sent (quotes included), when the server reported one.
    pub etag: Option<String>,
    /// The iCalendar text (servers may re-serialise what was stored).
    pub data: String,
}

/// Why a CalDAV call failed.
#[derive(Debug, thiserror::Error)]
pub enum CaldavError {
    /// 401: the credentials were refused.
    #[error("the CalDAV server refused the credentials")]
    Unauthorized,
    /// 403 (other than an invalid sync token).
    #[error("the CalDAV server forbids this")]
    Forbidden,
    /// 404.
    #[error("not found on the CalDAV server")]
    NotFound,
    /// 412: the resource changed (If-Match) or exists (If-None-Match).
    #[error("the resource changed on the CalDAV server")]
    PreconditionFailed,
    /// The sync token is no longer valid: throw it away and sync from scratch.
    #[error("the sync token is no longer valid")]
    InvalidSyncToken,
    /// The collection does not support sync-collection: compare etags instead.
    #[error("the CalDAV server does not support sync-collection here")]
    SyncUnsupported,
    /// Another 4xx (400, 409 no-uid-conflict, 415, ...).
    #[error("the CalDAV server rejected the request ({status}): {message}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// A short text from the server (at most 200 characters).
        message: String,
    },
    /// 5xx, 429 or 408: try again later.
    #[error("the CalDAV server is unavailable ({status:?})")]
    Unavailable {
        /// The HTTP status.
        status: Option<u16>,
        /// What the server's `Retry-After` asked for.
        retry_after: Option<Duration>,
    },
    /// A reply that cannot be read or lacks what it must have.
    #[error("unexpected reply from the CalDAV server: {0}")]
    Malformed(String),
    /// Refused by the outbound guard, timed out, could not connect, too large.
    #[error(transparent)]
    Outbound(#[from] OutboundError),
}

impl CaldavError {
    /// Whether trying again later may succeed (unavailable, timed out, connection failed).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            CaldavError::Unavailable { .. }
                | CaldavError::Outbound(OutboundError::Timeout | OutboundError::Connect(_))
        )
    }

    /// How long the server asked to wait (`Retry-After`, seconds or an HTTP-date).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            CaldavError::Unavailable { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}
