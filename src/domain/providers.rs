//! The calendar providers an account can be connected to, by their names on the wire
//! (`caldav`, `google`, `microsoft`; the spec's neutral `provider_a` and `provider_c` are
//! read as Google and Microsoft), and the key that names one connected account.

use std::fmt;

use super::ids::AccountId;

/// A calendar provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
    /// Any CalDAV server (iCloud, Fastmail, Nextcloud, ...), with a user name and password.
    Caldav,
    /// Google Calendar, linked by OAuth.
    Google,
    /// Microsoft Outlook (Graph), linked by OAuth.
    Microsoft,
}

impl Provider {
    /// Every provider, in the order `syncProviders` lists them.
    pub const ALL: [Provider; 3] = [Provider::Google, Provider::Microsoft, Provider::Caldav];

    /// The name on the wire and in stored rows.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Caldav => "caldav",
            Self::Google => "google",
            Self::Microsoft => "microsoft",
        }
    }

    /// The provider a client names (`google`, `microsoft`, `caldav`, or the spec's
    /// `provider_a` and `provider_c`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "caldav" => Some(Self::Caldav),
            "google" | "provider_a" => Some(Self::Google),
            "microsoft" | "provider_c" => Some(Self::Microsoft),
            _ => None,
        }
    }

    /// Whether accounts of this provider are linked by OAuth (sign-in accounts with tokens).
    pub fn is_oauth(self) -> bool {
        matches!(self, Self::Google | Self::Microsoft)
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One connected account: its provider and its id (a CalDAV account's UUID, or the
/// provider's subject id of a Google or Microsoft account), as mirror and outbox rows name
/// it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccountKey {
    /// The provider.
    pub provider: Provider,
    /// The account's id.
    pub id: AccountId,
}

impl AccountKey {
    /// The key of `id` at `provider`.
    pub fn new(provider: Provider, id: impl Into<AccountId>) -> Self {
        Self {
            provider,
            id: id.into(),
        }
    }

    /// The key a stored row names (`provider`, `account_id`); `None` for an unknown provider.
    pub fn from_row(provider: &str, id: &AccountId) -> Option<Self> {
        let id = id.clone();
        Provider::parse(provider).map(|provider| Self::new(provider, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_neutral_ids_are_read() {
        for provider in Provider::ALL {
            assert_eq!(Provider::parse(provider.as_str()), Some(provider));
        }
        assert_eq!(Provider::parse("provider_a"), Some(Provider::Google));
        assert_eq!(Provider::parse("provider_c"), Some(Provider::Microsoft));
        assert_eq!(Provider::parse("apple"), None);
        assert!(Provider::Google.is_oauth() && !Provider::Caldav.is_oauth());
    }
}
