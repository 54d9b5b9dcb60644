//! OAuth 2.0 for calendar access (Google, Microsoft identity platform): the authorization
//! URL with PKCE (S256) that the browser is sent to, the code exchange, refreshing an access
//! token, and revoking a token, all through the outbound guard. An id token that comes
//! straight from the token endpoint over the guarded connection names the account (OpenID
//! Connect lets a client trust it without checking its signature, §3.1.3.7).

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::header;
use http::{HeaderValue, Method};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use url::Url;

use super::outbound::{
    OutboundError, OutboundGuard, OutboundRequest, OutboundResponse, retry_after,
};
use super::rest::short;
use crate::config::Settings;
use crate::domain::ids::AccountId;
use crate::domain::providers::Provider;

/// Google's calendar scope (read and write events and calendars).
pub const GOOGLE_CALENDAR_SCOPE: &str = "https://www.googleapis.com/auth/calendar";
/// Google's events-only scope (what some clients ask for).
pub const GOOGLE_EVENTS_SCOPE: &str = "https://www.googleapis.com/auth/calendar.events";
/// Microsoft Graph's calendar scope.
pub const MICROSOFT_CALENDAR_SCOPE: &str = "Calendars.ReadWrite";

/// An application registered with a provider, and where its endpoints are.
#[derive(Debug, Clone)]
pub struct OAuthApp {
    /// Google or Microsoft.
    pub provider: Provider,
    /// The client id.
    pub client_id: String,
    /// The client secret.
    pub client_secret: String,
    /// Where the browser consents.
    pub authorization_url: Url,
    /// Code exchange and refresh.
    pub token_url: Url,
    /// Token revocation (Google only; Microsoft offers none for a single token).
    pub revocation_url: Option<Url>,
}

impl OAuthApp {
    /// The app of `provider` configured in `settings`: `None` unless both its client id and
    /// secret are set (and its endpoints are URLs).
    pub fn from_settings(settings: &Settings, provider: Provider) -> Option<Self> {
        let parse = |url: &str| Url::parse(url).ok();
        match provider {
            Provider::Google => {
                let google = &settings.google;
                Some(Self {
                    provider,
                    client_id: google.client_id.clone()?,
                    client_secret: google.client_secret.as_ref()?.expose().to_owned(),
                    authorization_url: parse(&google.authorization_url)?,
                    token_url: parse(&google.token_url)?,
                    revocation_url: parse(&google.revocation_url),
                })
            }
            Provider::Microsoft => {
                let microsoft = &settings.microsoft;
                Some(Self {
                    provider,
                    client_id: microsoft.client_id.clone()?,
                    client_secret: microsoft.client_secret.as_ref()?.expose().to_owned(),
                    authorization_url: parse(&microsoft.authorization_url)?,
                    token_url: parse(&microsoft.token_url)?,
                    revocation_url: None,
                })
            }
            Provider::Caldav => None,
        }
    }

    /// The scopes every calendar link asks for: the account's identity, a refresh token
    /// (offline access) and calendar read and write.
    pub fn calendar_scopes(&self) -> &'static [&'static str] {
        match self.provider {
            Provider::Google => &["openid", "email", "profile", GOOGLE_CALENDAR_SCOPE],
            _ => &[
                "openid",
                "profile",
                "email",
                "offline_access",
                "User.Read",
                MICROSOFT_CALENDAR_SCOPE,
            ],
        }
    }

    /// The URL the browser is sent to: consent to `scopes` (the calendar scopes plus what the
    /// client asked for), coming back to `redirect_uri` with a code for `state`. Google is
    /// asked for offline access and fresh consent (so a refresh token comes back even for an
    /// existing grant).
    pub fn authorization(
        &self,
        redirect_uri: &str,
        state: &str,
        challenge: &str,
        scopes: &[String],
    ) -> Url {
        let mut url = self.authorization_url.clone();
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &self.client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("scope", &scopes.join(" "))
                .append_pair("state", state)
                .append_pair("code_challenge", challenge)
                .append_pair("code_challenge_method", "S256");
            match self.provider {
                Provider::Google => {
                    query
                        .append_pair("access_type", "offline")
                        .append_pair("prompt", "consent")
                        .append_pair("include_granted_scopes", "true");
                }
                _ => {
                    query
                        .append_pair("response_mode", "query")
                        .append_pair("prompt", "consent");
                }
            }
        }
        url
    }

    /// Whether `url` is this app's authorization endpoint (with any query).
    pub fn is_authorization_url(&self, url: &Url) -> bool {
        url.scheme() == self.authorization_url.scheme()
            && url.host_str() == self.authorization_url.host_str()
            && url.port_or_known_default() == self.authorization_url.port_or_known_default()
            && url.path() == self.authorization_url.path()
    }
}

