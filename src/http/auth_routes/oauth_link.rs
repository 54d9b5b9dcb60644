//! Linking a Google or Microsoft account for calendar access through better-auth's redirect
//! flow: `POST /link-social` without an `idToken` answers `{url, redirect}` with the
//! provider's authorization URL (and `Location`), setting the signed `better-auth.state`
//! cookie; the provider sends the browser back to `GET /callback/:provider`, which checks
//! that the state is signed and is the one the browser's cookie carries, finishes the link
//! ([`crate::commands::mirrors::link`]) and redirects to the `callbackURL` (or, on failure,
//! to the `errorCallbackURL` or `/api/auth/error`, with `?error=CODE`). The account's sync
//! actor starts and pulls at once.
//!
//! Expo clients open `GET /expo-authorization-proxy?authorizationURL=…&oauthState=…` in the
//! system browser first: it sets the state cookie there and redirects to the provider, if
//! the URL is one of the configured providers' authorization endpoints (never an open
//! redirect).

use serde_json::Value;

use super::AuthRequest;
use super::request::with_query;
use super::wire::{self, LinkSocial};
use crate::actors::providers::ProvidersMsg;
use crate::auth::cookies;
use crate::auth::error::AuthError;
use crate::auth::session::AuthReply;
use crate::auth::tokens::{percent_decoded, signed, verify_signed};
use crate::commands::mirrors::link::{self, Callback, Destinations};
use crate::domain::ids::random_alphanumeric;
use crate::domain::providers::Provider;
use crate::error::AppError;

/// The provider a redirect link is for: Google or Microsoft, configured for calendars.
fn calendar_provider(req: &AuthRequest, name: &str) -> Result<Provider, AuthError> {
    Provider::parse(name)
        .filter(|provider| provider.is_oauth() && req.ctx.mirrors.enabled(*provider))
        .ok_or_else(AuthError::provider_not_found)
}

/// The `scopes` field: strings only.
fn extra_scopes(req: &AuthRequest) -> Result<Vec<String>, AuthError> {
    match req.body.get("scopes") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str().map(str::to_owned).ok_or_else(|| {
                    AuthError::validation("scopes", "Invalid input: expected string")
                })
            })
            .collect(),
        Some(_) => Err(AuthError::validation(
            "scopes",
            "Invalid input: expected array",
        )),
    }
}

/// `POST /link-social` without an id token: the provider's authorization URL.
pub async fn start(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let current = req.session().await?;
    let provider = calendar_provider(req, req.required_str("provider")?)?;
    let destinations = Destinations {
        callback_url: req.str_field("callbackURL")?.map(str::to_owned),
        error_callback_url: req.str_field("errorCallbackURL")?.map(str::to_owned),
    };
    let scopes = extra_scopes(req)?;
    let disable_redirect = req.bool_field("disableRedirect")?.unwrap_or(false);
    let ctx = &req.ctx;
    let state_id = random_alphanumeric(32);
    let state = signed(ctx.auth.secret(), &state_id);
    let url = link::start(
        &ctx.mirrors,
        &current.user.id,
        provider,
        &state_id,
        &state,
        destinations,
        &scopes,
    )
    .await?;
    let reply = wire::reply(&LinkSocial {
        url: url.as_str().to_owned(),
        status: None,
        redirect: !disable_redirect,
    })?
    .with_cookie(ctx.auth.cookies.state(&state));
    Ok(if disable_redirect {
        reply
    } else {
        reply.with_location(url.as_str())
    })
}

/// The state id of a signed state, if its signature is right.
fn state_id_of<'a>(req: &AuthRequest, signed_state: &'a str) -> Option<&'a str> {
    verify_signed(req.ctx.auth.secret(), signed_state)
}

