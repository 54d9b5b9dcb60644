//! Native id-token sign-in (`POST /sign-in/social` with `{provider, idToken: {token}}`) and
//! linking (`POST /link-social` with an `idToken`), for Google, Apple and Microsoft. Browser
//! redirect sign-in is not offered: without an `idToken` the answer says so. (Linking
//! without an `idToken` is the calendar-connection redirect flow of [`super::oauth_link`].)
//!
//! Linking rules: a provider identity already linked signs its user in; otherwise a user
//! with the same (verified) email gets the identity linked when the provider is trusted
//! (Google, Apple, Microsoft) or the token says the email is verified; otherwise a new user
//! is created. Explicit linking allows a different email.

use serde_json::Value;

use super::wire::{self, LinkSocial, SignedIn};
use super::{AuthRequest, bodies};
use crate::auth::error::AuthError;
use crate::auth::id_token::{ProviderSpec, VerifiedToken};
use crate::auth::session::{AuthReply, issue};
use crate::context::Ctx;
use crate::domain::profile;
use crate::error::AppError;
use crate::http::openapi::schemas::AuthErrorBody;
use crate::store::accounts;
use crate::store::users::{self, CreateUserError, NewAccount, NewUser};

/// Providers whose account links skip the "provider says verified" requirement.
const TRUSTED_PROVIDERS: [&str; 3] = ["google", "apple", "microsoft"];

/// The provider id and what its tokens must say; 404 for unknown or unconfigured ones.
fn provider(ctx: &Ctx, name: &str) -> Result<(&'static str, ProviderSpec), AuthError> {
    let settings = &ctx.settings;
    match name {
        "google" | "provider_a" => {
            let client_id = settings
                .google
                .client_id
                .clone()
                .ok_or_else(AuthError::provider_not_found)?;
            Ok((
                "google",
                ProviderSpec {
                    jwks_url: settings.google.jwks_url.clone(),
                    issuers: settings.google.issuers.clone(),
                    audiences: vec![client_id],
                },
            ))
        }
        "apple" | "provider_b" => {
            if settings.apple.client_id.is_none() {
                return Err(AuthError::provider_not_found());
            }
            // better-auth's Apple provider: the audience is the app bundle id when one is
            // configured (it always is here), never the web client id beside it.
            Ok((
                "apple",
                ProviderSpec {
                    jwks_url: settings.apple.jwks_url.clone(),
                    issuers: vec![settings.apple.issuer.clone()],
                    audiences: vec![settings.apple.bundle_id.clone()],
                },
            ))
        }
        "microsoft" | "provider_c" => {
            let client_id = settings
                .microsoft
                .client_id
                .clone()
                .ok_or_else(AuthError::provider_not_found)?;
            // Tokens of the `common` endpoint come from each account's own tenant.
            Ok((
                "microsoft",
                ProviderSpec {
                    jwks_url: settings.microsoft.jwks_url.clone(),
                    issuers: vec![MICROSOFT_ISSUER.to_owned()],
                    audiences: vec![client_id],
                },
            ))
        }
        _ => Err(AuthError::provider_not_found()),
    }
}

/// The issuer of Microsoft id tokens, `{tenantid}` standing for the token's `tid` (as the
/// identity platform's own metadata writes it).
const MICROSOFT_ISSUER: &str = "https://login.microsoftonline.com/{tenantid}/v2.0";

/// Verifies the request's `idToken` for its `provider`.
async fn verified_token(req: &AuthRequest) -> Result<(&'static str, VerifiedToken), AppError> {
    let (provider_id, spec) = provider(&req.ctx, req.required_str("provider")?)?;
    let id_token = req.body.get("idToken");
    let token = id_token
        .and_then(|t| t.get("token"))
        .and_then(Value::as_str)
        .ok_or_else(AuthError::id_token_required)?;
    let nonce = id_token
        .and_then(|t| t.get("nonce"))
        .and_then(Value::as_str);
    let verified = req.ctx.auth.id_tokens.verify(&spec, token, nonce).await?;
    Ok((provider_id, verified))
}

