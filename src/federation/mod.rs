//! Federation on the home side: this server's users reaching calendars on other servers.
//!
//! A user connects by an invite of the other server ([`home::connect`]): this server runs the
//! accept handshake there on the user's behalf and keeps the member token it returns, sealed
//! (the roaming token), never showing it to the client. Requests then reach that server
//! through the gateway ([`gateway`]), which attaches the token; while the user has a live
//! stream here, their session actor holds one stream to each connected server and re-emits
//! its frames as `federated_sync` ([`upstream`]). Every request to a peer goes through the
//! outbound guard ([`peer`]). The origin side (accepting members of other servers) is
//! [`crate::commands::federation`].

pub mod gateway;
pub mod home;
pub mod peer;
pub mod upstream;

use std::time::Duration;

use crate::error::AppError;
use crate::providers::outbound::OutboundGuard;
use crate::secret_box::SecretBox;

/// What federation on the home side uses. Cheap to clone.
#[derive(Clone)]
pub struct Federation {
    /// The outbound guard (shared with the provider mirrors).
    pub guard: OutboundGuard,
    /// Seals the roaming tokens (`CALDAV_ENC_KEY`); without it no connection can be made.
    pub secrets: Option<SecretBox>,
    /// This server's own origin (the `homeServer` it announces, and refused as a peer).
    pub own_origin: String,
    /// The longest one request to a peer may take.
    pub request_timeout: Duration,
    /// The first wait before reopening a failed upstream stream (doubling, at most a
    /// minute).
    pub stream_retry: Duration,
}

impl std::fmt::Debug for Federation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Federation")
            .field("own_origin", &self.own_origin)
            .field("sealing", &self.secrets.is_some())
            .finish_non_exhaustive()
    }
}

impl Federation {
    /// The key sealing roaming tokens, or a clear 400 when the operator set none.
    pub fn secrets(&self) -> Result<&SecretBox, AppError> {
        self.secrets.as_ref().ok_or_else(|| {
            AppError::bad_request(
                "Connecting to other servers is not enabled here: the operator has to set CALDAV_ENC_KEY.",
            )
        })
    }
}
