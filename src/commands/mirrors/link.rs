//! Linking a Google or Microsoft account for calendar access: better-auth's `/link-social`
//! redirect leg and its `/callback/:provider`.
//!
//! [`start`] keeps what the callback will need (whose link it is, the PKCE verifier, where
//! the browser goes afterwards) for ten minutes under the state's id, and gives the
//! provider's authorization URL. [`finish`] takes it back exactly once, exchanges the code
//! at the provider's token endpoint, reads who the account is from the id token, and stores
//! the account with its tokens sealed (a new link, or new tokens for the user's existing
//! link of that identity, which also ends a `reconnect_required`). Sign-in never grants
//! calendar access; only this does.

use chrono::{Duration, Utc};
use serde::{Deserialize, Serialize};
use url::Url;

use super::Mirrors;
use crate::domain::ids::UserId;
use crate::domain::providers::{AccountKey, Provider};
use crate::error::AppError;
use crate::providers::oauth::{self, Identity, Pkce, stored_scope};
use crate::store::oauth_accounts::{self, Linked, SealedTokens};
use crate::store::verifications;

/// How long a started link waits for its callback.
const PENDING_FOR: Duration = Duration::minutes(10);
/// Most scopes a client may add.
const MAX_EXTRA_SCOPES: usize = 20;

/// What a started link keeps for its callback.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pending {
    provider: String,
    user_id: UserId,
    code_verifier: String,
    callback_url: Option<String>,
    error_callback_url: Option<String>,
    scopes: Vec<String>,
}

/// Where the browser goes once a link is done.
#[derive(Debug, Clone, Default)]
pub struct Destinations {
    /// After success (`callbackURL`).
    pub callback_url: Option<String>,
    /// After a failure (`errorCallbackURL`; else better-auth's `/api/auth/error`).
    pub error_callback_url: Option<String>,
}

/// A link that could not be finished: the error code for `?error=` and where the browser
/// should be sent with it (when known).
#[derive(Debug)]
pub struct LinkFailed {
    /// better-auth's error code.
    pub code: String,
    /// The link's error destination, when the state was found.
    pub destinations: Destinations,
}

/// A finished link.
#[derive(Debug)]
pub struct LinkDone {
    /// The account linked.
    pub key: AccountKey,
    /// Where the browser goes.
    pub destinations: Destinations,
}

fn identifier(state_id: &str) -> String {
    format!("oauth-link:{state_id}")
}

/// Starts linking `provider` to `user`: the authorization URL carrying `state` (the signed
/// form of `state_id`), with `extra_scopes` added to the calendar scopes.
pub async fn start(
    env: &Mirrors,
    user: &UserId,
    provider: Provider,
    state_id: &str,
    state: &str,
    destinations: Destinations,
    extra_scopes: &[String],
) -> Result<Url, AppError> {
    let app = env
        .oauth_app(provider)
        .filter(|_| env.enabled(provider))
        .ok_or_else(|| {
            AppError::bad_request(format!(
                "{provider} calendars are not enabled on this server."
            ))
        })?;
    let mut scopes: Vec<String> = app
        .calendar_scopes()
        .iter()
        .map(|scope| (*scope).to_owned())
        .collect();
    for scope in extra_scopes.iter().take(MAX_EXTRA_SCOPES) {
        let scope = scope.trim();
        if !scope.is_empty()
            && scope.len() <= 256
            && !scope.chars().any(|c| c.is_whitespace() || c.is_control())
            && !scopes.iter().any(|known| known == scope)
        {
            scopes.push(scope.to_owned());
        }
    }
    let pkce = Pkce::new();
    let pending = Pending {
        provider: provider.as_str().to_owned(),
        user_id: user.clone(),
        code_verifier: pkce.verifier.clone(),
        callback_url: destinations.callback_url,
        error_callback_url: destinations.error_callback_url,
        scopes: scopes.clone(),
    };
    let value =
        serde_json::to_string(&pending).map_err(|err| AppError::internal(err.to_string()))?;
    let now = Utc::now();
    verifications::create(
        &env.services.db,
        &identifier(state_id),
        &value,
        now + PENDING_FOR,
        now,
    )
    .await?;
    Ok(app.authorization(&env.redirect_uri(provider), state, &pkce.challenge, &scopes))
}

