//! [`ProviderError`]: why a call to a calendar provider failed, in the terms the sync engine
//! acts on (whichever provider it was: CalDAV, Google or Microsoft Graph).

use std::time::Duration;

use crate::providers::caldav::CaldavError;
use crate::providers::outbound::OutboundError;

/// Why a provider call failed.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// 401: the provider refused the credentials or the access token.
    #[error("the calendar server refused the credentials")]
    Unauthorized,
    /// The account must be linked again: the provider refused its refresh token (`code`,
    /// e.g. `invalid_grant`).
    #[error("the account must be connected again ({code})")]
    ReconnectRequired {
        /// The provider's error code.
        code: String,
    },
    /// 403 (other than a rate limit).
    #[error("the provider forbids this: {0}")]
    Forbidden(String),
    /// 404, or a deleted item (Google's 410 `deleted`).
    #[error("not found at the provider")]
    NotFound,
    /// The item changed at the provider since it was read (`412`, Graph's `409
    /// ErrorIrresolvableConflict`).
    #[error("the item changed at the provider")]
    PreconditionFailed,
    /// The id of an item to create is taken (Google's `409 duplicate`).
    #[error("the item already exists at the provider")]
    AlreadyExists,
    /// The sync token or delta link is no longer valid: start a full sync.
    #[error("the provider asks for a full resync")]
    SyncReset,
    /// 5xx, 408, 429 or a rate limit: try again later (after `retry_after` if given).
    #[error("the provider is unavailable or limiting requests{}", status_text(*status))]
    Unavailable {
        /// The HTTP status.
        status: Option<u16>,
        /// What the provider's `Retry-After` asked for.
        retry_after: Option<Duration>,
    },
    /// Another 4xx.
    #[error("the provider rejected the request ({status}): {message}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// A short text from the provider.
        message: String,
    },
    /// Something this provider cannot take (a recurring event for Microsoft Graph).
    #[error("{0}")]
    Unsupported(String),
    /// A reply that cannot be read or lacks what it must have.
    #[error("unexpected reply from the provider: {0}")]
    Malformed(String),
    /// Refused by the outbound guard, timed out, could not connect, too large.
    #[error(transparent)]
    Outbound(#[from] OutboundError),
}

/// ` (503)`, or nothing without a status.
fn status_text(status: Option<u16>) -> String {
    status
        .map(|status| format!(" ({status})"))
        .unwrap_or_default()
}

impl ProviderError {
    /// Whether trying again later may succeed (unavailable, rate limited, timed out,
    /// connection failed).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ProviderError::Unavailable { .. }
                | ProviderError::Outbound(OutboundError::Timeout | OutboundError::Connect(_))
        )
    }

    /// How long the provider asked to wait (`Retry-After`).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Unavailable { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Whether the credentials are refused (the account's writes are held until it
    /// reconnects).
    pub fn needs_reconnect(&self) -> bool {
        matches!(
            self,
            ProviderError::Unauthorized | ProviderError::ReconnectRequired { .. }
        )
    }

    /// The code stored as the account's `syncErrorCode` when it needs reconnecting.
    pub fn reconnect_code(&self) -> Option<&str> {
        match self {
            ProviderError::Unauthorized => Some("unauthorized"),
            ProviderError::ReconnectRequired { code } => Some(code),
            _ => None,
        }
    }
}

impl From<CaldavError> for ProviderError {
    fn from(err: CaldavError) -> Self {
        match err {
            CaldavError::Unauthorized => Self::Unauthorized,
            CaldavError::Forbidden => Self::Forbidden("the CalDAV server forbids this".into()),
            CaldavError::NotFound => Self::NotFound,
            CaldavError::PreconditionFailed => Self::PreconditionFailed,
            CaldavError::InvalidSyncToken => Self::SyncReset,
            CaldavError::SyncUnsupported => {
                Self::Unsupported("the CalDAV server does not support sync-collection".into())
            }
            CaldavError::Rejected { status, message } => Self::Rejected { status, message },
            CaldavError::Unavailable {
                status,
                retry_after,
            } => Self::Unavailable {
                status,
                retry_after,
            },
            CaldavError::Malformed(message) => Self::Malformed(message),
            CaldavError::Outbound(err) => Self::Outbound(err),
        }
    }
}
