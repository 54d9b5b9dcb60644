//! The identity platform's v2.0 token endpoint: authorization code with PKCE S256, refresh
//! with rotation (old refresh tokens stay valid), AADSTS error bodies, HS256 id tokens.

use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::reply::Reply;
use super::state::{AccessToken, RefreshToken, State, random_text};
use super::{GraphUser, MICROSOFT_CLIENT_ID, MICROSOFT_CLIENT_SECRET};

/// Key of the id tokens' HS256 signatures (Bowline does not check it).
const ID_TOKEN_KEY: &[u8] = b"graph-fake-id-token-key";
/// How long an authorization code can be redeemed.
const CODE_LIFETIME: Duration = Duration::from_secs(600);
/// Scopes that are not Graph permissions.
const OIDC_SCOPES: &[&str] = &["openid", "profile", "email", "offline_access"];
const GRAPH_RESOURCE: &str = "https://graph.microsoft.com/";

fn is_oidc(scope: &str) -> bool {
    OIDC_SCOPES.iter().any(|s| s.eq_ignore_ascii_case(scope))
}

/// A Graph scope without its resource prefix, lower case (for comparing).
pub(super) fn short_scope(scope: &str) -> String {
    scope
        .strip_prefix(GRAPH_RESOURCE)
        .unwrap_or(scope)
        .to_ascii_lowercase()
}

fn has_scope(scopes: &[String], wanted: &str) -> bool {
    scopes.iter().any(|s| s.eq_ignore_ascii_case(wanted))
}

pub(super) fn param<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn missing(name: &str) -> Reply {
    Reply::identity_error(
        400,
        "invalid_request",
        900144,
        &format!("The request body must contain the following parameter: '{name}'."),
    )
}

/// `POST /{tenant}/oauth2/v2.0/token`.
pub(super) fn token(state: &mut State, form: &[(String, String)]) -> Reply {
    let get = |name: &str| param(form, name).filter(|v| !v.is_empty());
    let Some(grant_type) = get("grant_type") else {
        return missing("grant_type");
    };
    let Some(client_id) = get("client_id") else {
        return missing("client_id");
    };
    if client_id != MICROSOFT_CLIENT_ID {
        return Reply::identity_error(
            400,
            "unauthorized_client",
            700016,
            &format!(
                "Application with identifier '{client_id}' was not found in the directory 'Microsoft Accounts'."
            ),
        );
    }
    match get("client_secret") {
        None => {
            return Reply::identity_error(
                401,
                "invalid_client",
                7000218,
                "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.",
            );
        }
        Some(secret) if secret != MICROSOFT_CLIENT_SECRET => {
            return Reply::identity_error(
                401,
                "invalid_client",
                7000215,
                "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.",
            );
        }
        Some(_) => {}
    }
    if let Some(scope) = get("scope")
        && scope.contains(',')
    {
        return Reply::identity_error(
            400,
            "invalid_scope",
            70011,
            &format!(
                "The provided request must include a 'scope' input parameter. The provided value for the input parameter 'scope' is not valid: '{scope}'."
            ),
        );
    }
    match grant_type {
        "authorization_code" => redeem_code(state, form),
        "refresh_token" => refresh(state, form),
        other => Reply::identity_error(
            400,
            "unsupported_grant_type",
            70003,
            &format!("The app requested an unsupported grant type '{other}'."),
        ),
    }
}

fn redeem_code(state: &mut State, form: &[(String, String)]) -> Reply {
    let get = |name: &str| param(form, name).filter(|v| !v.is_empty());
    let Some(code) = get("code") else {
        return missing("code");
    };
    let Some(redirect_uri) = get("redirect_uri") else {
        return missing("redirect_uri");
    };
    let Some(grant) = state.codes.get_mut(code) else {
        return Reply::identity_error(
            400,
            "invalid_grant",
            9002313,
            "Invalid request. Request is malformed or invalid.",
        );
    };
    if grant.redeemed {
        return Reply::identity_error(
            400,
            "invalid_grant",
            54005,
            "OAuth2 Authorization code was already redeemed, please retry with a new valid code or use an existing refresh token.",
        );
    }
    if grant.expired || grant.issued.elapsed() > CODE_LIFETIME {
        return Reply::identity_error(
            400,
            "invalid_grant",
            70008,
            "The provided authorization code or refresh token has expired due to inactivity. Send a new interactive authorization request for this user and resource.",
        );
    }
    if grant.client_id != MICROSOFT_CLIENT_ID {
        return Reply::identity_error(
            400,
            "invalid_grant",
            70000,
            "Provided grant is invalid or malformed.",
        );
    }
    if grant.redirect_uri != redirect_uri {
        return Reply::identity_error(
            400,
            "invalid_grant",
            500112,
            "The reply address does not match the reply address provided when requesting Authorization code.",
        );
    }
    let Some(verifier) = get("code_verifier") else {
        return Reply::identity_error(
            400,
            "invalid_grant",
            501481,
            "The Code_Verifier does not match the code_challenge supplied in the authorization request.",
        );
    };
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    if !(43..=128).contains(&verifier.len()) || computed != grant.challenge {
        return Reply::identity_error(
            400,
            "invalid_grant",
            50148,
            "The code_verifier does not match the code_challenge supplied in the authorization request for PKCE.",
        );
    }
    grant.redeemed = true;
    let oid = grant.oid.clone();
    let scopes = grant.scopes.clone();
    issue(state, &oid, &scopes, &scopes)
}