/// What the provider sent the browser back with.
#[derive(Debug, Clone, Default)]
pub struct Callback {
    /// The authorization code.
    pub code: Option<String>,
    /// The provider's error (`access_denied` when the user declined).
    pub error: Option<String>,
}

/// Finishes the link `state_id` started, for `provider`.
pub async fn finish(
    env: &Mirrors,
    provider: Provider,
    state_id: &str,
    callback: Callback,
) -> Result<Result<LinkDone, LinkFailed>, AppError> {
    let fail = |code: &str, destinations: Destinations| {
        Ok(Err(LinkFailed {
            code: code.to_owned(),
            destinations,
        }))
    };
    let pending = env
        .services
        .db
        .write(async |txn| {
            Ok::<_, AppError>(verifications::consume(txn, &identifier(state_id), Utc::now()).await?)
        })
        .await?;
    let Some(pending) = pending.and_then(|value| serde_json::from_str::<Pending>(&value).ok())
    else {
        return fail("state_not_found", Destinations::default());
    };
    let destinations = Destinations {
        callback_url: pending.callback_url.clone(),
        error_callback_url: pending.error_callback_url.clone(),
    };
    if pending.provider != provider.as_str() {
        return fail("state_mismatch", destinations);
    }
    if let Some(error) = callback.error {
        let code: String = error
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(64)
            .collect();
        return fail(
            if code.is_empty() {
                "access_denied"
            } else {
                &code
            },
            destinations,
        );
    }
    let Some(code) = callback.code.filter(|code| !code.is_empty()) else {
        return fail("no_code", destinations);
    };
    let (Some(app), Ok(secrets)) = (env.oauth_app(provider), env.secrets()) else {
        return fail("provider_not_found", destinations);
    };
    let redirect_uri = env.redirect_uri(provider);
    let tokens = match oauth::exchange_code(
        &env.guard,
        app,
        &code,
        &pending.code_verifier,
        &redirect_uri,
    )
    .await
    {
        Ok(tokens) => tokens,
        Err(err) => {
            env.services
                .metrics
                .sync_failed(provider.as_str(), "discovery");
            tracing::warn!(provider = %provider, error = %err, "auth.oauth.code_refused");
            return fail("invalid_code", destinations);
        }
    };
    let identity = tokens.id_token.as_deref().and_then(Identity::of);
    let Some(identity) = identity else {
        return fail("unable_to_get_user_info", destinations);
    };
    let Some(account_id) = identity.account_id(provider) else {
        return fail("unable_to_get_user_info", destinations);
    };
    let now = Utc::now();
    let sealed = SealedTokens {
        access_token: secrets.seal(&tokens.access_token),
        refresh_token: tokens
            .refresh_token
            .as_deref()
            .map(|token| secrets.seal(token)),
        expires_at: tokens
            .expires_in
            .map(|seconds| now + Duration::seconds(i64::try_from(seconds).unwrap_or(3_600))),
        scope: Some(stored_scope(tokens.scope.as_deref(), &pending.scopes)),
        label: identity.email(),
    };
    let linked = env
        .services
        .db
        .write(async |txn| {
            let linked = oauth_accounts::link_with_tokens(
                txn,
                &pending.user_id,
                provider,
                &account_id,
                sealed,
                now,
            )
            .await?;
            if matches!(linked, Linked::OtherUser) {
                // Nothing of it is kept.
                txn.discard();
            }
            Ok::<_, AppError>(linked)
        })
        .await?;
    if matches!(linked, Linked::OtherUser) {
        return fail("account_already_linked_to_different_user", destinations);
    }
    tracing::info!(provider = %provider, "auth.account_linked");
    Ok(Ok(LinkDone {
        key: AccountKey::new(provider, account_id),
        destinations,
    }))
}
