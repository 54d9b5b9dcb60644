//! The JSON objects better-auth clients read: User, Session, Account (timestamps with
//! milliseconds and `Z`).

use chrono::{DateTime, Utc};
use entities::{accounts, sessions, users};
use serde_json::{Value, json};

use crate::domain::time::format_timestamp;

fn ts(at: DateTime<Utc>) -> String {
    format_timestamp(at)
}

/// A user as better-auth returns it.
pub fn user(user: &users::Model) -> Value {
    json!({
        "id": user.id,
        "email": user.email,
        "name": user.name,
        "image": user.image,
        "emailVerified": user.email_verified,
        "createdAt": ts(user.created_at),
        "updatedAt": ts(user.updated_at),
    })
}

/// A session as better-auth returns it; `token` is the raw token for the caller's own
/// session and a revocation handle (`revoke_<id>`) for the others, since only hashes are
/// stored.
pub fn session(session: &sessions::Model, token: &str) -> Value {
    json!({
        "id": session.id,
        "token": token,
        "userId": session.user_id,
        "expiresAt": ts(session.expires_at),
        "createdAt": ts(session.created_at),
        "updatedAt": ts(session.updated_at),
        "ipAddress": session.ip_address,
        "userAgent": session.user_agent,
    })
}

/// Prefix of the revocation handle standing for another session's token.
pub const REVOKE_HANDLE_PREFIX: &str = "revoke_";

/// The handle `/list-sessions` gives for a session whose token the caller does not hold.
pub fn revoke_handle(session: &sessions::Model) -> String {
    format!("{REVOKE_HANDLE_PREFIX}{}", session.id)
}

/// An account as better-auth returns it (no secrets).
pub fn account(account: &accounts::Model) -> Value {
    let scopes: Vec<&str> = account
        .scope
        .as_deref()
        .map(|scope| scope.split([',', ' ']).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    json!({
        "id": account.id,
        "providerId": account.provider_id,
        "accountId": account.account_id,
        "userId": account.user_id,
        "createdAt": ts(account.created_at),
        "updatedAt": ts(account.updated_at),
        "scopes": scopes,
    })
}
