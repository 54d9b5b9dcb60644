//! What a server advertises in `GET /api/v1/server`, derived from its configuration.

use super::Settings;

/// The advertised capabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Native sign-in providers with credentials configured: `google` when the web client id
    /// is set, `apple` when the Apple client id is set (in that order).
    pub socials: Vec<&'static str>,
    /// Calendar providers that can be connected: `google` and `microsoft` when their client
    /// id and secret are set, `caldav` always; each only with `CALDAV_ENC_KEY` set (the key
    /// that seals stored passwords and tokens).
    pub sync_providers: Vec<&'static str>,
    /// Whether mail can actually be delivered.
    pub email: bool,
    /// The VAPID public key browsers subscribe with, when web push is configured.
    pub push_public_key: Option<String>,
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
        let mut sync_providers = Vec::new();
        if settings.caldav.enc_key.is_some() {
            if settings.google.client_id.is_some() && settings.google.client_secret.is_some() {
                sync_providers.push("google");
            }
            if settings.microsoft.client_id.is_some() && settings.microsoft.client_secret.is_some()
            {
                sync_providers.push("microsoft");
            }
            sync_providers.push("caldav");
        }
        let push = &settings.push;
        let push_public_key = match (
            &push.vapid_public_key,
            &push.vapid_private_key,
            &push.vapid_subject,
        ) {
            (Some(public), Some(_), Some(_)) => Some(public.clone()),
            _ => None,
        };
        Self {
            socials,
            sync_providers,
            email,
            push_public_key,
        }
    }
}