/// A PKCE pair: the verifier kept by Bowline and the S256 challenge sent to the provider.
#[derive(Debug, Clone)]
pub struct Pkce {
    /// 64 random URL-safe characters.
    pub verifier: String,
    /// `BASE64URL(SHA256(verifier))`.
    pub challenge: String,
}

impl Pkce {
    /// A fresh pair.
    pub fn new() -> Self {
        let verifier = crate::domain::ids::random_alphanumeric(64);
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Self {
            verifier,
            challenge,
        }
    }
}

impl Default for Pkce {
    fn default() -> Self {
        Self::new()
    }
}

/// What a token endpoint answered.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenSet {
    /// The access token.
    pub access_token: String,
    /// A refresh token (Google sends one only on consent; Microsoft on every refresh).
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// Seconds until the access token expires.
    #[serde(default)]
    pub expires_in: Option<u64>,
    /// The granted scopes, space-separated.
    #[serde(default)]
    pub scope: Option<String>,
    /// The OpenID Connect id token.
    #[serde(default)]
    pub id_token: Option<String>,
}

/// Why a token request failed.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The provider refused it (`invalid_grant`: the refresh token or code is dead).
    #[error("the provider refused the token request: {code}")]
    Refused {
        /// The OAuth error code.
        code: String,
        /// The provider's detail (Microsoft's `AADSTS…` number, or a short description).
        detail: Option<String>,
    },
    /// 5xx, 429: try again later.
    #[error("the token endpoint is unavailable ({status})")]
    Unavailable {
        /// The HTTP status.
        status: u16,
        /// What its `Retry-After` asked for.
        retry_after: Option<Duration>,
    },
    /// An answer that cannot be read.
    #[error("unexpected answer from the token endpoint: {0}")]
    Malformed(String),
    /// Refused by the outbound guard, timed out, could not connect.
    #[error(transparent)]
    Outbound(#[from] OutboundError),
}

impl TokenError {
    /// Whether the grant itself is dead (the account must be linked again).
    pub fn is_invalid_grant(&self) -> bool {
        matches!(self, TokenError::Refused { code, .. } if code == "invalid_grant")
    }
}

#[derive(Debug, Deserialize)]
struct OAuthErrorBody {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
    #[serde(default)]
    error_codes: Option<Vec<i64>>,
}

/// Exchanges an authorization `code` (with its PKCE `verifier`) for tokens.
pub async fn exchange_code(
    guard: &OutboundGuard,
    app: &OAuthApp,
    code: &str,
    verifier: &str,
    redirect_uri: &str,
) -> Result<TokenSet, TokenError> {
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("client_id", app.client_id.as_str()),
        ("client_secret", app.client_secret.as_str()),
        ("code_verifier", verifier),
    ];
    token_request(guard, app, &form).await
}

/// A new access token for `refresh_token` (Microsoft is told the scopes again, space
/// separated, as its endpoint requires).
pub async fn refresh(
    guard: &OutboundGuard,
    app: &OAuthApp,
    refresh_token: &str,
) -> Result<TokenSet, TokenError> {
    let scopes = app.calendar_scopes().join(" ");
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("client_id", app.client_id.as_str()),
        ("client_secret", app.client_secret.as_str()),
    ];
    if app.provider == Provider::Microsoft {
        form.push(("scope", scopes.as_str()));
    }
    token_request(guard, app, &form).await
}

/// Revokes `token` at the provider, where it offers revocation (Google).
pub async fn revoke(guard: &OutboundGuard, app: &OAuthApp, token: &str) -> Result<(), TokenError> {
    let Some(url) = app.revocation_url.clone() else {
        return Ok(());
    };
    let response = post_form(guard, url, &[("token", token)]).await?;
    if response.status.is_success() {
        Ok(())
    } else {
        Err(error_of(&response))
    }
}

async fn token_request(
    guard: &OutboundGuard,
    app: &OAuthApp,
    form: &[(&str, &str)],
) -> Result<TokenSet, TokenError> {
    let response = post_form(guard, app.token_url.clone(), form).await?;
    if !response.status.is_success() {
        return Err(error_of(&response));
    }
    let tokens: TokenSet = serde_json::from_slice(&response.body)
        .map_err(|err| TokenError::Malformed(err.to_string()))?;
    if tokens.access_token.is_empty() {
        return Err(TokenError::Malformed("no access token".into()));
    }
    Ok(tokens)
}

async fn post_form(
    guard: &OutboundGuard,
    url: Url,
    form: &[(&str, &str)],
) -> Result<OutboundResponse, TokenError> {
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let request = OutboundRequest::new(Method::POST, url)
        .header(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        )
        .header(header::ACCEPT, HeaderValue::from_static("application/json"))
        .body(body);
    Ok(guard.send(request).await?)
}

