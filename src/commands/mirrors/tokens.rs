//! [`Tokens`]: the access token of one linked Google or Microsoft account. It is opened from
//! the sealed tokens stored with the account, refreshed a minute before it expires and once
//! after the provider answers `401`, and every refresh is stored again sealed (Google's
//! refresh token is kept when none comes back; Microsoft's new one replaces the old every
//! time). A refresh the provider refuses for good (`invalid_grant`) marks the account
//! `reconnect_required` with the provider's code and forgets its tokens: its writes wait in
//! the outbox until its owner links it again.

use std::future::Future;

use chrono::{DateTime, Duration, Utc};
use entities::accounts;
use tokio::sync::Mutex;

use super::Mirrors;
use crate::error::AppError;
use crate::providers::ProviderError;
use crate::providers::oauth::{self, OAuthApp, TokenError};
use crate::store::oauth_accounts;

/// How long before its expiry an access token is refreshed.
const REFRESH_AHEAD: Duration = Duration::seconds(60);

/// The access token of one account.
pub struct Tokens<'a> {
    env: &'a Mirrors,
    app: OAuthApp,
    account_row: String,
    state: Mutex<State>,
}

struct State {
    access: Option<String>,
    expires_at: Option<DateTime<Utc>>,
    refresh: Option<String>,
    /// Set once the provider refused the refresh token (the code stored for the owner).
    dead: Option<String>,
}

impl<'a> Tokens<'a> {
    /// The tokens of `account`, opened with the configured key.
    pub fn open(
        env: &'a Mirrors,
        app: OAuthApp,
        account: &accounts::Model,
    ) -> Result<Self, AppError> {
        let secrets = env.secrets()?;
        let open = |sealed: &Option<String>| -> Result<Option<String>, AppError> {
            sealed
                .as_deref()
                .map(|sealed| {
                    secrets
                        .open(sealed)
                        .map_err(|err| AppError::internal(err.to_string()))
                })
                .transpose()
        };
        let dead = account.sync_status.as_ref().map(|_| {
            account
                .sync_error_code
                .clone()
                .unwrap_or_else(|| "reconnect_required".into())
        });
        Ok(Self {
            env,
            app,
            account_row: account.id.clone(),
            state: Mutex::new(State {
                access: open(&account.access_token)?,
                expires_at: account.access_token_expires_at,
                refresh: open(&account.refresh_token)?,
                dead,
            }),
        })
    }

    /// A usable access token (refreshed first when it is about to expire).
    pub async fn bearer(&self) -> Result<String, ProviderError> {
        let mut state = self.state.lock().await;
        let fresh = state
            .expires_at
            .is_none_or(|expires| expires - REFRESH_AHEAD > Utc::now());
        match &state.access {
            Some(access) if fresh && state.dead.is_none() => Ok(access.clone()),
            _ => self.refresh(&mut state).await,
        }
    }

    /// A new access token after the provider refused `rejected` (unless another call
    /// already replaced it).
    async fn renewed(&self, rejected: &str) -> Result<String, ProviderError> {
        let mut state = self.state.lock().await;
        match &state.access {
            Some(access) if access != rejected && state.dead.is_none() => Ok(access.clone()),
            _ => self.refresh(&mut state).await,
        }
    }

    /// Runs `call` with the access token, and once more with a refreshed one if the provider
    /// answers `401`.
    pub async fn with<T, F, Fut>(&self, call: F) -> Result<T, ProviderError>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let token = self.bearer().await?;
        match call(token.clone()).await {
            Err(ProviderError::Unauthorized) => {
                tracing::info!("sync.token.rejected");
                let token = self.renewed(&token).await?;
                call(token).await
            }
            other => other,
        }
    }

    async fn refresh(&self, state: &mut State) -> Result<String, ProviderError> {
        if let Some(code) = &state.dead {
            return Err(ProviderError::ReconnectRequired { code: code.clone() });
        }
        let Some(refresh) = state.refresh.clone() else {
            return Err(self.refused(state, "no_refresh_token").await);
        };
        let refreshed = oauth::refresh(&self.env.guard, &self.app, &refresh).await;
        let tokens = match refreshed {
            Ok(tokens) => tokens,
            Err(TokenError::Refused { code, detail }) => {
                tracing::warn!(provider = %self.app.provider, code = %code, detail = ?detail, "sync.token.refused");
                // Only the user can mend a dead or withdrawn grant; anything else (a wrong
                // client secret) is the operator's, and the account keeps its tokens.
                if matches!(
                    code.as_str(),
                    "invalid_grant" | "interaction_required" | "consent_required"
                ) {
                    return Err(self.refused(state, &code).await);
                }
                return Err(ProviderError::Rejected {
                    status: 400,
                    message: format!("the token endpoint refused the refresh: {code}"),
                });
            }
            Err(TokenError::Unavailable {
                status,
                retry_after,
            }) => {
                return Err(ProviderError::Unavailable {
                    status: Some(status),
                    retry_after,
                });
            }
            Err(TokenError::Malformed(message)) => return Err(ProviderError::Malformed(message)),
            Err(TokenError::Outbound(err)) => return Err(ProviderError::Outbound(err)),
        };
        let secrets = self
            .env
            .secrets()
            .map_err(|err| ProviderError::Malformed(err.to_string()))?;
        let expires_at = tokens
            .expires_in
            .map(|seconds| Utc::now() + Duration::seconds(i64::try_from(seconds).unwrap_or(3_600)));
        let sealed_refresh = tokens
            .refresh_token
            .as_deref()
            .map(|token| secrets.seal(token));
        oauth_accounts::store_refreshed(
            &self.env.services.db,
            &self.account_row,
            &secrets.seal(&tokens.access_token),
            expires_at,
            sealed_refresh.as_deref(),
        )
        .await
        .map_err(|err| ProviderError::Malformed(format!("storing refreshed tokens: {err}")))?;
        tracing::debug!(provider = %self.app.provider, "sync.token.refreshed");
        state.access = Some(tokens.access_token.clone());
        state.expires_at = expires_at;
        if let Some(new) = tokens.refresh_token {
            state.refresh = Some(new);
        }
        Ok(tokens.access_token)
    }

    /// The provider refused the grant: the account needs reconnecting (stored, so its owner
    /// sees it and its writes wait).
    async fn refused(&self, state: &mut State, code: &str) -> ProviderError {
        state.dead = Some(code.to_owned());
        state.access = None;
        if let Err(err) =
            oauth_accounts::require_reconnect(&self.env.services.db, &self.account_row, code).await
        {
            tracing::error!(error = %err, "sync.token.status_not_stored");
        }
        ProviderError::ReconnectRequired {
            code: code.to_owned(),
        }
    }
}
