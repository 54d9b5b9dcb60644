//! Google's consent screen, driven by the test in place of a browser: it checks the
//! authorization URL as Google would (client, redirect URI, response type, scopes, PKCE
//! S256, access type, prompt) and hands back the redirect with a code, or with
//! `error=access_denied`.

use std::collections::HashMap;
use std::time::Instant;

use super::scopes::KNOWN_SCOPES;
use super::state::{AuthCode, State, random_token};
use super::{GOOGLE_CLIENT_ID, GoogleUser};

/// An authorization URL's parameters, as the consent screen understood them.
pub(super) struct AuthorizationRequest {
    client_id: String,
    redirect_uri: String,
    scopes: Vec<String>,
    state: Option<String>,
    code_challenge: String,
    offline: bool,
    prompt_consent: bool,
    include_granted_scopes: bool,
    nonce: Option<String>,
}

impl AuthorizationRequest {
    /// Checks `authorization_url` as Google's consent screen does (it must be the fake's
    /// own `expected` endpoint); `Err` is the error Google's page would show.
    pub(super) fn parse(authorization_url: &str, expected: &str) -> Result<Self, String> {
        let url = url::Url::parse(authorization_url)
            .map_err(|e| format!("invalid_request: not a URL ({e})"))?;
        let own = url::Url::parse(expected).expect("own URL");
        if url.origin() != own.origin() || url.path() != own.path() {
            return Err(format!(
                "the browser went to {authorization_url}, not to {expected}"
            ));
        }
        let mut params: HashMap<String, String> = HashMap::new();
        for (key, value) in url.query_pairs() {
            if params.insert(key.to_string(), value.to_string()).is_some() {
                return Err(format!(
                    "invalid_request: Parameter included more than once: {key}"
                ));
            }
        }
        let param = |name: &str| {
            params
                .get(name)
                .map(String::as_str)
                .filter(|v| !v.is_empty())
        };
        let client_id =
            param("client_id").ok_or("invalid_request: Missing required parameter: client_id")?;
        if client_id != GOOGLE_CLIENT_ID {
            return Err("invalid_client: The OAuth client was not found.".to_owned());
        }
        let redirect_uri = param("redirect_uri")
            .ok_or("invalid_request: Missing required parameter: redirect_uri")?;
        let redirect = url::Url::parse(redirect_uri)
            .map_err(|_| "invalid_request: Invalid parameter value for redirect_uri".to_owned())?;
        if !["http", "https"].contains(&redirect.scheme()) || redirect.fragment().is_some() {
            return Err("invalid_request: Invalid parameter value for redirect_uri".to_owned());
        }
        match param("response_type") {
            Some("code") => {}
            None => {
                return Err("invalid_request: Missing required parameter: response_type".to_owned());
            }
            Some(other) => return Err(format!("unsupported_response_type: {other}")),
        }
        let scope = param("scope").ok_or("invalid_request: Missing required parameter: scope")?;
        let mut scopes: Vec<String> = Vec::new();
        for s in scope.split(' ').filter(|s| !s.is_empty()) {
            if !KNOWN_SCOPES.contains(&s) {
                return Err(format!(
                    "invalid_scope: Some requested scopes were invalid: {s}"
                ));
            }
            if !scopes.iter().any(|known| known == s) {
                scopes.push(s.to_owned());
            }
        }
        if scopes.is_empty() {
            return Err("invalid_request: Missing required parameter: scope".to_owned());
        }
        let code_challenge = param("code_challenge")
            .ok_or("invalid_request: Missing required parameter: code_challenge")?;
        if param("code_challenge_method") != Some("S256") {
            return Err("invalid_request: code_challenge_method must be S256".to_owned());
        }
        if !(43..=128).contains(&code_challenge.len())
            || !code_challenge
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err("invalid_request: Invalid code_challenge".to_owned());
        }
        let offline = match param("access_type") {
            None | Some("online") => false,
            Some("offline") => true,
            Some(other) => return Err(format!("invalid_request: Invalid access_type: {other}")),
        };
        let prompt = param("prompt").unwrap_or_default();
        for p in prompt.split(' ').filter(|p| !p.is_empty()) {
            if !["none", "consent", "select_account"].contains(&p) {
                return Err(format!("invalid_request: Invalid prompt: {p}"));
            }
        }
        let include_granted_scopes = match param("include_granted_scopes") {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(format!(
                    "invalid_request: Invalid include_granted_scopes: {other}"
                ));
            }
        };
        Ok(AuthorizationRequest {
            client_id: client_id.to_owned(),
            redirect_uri: redirect_uri.to_owned(),
            scopes,
            state: params.get("state").cloned(),
            code_challenge: code_challenge.to_owned(),
            offline,
            prompt_consent: prompt.split(' ').any(|p| p == "consent"),
            include_granted_scopes,
            nonce: param("nonce").map(str::to_owned),
        })
    }

    /// Where the browser goes back when the user presses "Cancel":
    /// `<redirect_uri>?error=access_denied&state=<state>`.
    pub(super) fn denied(self) -> String {
        let mut params = vec![("error", "access_denied".to_owned())];
        if let Some(st) = self.state {
            params.push(("state", st));
        }
        append_query(&self.redirect_uri, &params)
    }
}

impl State {
    /// The user consents: the scopes are granted (with the earlier ones when the request
    /// includes granted scopes), a code is issued, and the redirect back to the client is
    /// returned: `<redirect_uri>?state=&code=&scope=&authuser=0&prompt=consent`.
    pub(super) fn grant(&mut self, request: &AuthorizationRequest, user: &GoogleUser) -> String {
        assert!(
            self.account(&user.email).is_some(),
            "Google fake: unknown user {}",
            user.email
        );
        let previous = self.granted.get(&user.sub).cloned().unwrap_or_default();
        let mut scopes = request.scopes.clone();
        if request.include_granted_scopes {
            scopes.extend(previous.into_iter().filter(|s| !request.scopes.contains(s)));
        }
        self.granted.insert(user.sub.clone(), scopes.clone());
        let code = format!("4/0A{}", random_token(70));
        self.codes.insert(
            code.clone(),
            AuthCode {
                client_id: request.client_id.clone(),
                redirect_uri: request.redirect_uri.clone(),
                challenge: request.code_challenge.clone(),
                scopes: scopes.clone(),
                sub: user.sub.clone(),
                issued: Instant::now(),
                used: false,
                offline: request.offline,
                prompt_consent: request.prompt_consent,
                nonce: request.nonce.clone(),
                expired: false,
            },
        );
        let mut params = Vec::new();
        if let Some(st) = &request.state {
            params.push(("state", st.clone()));
        }
        params.push(("code", code));
        params.push(("scope", scopes.join(" ")));
        params.push(("authuser", "0".to_owned()));
        params.push(("prompt", "consent".to_owned()));
        append_query(&request.redirect_uri, &params)
    }
}

/// `uri` with `params` added to its query, percent-encoded (`%20` for spaces).
fn append_query(uri: &str, params: &[(&str, String)]) -> String {
    let encode = |s: &str| {
        percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC)
            .to_string()
            .replace("%2D", "-")
            .replace("%2E", ".")
            .replace("%5F", "_")
            .replace("%7E", "~")
    };
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    let separator = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{separator}{}", query.join("&"))
}