fn error_of(response: &OutboundResponse) -> TokenError {
    let status = response.status.as_u16();
    if status == 429 || status == 408 || status >= 500 {
        return TokenError::Unavailable {
            status,
            retry_after: retry_after(&response.headers),
        };
    }
    match serde_json::from_slice::<OAuthErrorBody>(&response.body) {
        Ok(body) => {
            let detail = body
                .error_codes
                .and_then(|codes| codes.first().map(|code| format!("AADSTS{code}")))
                .or_else(|| body.error_description.as_deref().map(short));
            TokenError::Refused {
                code: short(&body.error),
                detail,
            }
        }
        Err(_) => TokenError::Refused {
            code: format!("http_{status}"),
            detail: None,
        },
    }
}

/// Who an id token names (read, not verified: see the module doc).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Identity {
    /// Subject.
    #[serde(default)]
    pub sub: Option<String>,
    /// Microsoft's object id (better-auth's account id for Microsoft).
    #[serde(default)]
    pub oid: Option<String>,
    /// Email.
    #[serde(default)]
    pub email: Option<String>,
    /// Microsoft's sign-in name (usually the email).
    #[serde(default)]
    pub preferred_username: Option<String>,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
}

impl Identity {
    /// Reads the claims of `id_token` (`None` if it is not a JWT with a JSON payload).
    pub fn of(id_token: &str) -> Option<Self> {
        let payload = id_token.split('.').nth(1)?;
        let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The account id better-auth stores for `provider`: Microsoft's `oid` (else `sub`),
    /// everyone else's `sub`.
    pub fn account_id(&self, provider: Provider) -> Option<AccountId> {
        let id = match provider {
            Provider::Microsoft => self.oid.as_deref().or(self.sub.as_deref()),
            _ => self.sub.as_deref(),
        };
        id.filter(|id| !id.is_empty() && id.len() <= 255)
            .map(AccountId::from)
    }

    /// The account's email, lower-cased (Microsoft's sign-in name when it has no `email`).
    pub fn email(&self) -> Option<String> {
        self.email
            .as_deref()
            .or(self.preferred_username.as_deref())
            .map(|email| email.trim().to_lowercase())
            .filter(|email| crate::domain::email::is_valid(email))
    }
}

/// The scopes granted, in better-auth's stored form (comma-separated).
pub fn stored_scope(granted: Option<&str>, asked: &[String]) -> String {
    match granted {
        Some(granted) if !granted.trim().is_empty() => {
            granted.split_whitespace().collect::<Vec<_>>().join(",")
        }
        _ => asked.join(","),
    }
}

/// Whether stored scopes (comma- or space-separated) include calendar access for `provider`.
pub fn grants_calendar(provider: Provider, scope: Option<&str>) -> bool {
    let Some(scope) = scope else {
        return false;
    };
    scope
        .split([',', ' '])
        .map(str::trim)
        .any(|granted| match provider {
            Provider::Google => granted == GOOGLE_CALENDAR_SCOPE || granted == GOOGLE_EVENTS_SCOPE,
            Provider::Microsoft => granted
                .rsplit('/')
                .next()
                .is_some_and(|name| name.eq_ignore_ascii_case(MICROSOFT_CALENDAR_SCOPE)),
            Provider::Caldav => false,
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_verifiers_s256() {
        let pkce = Pkce::new();
        assert_eq!(pkce.verifier.len(), 64);
        let again = URL_SAFE_NO_PAD.encode(Sha256::digest(pkce.verifier.as_bytes()));
        assert_eq!(pkce.challenge, again);
        // RFC 7636's example.
        let known = URL_SAFE_NO_PAD.encode(Sha256::digest(
            b"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        ));
        assert_eq!(known, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }

    #[test]
    fn identities_are_read_from_the_payload() {
        let payload = URL_SAFE_NO_PAD.encode(
            br#"{"sub":"s1","oid":"o1","preferred_username":"Ana@Example.com","name":"Ana"}"#,
        );
        let identity = Identity::of(&format!("e30.{payload}.sig")).unwrap();
        assert_eq!(
            identity.account_id(Provider::Microsoft),
            Some(AccountId::new("o1"))
        );
        assert_eq!(
            identity.account_id(Provider::Google),
            Some(AccountId::new("s1"))
        );
        assert_eq!(identity.email().as_deref(), Some("ana@example.com"));
        assert!(Identity::of("not a jwt").is_none());
    }

    #[test]
    fn calendar_grants_are_recognised() {
        assert!(grants_calendar(
            Provider::Google,
            Some("openid,https://www.googleapis.com/auth/calendar")
        ));
        assert!(grants_calendar(
            Provider::Google,
            Some("https://www.googleapis.com/auth/calendar.events email")
        ));
        assert!(!grants_calendar(Provider::Google, Some("openid,email")));
        assert!(grants_calendar(
            Provider::Microsoft,
            Some("https://graph.microsoft.com/Calendars.ReadWrite,User.Read")
        ));
        assert!(!grants_calendar(Provider::Microsoft, None));
        assert_eq!(stored_scope(Some("a  b"), &[]), "a,b");
    }
}
