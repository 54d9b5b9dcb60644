//! What a server advertises in `GET /api/v1/server`, derived from its configuration.

use crate::config::Settings;

/// The advertised capabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Native sign-in providers with credentials configured: `google` when the web client id
    /// is set, `apple` when the Apple client id is set (in that order).
    pub socials: Vec<&'static str>,
    /// Calendar providers that can be connected: `caldav` when `CALDAV_ENC_KEY` is set (the
    /// key that seals the stored passwords).
    pub sync_providers: Vec<&'static str>,
    /// Whether mail can actually be delivered.
    pub email: bool,
}

impl Capabilities {
    /// The capabilities of a server configured by `settings`, with mail delivery `email`.
    pub fn new(settings: &Settings, email: bool) -> Self {
        let mut socials = Vec::new();
        if settings.google.client_id.is_some() {
            socials.push("google");
        }
        if settings.apple.client_id.is_some() {
            socials.push("apple");
        }
        Self {
            socials,
            sync_providers: if settings.caldav.enc_key.is_some() {
                vec!["caldav"]
            } else {
                Vec::new()
            },
            email,
        }
    }
}
