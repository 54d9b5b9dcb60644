//! The JSON objects better-auth clients read: User, Session, Account (timestamps with
//! milliseconds and `Z`), and the bodies of the `/api/auth/*` answers built from them. The
//! handlers answer with these types, so the OpenAPI document and the wire come from one
//! definition.

use chrono::{DateTime, Utc};
use entities::{accounts, sessions, users};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::auth::session::AuthReply;
use crate::domain::time::format_timestamp;
use crate::error::AppError;

fn ts(at: DateTime<Utc>) -> String {
    format_timestamp(at)
}

/// A 200 JSON answer with `body`.
pub fn reply(body: &impl Serialize) -> Result<AuthReply, AppError> {
    Ok(AuthReply::json(json(body)?))
}

/// `body` as a JSON value.
pub fn json(body: &impl Serialize) -> Result<Value, AppError> {
    serde_json::to_value(body).map_err(AppError::internal)
}

/// A user as better-auth returns it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AuthUser)]
pub struct User {
    /// The user's id.
    pub id: String,
    /// The sign-in address (lower-case).
    pub email: String,
    /// Display name (at most 200 characters).
    pub name: String,
    /// Avatar URL, if any.
    #[schema(required = true)]
    pub image: Option<String>,
    /// Whether the address has been verified.
    pub email_verified: bool,
    /// When the user signed up.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last profile change.
    #[schema(format = DateTime)]
    pub updated_at: String,
}

/// A user as better-auth returns it.
pub fn user(user: &users::Model) -> User {
    User {
        id: user.id.to_string(),
        email: user.email.clone(),
        name: user.name.clone(),
        image: user.image.clone(),
        email_verified: user.email_verified,
        created_at: ts(user.created_at),
        updated_at: ts(user.updated_at),
    }
}

/// A session as better-auth returns it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AuthSession)]
pub struct Session {
    /// The session's id.
    pub id: String,
    /// The caller's own session token, or `revoke_<id>` for another session (a handle
    /// `/revoke-session` takes; only hashes of tokens are stored).
    pub token: String,
    /// Its user.
    pub user_id: String,
    /// When it stops working.
    #[schema(format = DateTime)]
    pub expires_at: String,
    /// Sign-in time.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last extension.
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// Client address at sign-in (`""` when unknown).
    pub ip_address: String,
    /// Client `User-Agent` at sign-in (`""` when absent).
    pub user_agent: String,
}

/// A session as better-auth returns it; `token` is the raw token for the caller's own
/// session and a revocation handle (`revoke_<id>`) for the others, since only hashes are
/// stored.
pub fn session(session: &sessions::Model, token: &str) -> Session {
    Session {
        id: session.id.clone(),
        token: token.to_owned(),
        user_id: session.user_id.to_string(),
        expires_at: ts(session.expires_at),
        created_at: ts(session.created_at),
        updated_at: ts(session.updated_at),
        ip_address: session.ip_address.clone(),
        user_agent: session.user_agent.clone(),
    }
}

/// Prefix of the revocation handle standing for another session's token.
pub const REVOKE_HANDLE_PREFIX: &str = "revoke_";

/// The handle `/list-sessions` gives for a session whose token the caller does not hold.
pub fn revoke_handle(session: &sessions::Model) -> String {
    format!("{REVOKE_HANDLE_PREFIX}{}", session.id)
}

/// A sign-in account as better-auth returns it (no secrets).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AuthAccount)]
pub struct Account {
    /// The account row's id (what `/unlink-account` takes as `accountId`).
    pub id: String,
    /// `credential` (password), `google`, `apple`, `microsoft`, ...
    pub provider_id: String,
    /// The identity at the provider.
    pub account_id: String,
    /// Its user.
    pub user_id: String,
    /// When it was linked.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last change.
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// The scopes granted (calendar-linked accounts).
    pub scopes: Vec<String>,
}

/// An account as better-auth returns it (no secrets).
pub fn account(account: &accounts::Model) -> Account {
    let scopes: Vec<String> = account
        .scope
        .as_deref()
        .map(|scope| {
            scope
                .split([',', ' '])
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Account {
        id: account.id.clone(),
        provider_id: account.provider_id.clone(),
        account_id: account.account_id.to_string(),
        user_id: account.user_id.to_string(),
        created_at: ts(account.created_at),
        updated_at: ts(account.updated_at),
        scopes,
    }
}

/// A new session and its user: sign-up, and `/change-password` (`token` is `null` unless
/// other sessions were revoked and a new one issued).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AuthTokenAndUser)]
pub struct TokenAndUser {
    /// The new session token (also in `set-auth-token` and the session cookie).
    #[schema(required = true)]
    pub token: Option<String>,
    /// The user.
    pub user: User,
}

/// A signed-in user: `/sign-in/email` and `/sign-in/social`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AuthSignedIn)]
pub struct SignedIn {
    /// Whether the client should go to `url` (a `callbackURL` was given).
    pub redirect: bool,
    /// The new session token (also in `set-auth-token` and the session cookie).
    pub token: String,
    /// The user.
    pub user: User,
    /// The `callbackURL` given, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The caller's session and user (`GET /get-session`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AuthSessionAndUser)]
pub struct SessionAndUser {
    /// The session.
    pub session: Session,
    /// Its user.
    pub user: User,
}

/// `{status: true}`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AuthStatus)]
pub struct Status {
    /// Always `true`.
    pub status: bool,
}

/// `{status: true}`.
pub const DONE: Status = Status { status: true };

/// `{status: true, message}` (`/request-password-reset`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AuthStatusMessage)]
pub struct StatusMessage {
    /// Always `true`.
    pub status: bool,
    /// What happens next, for people (the same whether or not the address is known).
    pub message: &'static str,
}

/// `{success: true}` (`/sign-out`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AuthSuccess)]
pub struct Success {
    /// Always `true`.
    pub success: bool,
}

/// `{success: true, message}` (`/delete-user`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AuthSuccessMessage)]
pub struct SuccessMessage {
    /// Always `true`.
    pub success: bool,
    /// `User deleted`, or `Verification email sent` when a confirmation link was mailed.
    pub message: &'static str,
}

/// `{status: true, user}` (`/verify-email` without a `callbackURL`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AuthVerified)]
pub struct Verified {
    /// Always `true`.
    pub status: bool,
    /// The user with the new address, after an email change; `null` otherwise.
    #[schema(required = true)]
    pub user: Option<User>,
}

/// `/link-social`: a provider identity linked (`status: true`, `url` empty), or the
/// provider's authorization URL to open (no `status`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AuthLinkSocial)]
pub struct LinkSocial {
    /// The provider's authorization URL; `""` when an id token was linked.
    pub url: String,
    /// `true` when an id token was linked; absent for the redirect flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<bool>,
    /// Whether the client should open `url` (`false` with `disableRedirect`, or when
    /// already linked).
    pub redirect: bool,
}

/// `{ok: true}` (`GET /ok`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AuthAlive)]
pub struct Alive {
    /// Always `true`.
    pub ok: bool,
}
