//! Native id-token sign-in: verifies a provider's JWT (RS256) against the provider's JWKS
//! (fetched with reqwest, cached, fetched again when a token names an unknown key id),
//! checking issuer, audience, expiry and age with better-auth's 30 s clock tolerance.
//!
//! No lock is held across a fetch that other sign-ins need: each JWKS URL has its own
//! entry, cached keys are read under a short lock, and fetches of one set are single-flight
//! (a slow provider delays only the sign-ins that need its fresh keys).
//!
//! JWKS URLs and issuers are configuration, so tests serve keys on 127.0.0.1.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use super::error::AuthError;
use crate::domain::digest::sha256_hex;
use crate::domain::ids::AccountId;
use crate::error::AppError;

/// Clock tolerance for `exp`, `iat` (better-auth's).
const LEEWAY_SECS: u64 = 30;
/// Oldest accepted token (`iat`).
const MAX_TOKEN_AGE_SECS: i64 = 3600;
/// After a refetch that still lacked the wanted key id, no refetch for this long (so tokens
/// naming made-up key ids cannot make Bowline hammer the provider).
const MIN_REFETCH: Duration = Duration::from_secs(10);
/// A cached JWKS is refreshed after this long even if every key id is known.
const MAX_CACHE_AGE: Duration = Duration::from_secs(6 * 3600);

/// Where a provider's keys are and what its tokens must say.
#[derive(Debug, Clone)]
pub struct ProviderSpec {
    /// JWKS URL.
    pub jwks_url: String,
    /// Accepted `iss` values; `{tenantid}` in one stands for the token's `tid` claim
    /// (Microsoft's multi-tenant issuer).
    pub issuers: Vec<String>,
    /// Accepted `aud` values.
    pub audiences: Vec<String>,
}

/// What a verified token says about its subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    /// The account's id at the provider: `sub` (Microsoft's `oid`, as better-auth keeps).
    pub sub: AccountId,
    /// Email claim.
    pub email: Option<String>,
    /// `email_verified` (boolean or the string `"true"`).
    pub email_verified: bool,
    /// Name claim.
    pub name: Option<String>,
    /// Picture claim.
    pub picture: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    iat: i64,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    tid: Option<String>,
    /// Microsoft's object id: the account id better-auth keeps for Microsoft.
    #[serde(default)]
    oid: Option<String>,
    /// Microsoft's sign-in name (the email when there is no `email` claim).
    #[serde(default)]
    preferred_username: Option<String>,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    email_verified: Option<BoolOrString>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    picture: Option<String>,
    #[serde(default)]
    nonce: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum BoolOrString {
    Bool(bool),
    String(String),
}

impl BoolOrString {
    fn is_true(&self) -> bool {
        match self {
            Self::Bool(value) => *value,
            Self::String(value) => value.eq_ignore_ascii_case("true"),
        }
    }
}

struct CachedKeys {
    keys: JwkSet,
    fetched: Instant,
    /// Set when a refetch did not bring the wanted key.
    refetch_blocked_until: Option<Instant>,
}

/// One JWKS URL's keys. Reading them takes only the short `cached` lock; a fetch holds the
/// source's own `fetching` lock (single flight: verifications that need a fetch of the same
/// set wait for one fetch rather than each sending one), never a lock that another
/// provider's sign-ins, or this provider's sign-ins with a cached key, need.
#[derive(Default)]
struct KeySource {
    cached: parking_lot::Mutex<Option<CachedKeys>>,
    fetching: tokio::sync::Mutex<()>,
}

/// What the cached set says about a key id.
enum Lookup {
    /// The key is cached.
    Found(DecodingKey),
    /// A fetch came back without it a moment ago: do not ask the provider again yet.
    Blocked,
    /// Not cached (or the set is too old): fetch.
    Missing,
}

impl KeySource {
    fn lookup(&self, kid: &str) -> Result<Lookup, AppError> {
        let cached = self.cached.lock();
        let Some(cached) = cached.as_ref() else {
            return Ok(Lookup::Missing);
        };
        if cached.fetched.elapsed() < MAX_CACHE_AGE
            && let Some(jwk) = cached.keys.find(kid)
        {
            return DecodingKey::from_jwk(jwk)
                .map(Lookup::Found)
                .map_err(|_| AuthError::invalid_id_token().into());
        }
        let blocked = cached
            .refetch_blocked_until
            .is_some_and(|until| Instant::now() < until);
        Ok(if blocked {
            Lookup::Blocked
        } else {
            Lookup::Missing
        })
    }

    fn fetched_at(&self) -> Option<Instant> {
        self.cached.lock().as_ref().map(|cached| cached.fetched)
    }

    fn store(&self, keys: JwkSet, missing_kid: bool) {
        let now = Instant::now();
        *self.cached.lock() = Some(CachedKeys {
            keys,
            fetched: now,
            refetch_blocked_until: missing_kid.then(|| now + MIN_REFETCH),
        });
    }
}

