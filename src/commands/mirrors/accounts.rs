//! The accounts mirrors come from, whichever provider: a CalDAV account, or a Google or
//! Microsoft sign-in account linked with calendar consent. [`Connected`] is one of them as
//! stored; [`Mirrors::source`] opens the adapter its provider needs.

use entities::{accounts, caldav_accounts};
use uuid::Uuid;

use super::Mirrors;
use super::sources::AnySource;
use super::sources::caldav::CaldavSource;
use super::sources::google::GoogleSource;
use super::sources::microsoft::GraphSource;
use crate::domain::ids::{CaldavAccountId, UserId};
use crate::domain::providers::{AccountKey, Provider};
use crate::error::AppError;
use crate::store::caldav_accounts as caldav_store;
use crate::store::{oauth_accounts, settings};

/// The status an account's owner sees when its provider refused its credentials.
pub const RECONNECT_REQUIRED: &str = "reconnect_required";

/// A connected account as stored.
#[derive(Debug, Clone)]
pub enum Connected {
    /// A CalDAV account.
    Caldav(caldav_accounts::Model),
    /// A Google or Microsoft account linked with calendar consent.
    Linked(Provider, accounts::Model),
}

impl Connected {
    /// The key its mirrors and outbox rows name it by.
    pub fn key(&self) -> AccountKey {
        match self {
            Self::Caldav(account) => AccountKey::new(Provider::Caldav, account.id),
            Self::Linked(provider, account) => {
                AccountKey::new(*provider, account.account_id.clone())
            }
        }
    }

    /// The user who connected it.
    pub fn owner(&self) -> &UserId {
        match self {
            Self::Caldav(account) => &account.user_id,
            Self::Linked(_, account) => &account.user_id,
        }
    }

    /// Whether its writes are held: its provider refused the credentials (or it has none
    /// left) and it waits for its owner to connect it again.
    pub fn held(&self) -> bool {
        match self {
            Self::Caldav(account) => account.sync_status.is_some(),
            Self::Linked(_, account) => {
                account.sync_status.is_some() || account.refresh_token.is_none()
            }
        }
    }

    /// Whether a sync actor has anything to do for it (a linked account without tokens
    /// mirrors nothing until it is linked again).
    pub fn syncs(&self) -> bool {
        match self {
            Self::Caldav(_) => true,
            Self::Linked(_, account) => account.refresh_token.is_some(),
        }
    }
}

impl Mirrors {
    /// The account `key` names, if it is still connected and its provider still enabled.
    pub async fn account(&self, key: &AccountKey) -> Result<Option<Connected>, AppError> {
        if !self.enabled(key.provider) {
            return Ok(None);
        }
        let db = &self.services.db;
        Ok(match key.provider {
            Provider::Caldav => match Uuid::parse_str(key.id.as_str()) {
                Ok(id) => caldav_store::caldav_account(db, CaldavAccountId::from_uuid(id))
                    .await?
                    .map(Connected::Caldav),
                Err(_) => None,
            },
            provider => oauth_accounts::find(db, provider, &key.id)
                .await?
                .map(|account| Connected::Linked(provider, account)),
        })
    }

    /// Every account with something to sync, of the providers enabled here.
    pub async fn all_accounts(&self) -> Result<Vec<AccountKey>, AppError> {
        let db = &self.services.db;
        let mut keys = Vec::new();
        if self.enabled(Provider::Caldav) {
            for account in caldav_store::all_caldav_accounts(db).await? {
                keys.push(AccountKey::new(Provider::Caldav, account.id));
            }
        }
        for account in oauth_accounts::all_connected(db).await? {
            if let Some(provider) = Provider::parse(&account.provider_id)
                && self.enabled(provider)
            {
                keys.push(AccountKey::new(provider, account.account_id));
            }
        }
        Ok(keys)
    }

    /// The accounts of `user` with something to sync.
    pub async fn accounts_of(&self, user: &UserId) -> Result<Vec<AccountKey>, AppError> {
        let db = &self.services.db;
        let mut keys = Vec::new();
        if self.enabled(Provider::Caldav) {
            for account in caldav_store::caldav_accounts_of(db, user).await? {
                keys.push(AccountKey::new(Provider::Caldav, account.id));
            }
        }
        for provider in [Provider::Google, Provider::Microsoft] {
            if !self.enabled(provider) {
                continue;
            }
            for account in oauth_accounts::of_user(db, user, provider).await? {
                if account.refresh_token.is_some() {
                    keys.push(AccountKey::new(provider, account.account_id));
                }
            }
        }
        Ok(keys)
    }

    /// The adapter `account` needs.
    pub async fn source(&self, account: &Connected) -> Result<AnySource<'_>, AppError> {
        match account {
            Connected::Caldav(account) => {
                Ok(AnySource::Caldav(CaldavSource::open(self, account).await?))
            }
            Connected::Linked(provider, account) => {
                let zone = settings::zone_of(&self.services.db, &account.user_id).await?;
                let not_enabled = || {
                    AppError::bad_request(format!(
                        "{provider} calendars are not enabled on this server."
                    ))
                };
                match provider {
                    Provider::Google => {
                        let (app, api) = self.oauth.google.clone().ok_or_else(not_enabled)?;
                        Ok(AnySource::Google(GoogleSource::open(
                            self, app, &api, account, zone,
                        )?))
                    }
                    _ => {
                        let (app, graph, window) =
                            self.oauth.microsoft.clone().ok_or_else(not_enabled)?;
                        Ok(AnySource::Microsoft(GraphSource::open(
                            self, app, &graph, window, account, zone,
                        )?))
                    }
                }
            }
        }
    }

    /// Marks `account` as needing its owner to connect it again (`code`: why), holding its
    /// writes.
    pub async fn require_reconnect(&self, account: &Connected, code: &str) -> Result<(), AppError> {
        let db = &self.services.db;
        match account {
            Connected::Caldav(account) => {
                caldav_store::set_caldav_status(db, account.id, Some((RECONNECT_REQUIRED, code)))
                    .await?;
            }
            Connected::Linked(_, account) => {
                oauth_accounts::require_reconnect(db, &account.id, code).await?;
            }
        }
        Ok(())
    }

    /// Clears a CalDAV account's reconnect status once its server accepts it again (a linked
    /// account is cleared by linking it again).
    pub async fn clear_reconnect(&self, account: &Connected) -> Result<(), AppError> {
        if let Connected::Caldav(account) = account
            && account.sync_status.is_some()
        {
            caldav_store::set_caldav_status(&self.services.db, account.id, None).await?;
        }
        Ok(())
    }
}
