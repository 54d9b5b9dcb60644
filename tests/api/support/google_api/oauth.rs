//! Google's OAuth 2.0 endpoints: the token endpoint (authorization code with PKCE S256,
//! refresh without a new refresh token, client authentication by form or Basic), HS256 id
//! tokens, and revocation (which kills the user's whole grant).

use std::time::{Duration as StdDuration, Instant};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::Utc;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::reply::{Answer, Reply, oauth_error, token_reply};
use super::server::Request;
use super::state::{AccessGrant, RefreshGrant, State, TokenKind, random_token};
use super::{GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET};

/// How long an authorization code can be redeemed.
pub(super) const CODE_LIFETIME: StdDuration = StdDuration::from_secs(600);
/// `expires_in` of access tokens unless a test changes it.
pub(super) const DEFAULT_ACCESS_TOKEN_LIFETIME: u64 = 3599;
/// The HS256 key of id tokens (Bowline does not check the signature of a token it got
/// straight from the token endpoint).
pub(super) const ID_TOKEN_KEY: &[u8] = b"google-fake-id-token-key";

impl State {
    /// The user's grant dies: every refresh and access token of theirs, and the scopes
    /// remembered for `include_granted_scopes`.
    pub(super) fn revoke_grant(&mut self, sub: &str) {
        for grant in self.refresh_tokens.values_mut().filter(|g| g.sub == sub) {
            grant.revoked = true;
        }
        for grant in self.access_tokens.values_mut().filter(|g| g.sub == sub) {
            grant.revoked = true;
        }
        self.granted.remove(sub);
    }

    /// `POST /token`: records the form, then answers it.
    pub(super) fn token(&mut self, request: &Request) -> Reply {
        let form: Vec<(String, String)> = url::form_urlencoded::parse(&request.body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        self.token_requests.push(Value::Object(
            form.iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        ));
        if let Some((left, status)) = self.token_failures {
            self.token_failures = (left > 1).then_some((left - 1, status));
            if left > 0 {
                return oauth_error(
                    status,
                    "temporarily_unavailable",
                    "The service is currently unavailable.",
                );
            }
        }
        self.token_answer(request, &form).unwrap_or_else(|e| e)
    }

    fn token_answer(&mut self, request: &Request, form: &[(String, String)]) -> Answer {
        let content_type = request.header("content-type").unwrap_or_default();
        if !content_type.starts_with("application/x-www-form-urlencoded") {
            return Err(oauth_error(400, "invalid_request", "Invalid content type."));
        }
        let field = |name: &str| {
            form.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .filter(|v| !v.is_empty())
        };
        // client_secret_post or client_secret_basic.
        let basic = request
            .header("authorization")
            .and_then(|h| h.strip_prefix("Basic "))
            .and_then(|b| STANDARD.decode(b.trim()).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|pair| {
                let (id, secret) = pair.split_once(':')?;
                let decode = |s: &str| {
                    url::form_urlencoded::parse(format!("v={s}").as_bytes())
                        .next()
                        .map(|(_, v)| v.into_owned())
                };
                Some((decode(id)?, decode(secret)?))
            });
        let (client_id, client_secret) = match &basic {
            Some((id, secret)) => (Some(id.as_str()), Some(secret.as_str())),
            None => (field("client_id"), field("client_secret")),
        };
        let Some(client_id) = client_id else {
            return Err(oauth_error(
                400,
                "invalid_request",
                "Could not determine client ID from request.",
            ));
        };
        if client_id != GOOGLE_CLIENT_ID {
            return Err(oauth_error(
                401,
                "invalid_client",
                "The OAuth client was not found.",
            ));
        }
        if client_secret != Some(GOOGLE_CLIENT_SECRET) {
            return Err(oauth_error(401, "invalid_client", "Unauthorized"));
        }
        match field("grant_type") {
            Some("authorization_code") => self.redeem_code(field),
            Some("refresh_token") => self.refresh(field),
            Some(other) => Err(oauth_error(
                400,
                "unsupported_grant_type",
                &format!("Invalid grant_type: {other}"),
            )),
            None => Err(oauth_error(
                400,
                "unsupported_grant_type",
                "Invalid grant_type: ",
            )),
        }
    }

    fn redeem_code<'a>(&mut self, field: impl Fn(&str) -> Option<&'a str>) -> Answer {
        let Some(code) = field("code") else {
            return Err(oauth_error(
                400,
                "invalid_request",
                "Missing required parameter: code",
            ));
        };
        let Some(grant) = self.codes.get(code) else {
            return Err(oauth_error(400, "invalid_grant", "Malformed auth code."));
        };
        if grant.used {
            return Err(oauth_error(400, "invalid_grant", "Bad Request"));
        }
        if grant.expired || grant.issued.elapsed() > CODE_LIFETIME {
            return Err(oauth_error(400, "invalid_grant", "Bad Request"));
        }
        if grant.client_id != GOOGLE_CLIENT_ID {
            return Err(oauth_error(400, "invalid_grant", "Unauthorized"));
        }
        match field("redirect_uri") {
            None => {
                return Err(oauth_error(
                    400,
                    "invalid_request",
                    "Missing parameter: redirect_uri",
                ));
            }
            Some(uri) if uri != grant.redirect_uri => {
                return Err(oauth_error(400, "redirect_uri_mismatch", "Bad Request"));
            }
            Some(_) => {}
        }
        let Some(verifier) = field("code_verifier") else {
            return Err(oauth_error(400, "invalid_grant", "Missing code verifier."));
        };
        let valid_verifier = (43..=128).contains(&verifier.len())
            && verifier
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
        if !valid_verifier
            || URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != grant.challenge
        {
            return Err(oauth_error(400, "invalid_grant", "Invalid code verifier."));
        }
        let grant = self.codes.get_mut(code).expect("code");
        grant.used = true;
        let sub = grant.sub.clone();
        let scopes = grant.scopes.clone();
        let nonce = grant.nonce.clone();
        let has_refresh = self
            .refresh_tokens
            .values()
            .any(|g| g.sub == sub && !g.revoked);
        let refresh_token = (grant.offline && (grant.prompt_consent || !has_refresh)).then(|| {
            let token = format!("1//0{}", random_token(90));
            self.issued
                .push((TokenKind::Refresh, sub.clone(), token.clone()));
            self.refresh_tokens.insert(
                token.clone(),
                RefreshGrant {
                    sub: sub.clone(),
                    scopes: scopes.clone(),
                    revoked: false,
                },
            );
            token
        });
        let access_token = self.issue_access_token(&sub, &scopes, refresh_token.clone());
        let mut body = Map::new();
        body.insert("access_token".into(), json!(access_token));
        body.insert("expires_in".into(), json!(self.access_token_lifetime));
        if let Some(refresh_token) = refresh_token {
            body.insert("refresh_token".into(), json!(refresh_token));
        }
        body.insert("scope".into(), json!(scopes.join(" ")));
        body.insert("token_type".into(), json!("Bearer"));
        if scopes.iter().any(|s| s == "openid") {
            body.insert(
                "id_token".into(),
                json!(self.id_token(&sub, nonce.as_deref())),
            );
        }
        Ok(token_reply(body))
    }