/// Verifies id tokens, caching each provider's keys.
pub struct IdTokenVerifier {
    http: reqwest::Client,
    sources: parking_lot::Mutex<HashMap<String, Arc<KeySource>>>,
}

impl std::fmt::Debug for IdTokenVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdTokenVerifier").finish_non_exhaustive()
    }
}

impl IdTokenVerifier {
    /// A verifier fetching keys with `http`.
    pub fn new(http: reqwest::Client) -> Self {
        Self {
            http,
            sources: parking_lot::Mutex::new(HashMap::new()),
        }
    }

    /// Verifies `token` for `provider`; with a `nonce`, the token's `nonce` claim must equal
    /// it or its SHA-256 (Apple).
    pub async fn verify(
        &self,
        provider: &ProviderSpec,
        token: &str,
        nonce: Option<&str>,
    ) -> Result<VerifiedToken, AppError> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|_| AuthError::invalid_id_token())?;
        if header.alg != Algorithm::RS256 {
            return Err(AuthError::invalid_id_token().into());
        }
        let kid = header.kid.ok_or_else(AuthError::invalid_id_token)?;
        let key = self.key(&provider.jwks_url, &kid).await?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.leeway = LEEWAY_SECS;
        validation.set_audience(&provider.audiences);
        let per_tenant = provider
            .issuers
            .iter()
            .any(|iss| iss.contains("{tenantid}"));
        if !per_tenant {
            validation.set_issuer(&provider.issuers);
        }
        validation.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|err| {
                tracing::debug!(error = %err, "auth.id_token.rejected");
                AuthError::invalid_id_token()
            })?
            .claims;
        if per_tenant {
            let issued_by_tenant = match (&claims.iss, &claims.tid) {
                (Some(iss), Some(tid)) if !tid.is_empty() => provider
                    .issuers
                    .iter()
                    .any(|template| template.replace("{tenantid}", tid) == *iss),
                _ => false,
            };
            if !issued_by_tenant {
                return Err(AuthError::invalid_id_token().into());
            }
        }
        let now = chrono::Utc::now().timestamp();
        let leeway = i64::try_from(LEEWAY_SECS).unwrap_or(30);
        if claims.iat > now + leeway || now - claims.iat > MAX_TOKEN_AGE_SECS + leeway {
            return Err(AuthError::invalid_id_token().into());
        }
        if let Some(nonce) = nonce {
            let matches = claims
                .nonce
                .as_deref()
                .is_some_and(|claim| claim == nonce || claim == sha256_hex(nonce));
            if !matches {
                return Err(AuthError::invalid_id_token().into());
            }
        }
        let email = claims.email.or_else(|| {
            claims
                .preferred_username
                .filter(|name| crate::domain::email::is_valid(&name.trim().to_lowercase()))
        });
        Ok(VerifiedToken {
            sub: AccountId::new(
                claims
                    .oid
                    .filter(|oid| !oid.is_empty())
                    .unwrap_or(claims.sub),
            ),
            email: email.map(|email| email.trim().to_lowercase()),
            email_verified: claims.email_verified.is_some_and(|v| v.is_true()),
            name: claims.name,
            picture: claims.picture,
        })
    }

    /// The decoding key `kid` of the JWKS at `url`, fetching the set when it is unknown.
    async fn key(&self, url: &str, kid: &str) -> Result<DecodingKey, AppError> {
        let source = self.source(url);
        match source.lookup(kid)? {
            Lookup::Found(key) => return Ok(key),
            Lookup::Blocked => return Err(AuthError::invalid_id_token().into()),
            Lookup::Missing => {}
        }
        let seen = source.fetched_at();
        let _single_flight = source.fetching.lock().await;
        if source.fetched_at() != seen {
            // Another request fetched the set while this one waited: use what it got.
            return match source.lookup(kid)? {
                Lookup::Found(key) => Ok(key),
                Lookup::Blocked | Lookup::Missing => Err(AuthError::invalid_id_token().into()),
            };
        }
        let keys = self.fetch(url).await?;
        let key = keys
            .find(kid)
            .map(DecodingKey::from_jwk)
            .transpose()
            .map_err(|_| AppError::from(AuthError::invalid_id_token()))?;
        source.store(keys, key.is_none());
        key.ok_or_else(|| AuthError::invalid_id_token().into())
    }

    /// The cache entry of `url` (created empty on first use).
    fn source(&self, url: &str) -> Arc<KeySource> {
        self.sources
            .lock()
            .entry(url.to_owned())
            .or_default()
            .clone()
    }

    async fn fetch(&self, url: &str) -> Result<JwkSet, AppError> {
        let response = self
            .http
            .get(url)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|err| {
                tracing::warn!(error = %err, "auth.jwks.unreachable");
                AppError::Unavailable("identity provider keys unreachable".into())
            })?;
        response.json::<JwkSet>().await.map_err(|err| {
            tracing::warn!(error = %err, "auth.jwks.invalid");
            AppError::Unavailable("identity provider keys unreadable".into())
        })
    }
}