fn refresh(state: &mut State, form: &[(String, String)]) -> Reply {
    let get = |name: &str| param(form, name).filter(|v| !v.is_empty());
    let Some(refresh_token) = get("refresh_token") else {
        return missing("refresh_token");
    };
    let Some(grant) = state.refresh_tokens.get(refresh_token) else {
        return Reply::identity_error(
            400,
            "invalid_grant",
            9002313,
            "Invalid request. Request is malformed or invalid.",
        );
    };
    if grant.expired {
        return Reply::identity_error(
            400,
            "invalid_grant",
            700082,
            "The refresh token has expired due to inactivity. The token was issued on 2026-01-01T00:00:00.0000000Z and was inactive for 90.00:00:00.",
        );
    }
    if grant.client_id != MICROSOFT_CLIENT_ID {
        return Reply::identity_error(
            400,
            "invalid_grant",
            70000,
            "Provided grant is invalid or malformed.",
        );
    }
    let granted = grant.scopes.clone();
    let oid = grant.oid.clone();
    let requested: Vec<String> = match get("scope") {
        Some(scope) => scope
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        None => granted.clone(),
    };
    let not_consented: Vec<&String> = requested
        .iter()
        .filter(|s| !is_oidc(s) && !granted.iter().any(|g| short_scope(g) == short_scope(s)))
        .collect();
    if !not_consented.is_empty() {
        return Reply::identity_error(
            400,
            "invalid_grant",
            65001,
            &format!(
                "The user or administrator has not consented to use the application with ID '{MICROSOFT_CLIENT_ID}'. Send an interactive authorization request for this user and resource. Missing: {not_consented:?}"
            ),
        );
    }
    issue(state, &oid, &requested, &granted)
}

/// Tokens for `oid`: an access token for `requested`, a refresh token (with
/// `offline_access`) for `granted`, an id token (with `openid`).
fn issue(state: &mut State, oid: &str, requested: &[String], granted: &[String]) -> Reply {
    let Some(user) = state.user(oid).cloned() else {
        return Reply::identity_error(
            400,
            "invalid_grant",
            50034,
            "The user account does not exist in the directory.",
        );
    };
    let lifetime = state.faults.access_token_lifetime;
    let access_token = format!("EwB{}", random_text(96));
    state.access_tokens.insert(
        access_token.clone(),
        AccessToken {
            oid: oid.to_owned(),
            expires: Instant::now() + lifetime,
        },
    );
    let scope: Vec<String> = requested
        .iter()
        .map(|s| {
            if is_oidc(s) || s.contains("://") {
                s.clone()
            } else {
                format!("{GRAPH_RESOURCE}{s}")
            }
        })
        .collect();
    let mut body = json!({
        "token_type": "Bearer",
        "scope": scope.join(" "),
        "expires_in": lifetime.as_secs(),
        "ext_expires_in": lifetime.as_secs(),
        "access_token": access_token,
    });
    if has_scope(granted, "offline_access") {
        let refresh_token = format!("M.C5_BAY.0.U.-{}", random_text(120));
        state.refresh_tokens.insert(
            refresh_token.clone(),
            RefreshToken {
                oid: oid.to_owned(),
                client_id: MICROSOFT_CLIENT_ID.to_owned(),
                scopes: granted.to_vec(),
                expired: false,
            },
        );
        body["refresh_token"] = json!(refresh_token);
    }
    if has_scope(requested, "openid") || has_scope(granted, "openid") {
        body["id_token"] = json!(id_token(&user, granted));
    }
    Reply::json(200, body)
}

/// An id token as the v2.0 endpoint issues it (no `email_verified`).
fn id_token(user: &GraphUser, scopes: &[String]) -> String {
    let now = chrono::Utc::now().timestamp();
    let mut claims = json!({
        "ver": "2.0",
        "iss": format!("https://login.microsoftonline.com/{}/v2.0", user.tid),
        "sub": user.sub,
        "aud": MICROSOFT_CLIENT_ID,
        "exp": now + 3600,
        "iat": now,
        "nbf": now,
        "tid": user.tid,
        "aio": random_text(30),
    });
    if has_scope(scopes, "profile") {
        claims["oid"] = json!(user.oid);
        claims["name"] = json!(user.name);
        claims["preferred_username"] = json!(user.email);
    }
    if has_scope(scopes, "email") {
        claims["email"] = json!(user.email);
    }
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(ID_TOKEN_KEY),
    )
    .expect("sign the id token")
}

/// The form of a token request as JSON (for `token_requests`).
pub(super) fn form_json(form: &[(String, String)]) -> Value {
    Value::Object(
        form.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}