/// `GET /callback/:provider`.
#[utoipa::path(
    get,
    path = "/api/auth/callback/{id}",
    tag = "auth",
    params(
        ("id" = String, Path, description = "The provider: `google` or `microsoft` (others are 404)."),
        ("state" = Option<String>, Query, description = "The signed state the link started with (it must be the one the browser's `better-auth.state` cookie carries)."),
        ("code" = Option<String>, Query, description = "The provider's authorization code."),
        ("error" = Option<String>, Query, description = "The provider's error, when consent failed."),
    ),
    responses(
        (status = 302, description = "To the link's `callbackURL` (the server's root by default) once linked; on failure to its `errorCallbackURL` or `/api/auth/error`, with `?error=CODE`. The state cookie is cleared.",
         headers(("Location" = String, description = "Where the browser goes next."))),
    )
)]
pub async fn callback(req: &AuthRequest, provider_name: &str) -> Result<AuthReply, AppError> {
    let ctx = &req.ctx;
    let default_error = format!("{}/api/auth/error", ctx.base_url);
    let failed = |target: Option<&str>, code: &str| {
        AuthReply::redirect(&with_query(target.unwrap_or(&default_error), "error", code))
            .with_cookie(ctx.auth.cookies.clear_state())
    };
    let Some(provider) = Provider::parse(provider_name).filter(|p| p.is_oauth()) else {
        return Ok(failed(None, "provider_not_found"));
    };
    let Some(state) = req.query("state") else {
        return Ok(failed(None, "state_not_found"));
    };
    let Some(state_id) = state_id_of(req, state) else {
        return Ok(failed(None, "state_not_found"));
    };
    // The browser that started the link carries the state in its cookie; another browser
    // (someone else's consent slipped into this flow) does not.
    let cookie = cookies::read(&req.headers, cookies::STATE).map(|value| percent_decoded(&value));
    let carried = cookie
        .as_deref()
        .and_then(|cookie| state_id_of(req, cookie));
    if carried != Some(state_id) {
        return Ok(failed(None, "state_mismatch"));
    }
    let answer = Callback {
        code: req.query("code").map(str::to_owned),
        error: req.query("error").map(str::to_owned),
    };
    match link::finish(&ctx.mirrors, provider, state_id, answer).await? {
        Ok(done) => {
            ctx.actors.providers.tell(ProvidersMsg::Start {
                account: done.key,
                pull: true,
            });
            let target = done
                .destinations
                .callback_url
                .unwrap_or_else(|| format!("{}/", ctx.base_url));
            Ok(AuthReply::redirect(&target).with_cookie(ctx.auth.cookies.clear_state()))
        }
        Err(failure) => {
            tracing::info!(provider = %provider, code = %failure.code, "auth.link_failed");
            let target = failure.destinations.error_callback_url;
            Ok(failed(target.as_deref(), &failure.code))
        }
    }
}

/// `GET /expo-authorization-proxy?authorizationURL=…&oauthState=…`.
#[utoipa::path(
    get,
    path = "/api/auth/expo-authorization-proxy",
    tag = "auth",
    params(
        ("authorizationURL" = String, Query, description = "A configured provider's authorization URL (anything else is 400)."),
        ("oauthState" = Option<String>, Query, description = "The signed state to keep in the browser's `better-auth.state` cookie."),
    ),
    responses(
        (status = 302, description = "To the provider's authorization URL, with the state cookie set.",
         headers(("Location" = String, description = "The `authorizationURL`."))),
    )
)]
pub fn expo_proxy(req: &AuthRequest) -> Result<AuthReply, AppError> {
    let ctx = &req.ctx;
    let target = req
        .query("authorizationURL")
        .and_then(|url| url::Url::parse(url).ok())
        .filter(|url| {
            [Provider::Google, Provider::Microsoft]
                .into_iter()
                .filter_map(|provider| ctx.mirrors.oauth_app(provider))
                .any(|app| app.is_authorization_url(url))
        })
        .ok_or_else(|| AuthError::validation_in("query", "authorizationURL", "Invalid URL"))?;
    let mut reply = AuthReply::redirect(target.as_str());
    if let Some(state) = req.query("oauthState") {
        let state = percent_decoded(state);
        if state_id_of(req, &state).is_none() {
            return Err(AuthError::validation_in("query", "oauthState", "Invalid state").into());
        }
        reply = reply.with_cookie(ctx.auth.cookies.state(&state));
    }
    Ok(reply)
}