    fn refresh<'a>(&mut self, field: impl Fn(&str) -> Option<&'a str>) -> Answer {
        let Some(refresh_token) = field("refresh_token") else {
            return Err(oauth_error(
                400,
                "invalid_request",
                "Missing required parameter: refresh_token",
            ));
        };
        let Some(grant) = self
            .refresh_tokens
            .get(refresh_token)
            .filter(|g| !g.revoked)
        else {
            return Err(oauth_error(
                400,
                "invalid_grant",
                "Token has been expired or revoked.",
            ));
        };
        let sub = grant.sub.clone();
        let scopes = grant.scopes.clone();
        let access_token = self.issue_access_token(&sub, &scopes, Some(refresh_token.to_owned()));
        let mut body = Map::new();
        body.insert("access_token".into(), json!(access_token));
        body.insert("expires_in".into(), json!(self.access_token_lifetime));
        body.insert("scope".into(), json!(scopes.join(" ")));
        body.insert("token_type".into(), json!("Bearer"));
        if scopes.iter().any(|s| s == "openid") {
            body.insert("id_token".into(), json!(self.id_token(&sub, None)));
        }
        Ok(token_reply(body))
    }

    fn issue_access_token(
        &mut self,
        sub: &str,
        scopes: &[String],
        refresh_token: Option<String>,
    ) -> String {
        let token = format!("ya29.a0{}", random_token(120));
        self.issued
            .push((TokenKind::Access, sub.to_owned(), token.clone()));
        self.access_tokens.insert(
            token.clone(),
            AccessGrant {
                sub: sub.to_owned(),
                scopes: scopes.to_vec(),
                refresh_token,
                expires_at: Instant::now() + StdDuration::from_secs(self.access_token_lifetime),
                expired: false,
                revoked: false,
            },
        );
        token
    }

    fn id_token(&self, sub: &str, nonce: Option<&str>) -> String {
        let user = &self.accounts[self.account_by_sub(sub)].user;
        let now = Utc::now().timestamp();
        let mut claims = json!({
            "iss": "https://accounts.google.com",
            "azp": GOOGLE_CLIENT_ID,
            "aud": GOOGLE_CLIENT_ID,
            "sub": user.sub,
            "email": user.email,
            "email_verified": true,
            "name": user.name,
            "iat": now,
            "exp": now + 3600,
        });
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some("google-fake".to_owned());
        jsonwebtoken::encode(
            &header,
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(ID_TOKEN_KEY),
        )
        .expect("sign the id token")
    }

    /// `POST /revoke` (`token` in the form or the query).
    pub(super) fn revoke(&mut self, request: &Request) -> Reply {
        let form: Vec<(String, String)> = url::form_urlencoded::parse(&request.body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let token = form
            .iter()
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v.clone())
            .or_else(|| request.param("token"));
        let Some(token) = token.filter(|t| !t.is_empty()) else {
            return oauth_error(400, "invalid_request", "Missing required parameter: token");
        };
        self.revoked.push(token.clone());
        let sub = match (
            self.refresh_tokens.get(&token),
            self.access_tokens.get(&token),
        ) {
            (Some(grant), _) if !grant.revoked => grant.sub.clone(),
            (_, Some(grant))
                if !grant.revoked && !grant.expired && grant.expires_at > Instant::now() =>
            {
                grant.sub.clone()
            }
            _ => return oauth_error(400, "invalid_token", "Token expired or revoked"),
        };
        // Google revokes the whole grant: every token of this user for this client.
        self.revoke_grant(&sub);
        Reply::json(200, json!({}))
    }
}