/// The display name: Apple sends it beside the token on first sign-in only.
fn display_name(req: &AuthRequest, verified: &VerifiedToken) -> String {
    let name = req
        .body
        .get("idToken")
        .and_then(|t| t.pointer("/user/name"));
    let part = |key: &str| {
        name.and_then(|n| n.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    let joined = format!("{} {}", part("firstName"), part("lastName"))
        .trim()
        .to_owned();
    if joined.is_empty() {
        verified.name.clone().unwrap_or_default()
    } else {
        joined
    }
}

/// Signs in (creating or linking the user as needed) with a provider id token.
#[utoipa::path(
    post,
    path = "/api/auth/sign-in/social",
    operation_id = "sign_in_social",
    tag = "auth",
    request_body = bodies::SignInSocial,
    responses(
        (status = 200, description = "Signed in (a new user is created, or the identity linked to the user with its verified address): the session token and the user; the session cookie is set.",
         body = SignedIn, headers(("set-auth-token" = String, description = "The signed session token, for bearer clients."))),
        (status = 401, description = "The id token is invalid (`INVALID_TOKEN`), has no email (`USER_EMAIL_NOT_FOUND`), or its address belongs to a user it may not be linked to (`OAUTH_LINK_ERROR`).", body = AuthErrorBody),
        (status = 403, description = "The request's origin, or a URL in it, is not trusted.", body = AuthErrorBody),
    )
)]
pub async fn sign_in(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let (provider_id, verified) = verified_token(req).await?;
    let email = verified
        .email
        .clone()
        .ok_or_else(AuthError::user_email_not_found)?;
    let ctx = &req.ctx;
    let user = match accounts::find_by_provider(&ctx.db, provider_id, &verified.sub).await? {
        Some((_, user)) => {
            if verified.email_verified && !user.email_verified && user.email == email {
                users::set_email_verified(&ctx.db, &user.id, req.now).await?;
            }
            user
        }
        None => match users::find_by_email(&ctx.db, &email).await? {
            Some(user) => {
                let trusted = TRUSTED_PROVIDERS.contains(&provider_id) || verified.email_verified;
                if !(trusted && user.email_verified) {
                    return Err(AuthError::account_not_linked().into());
                }
                accounts::link(&ctx.db, &user.id, provider_id, &verified.sub, req.now).await?;
                tracing::info!(provider = provider_id, "auth.account_linked");
                user
            }
            None => {
                let new_user = NewUser {
                    name: profile::claimed_name(&display_name(req, &verified)),
                    email,
                    email_verified: verified.email_verified,
                    image: profile::claimed_image(verified.picture.as_deref()),
                };
                let account = NewAccount {
                    provider_id: provider_id.to_owned(),
                    account_id: Some(verified.sub.to_string()),
                    password_hash: None,
                };
                match users::create(&ctx.db, new_user, Some(account), req.now).await {
                    Ok(user) => {
                        tracing::info!(provider = provider_id, "auth.signed_up");
                        user
                    }
                    Err(CreateUserError::EmailTaken) => {
                        return Err(AuthError::account_not_linked().into());
                    }
                    Err(CreateUserError::Database(err)) => return Err(err.into()),
                }
            }
        },
    };
    req.rctx.set_user(&user.id);
    let issued = issue(&ctx.db, &user.id, true, &req.client(), req.now).await?;
    let body = SignedIn {
        redirect: false,
        token: issued.token.clone(),
        user: wire::user(&user),
        url: None,
    };
    Ok(wire::reply(&body)?.with_session(&ctx.auth, &issued.token, true))
}

/// Links a provider identity to the signed-in user (a different email is allowed).
pub async fn link_social(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.session().await?;
    let (provider_id, verified) = verified_token(req).await?;
    let ctx = &req.ctx;
    let linked = LinkSocial {
        url: String::new(),
        status: Some(true),
        redirect: false,
    };
    if let Some((account, _)) =
        accounts::find_by_provider(&ctx.db, provider_id, &verified.sub).await?
    {
        if account.user_id == current.user.id {
            return wire::reply(&linked);
        }
        return Err(AuthError::social_account_already_linked().into());
    }
    if !(TRUSTED_PROVIDERS.contains(&provider_id) || verified.email_verified) {
        return Err(AuthError::linking_not_allowed().into());
    }
    if !accounts::link(
        &ctx.db,
        &current.user.id,
        provider_id,
        &verified.sub,
        req.now,
    )
    .await?
    {
        return Err(AuthError::social_account_already_linked().into());
    }
    tracing::info!(provider = provider_id, "auth.account_linked");
    wire::reply(&linked)
}
