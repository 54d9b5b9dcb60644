//! One turn of an account's sync actor: deliver what is due in its outbox, then (on a tick or
//! when asked) pull its calendars. Failures are counted by provider and stage and logged;
//! credentials the provider refuses mark the account `reconnect_required` for its owner; a
//! provider that asks to be left alone says for how long, so the actor can wait before it
//! pulls again.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::Mirrors;
use super::deliver::{deliver, next_due};
use super::pull::pull;
use super::source::SyncError;
use crate::domain::providers::AccountKey;
use crate::error::AppError;

/// What a turn did.
#[derive(Debug)]
pub struct Turn {
    /// The account is gone (disconnected, or left with nothing to sync): the actor stops.
    pub gone: bool,
    /// How the pull went (`Ok` when none was asked for).
    pub outcome: Result<(), AppError>,
    /// The provider asked not to be asked anything again before this long.
    pub wait: Option<Duration>,
    /// When the outbox next has something due.
    pub next_due: Option<DateTime<Utc>>,
}

/// Delivers `key`'s due outbox rows, then pulls it when `pull_too`.
pub async fn turn(env: &Mirrors, key: &AccountKey, pull_too: bool) -> Result<Turn, AppError> {
    let provider = key.provider.as_str();
    let metrics = &env.services.metrics;
    let Some(account) = env.account(key).await?.filter(|account| account.syncs()) else {
        return Ok(Turn {
            gone: true,
            outcome: Ok(()),
            wait: None,
            next_due: None,
        });
    };
    let source = env.source(&account).await?;
    let mut wait = None;
    match deliver(env, &source, &account).await {
        Ok(delivered) => wait = delivered.pause,
        Err(err) => {
            metrics.sync_failed(provider, "push");
            tracing::warn!(provider, error = %err, "sync.push.failed");
        }
    }
    let mut outcome = Ok(());
    // A provider that asked to be left alone is not pulled either.
    if pull_too && wait.is_none() {
        match pull(env, &source, key, account.owner()).await {
            Ok(changed) => {
                tracing::debug!(provider, changed = changed.len(), "sync.account.pulled");
                env.clear_reconnect(&account).await?;
            }
            Err(SyncError::Remote(err)) => {
                metrics.sync_failed(provider, "account");
                tracing::warn!(provider, error = %err, "sync.account.failed");
                if let Some(code) = err.reconnect_code() {
                    env.require_reconnect(&account, code).await?;
                }
                wait = err.retry_after();
                outcome = Err(AppError::bad_request(format!(
                    "The calendar server could not be synced: {err}"
                )));
            }
            Err(SyncError::Local(err)) => {
                metrics.sync_failed(provider, "account");
                tracing::warn!(provider, error = %err, "sync.account.failed");
                outcome = Err(err);
            }
        }
    }
    Ok(Turn {
        gone: false,
        outcome,
        wait,
        next_due: next_due(env, key).await?,
    })
}
