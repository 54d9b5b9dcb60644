//! The identity platform's consent screen, driven by the test in place of a browser: it
//! checks the authorization URL as Microsoft would and hands back the redirect with a code
//! (or with `error=access_denied`).

use std::time::Instant;

use url::Url;

use super::oauth::{param, short_scope};
use super::state::{AuthCode, State, random_text};
use super::{GraphUser, MICROSOFT_CLIENT_ID};

/// Parses the query of an authorization URL, checking what Microsoft checks.
fn authorization_request(url: &str, base: &str) -> Vec<(String, String)> {
    let parsed = Url::parse(url).unwrap_or_else(|e| panic!("authorization URL {url}: {e}"));
    let expected = format!("{base}/common/oauth2/v2.0/authorize");
    let origin_and_path = format!(
        "{}://{}{}",
        parsed.scheme(),
        parsed.host_str().unwrap_or_default(),
        parsed.port().map(|p| format!(":{p}")).unwrap_or_default()
    ) + parsed.path();
    assert_eq!(
        origin_and_path, expected,
        "the authorization URL points at the fake's authorize endpoint"
    );
    parsed.query_pairs().into_owned().collect()
}

fn with_query(redirect_uri: &str, pairs: &[(&str, &str)]) -> String {
    let mut url = Url::parse(redirect_uri)
        .unwrap_or_else(|e| panic!("redirect_uri {redirect_uri} is not a URL: {e}"));
    url.query_pairs_mut().extend_pairs(pairs.iter().copied());
    url.to_string()
}

/// The user consents: checks the authorization request and returns the redirect.
pub(super) fn consent(state: &mut State, url: &str, user: &GraphUser) -> String {
    let pairs = authorization_request(url, &state.base);
    let required = |name: &str| {
        param(&pairs, name)
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| panic!("the authorization URL has no {name}: {url}"))
            .to_owned()
    };
    assert_eq!(required("client_id"), MICROSOFT_CLIENT_ID, "client_id");
    assert_eq!(required("response_type"), "code", "response_type");
    let redirect_uri = required("redirect_uri");
    assert!(
        redirect_uri.starts_with("http://") || redirect_uri.starts_with("https://"),
        "redirect_uri {redirect_uri} is an http(s) URL"
    );
    if let Some(mode) = param(&pairs, "response_mode") {
        assert_eq!(mode, "query", "response_mode");
    }
    assert_eq!(required("code_challenge_method"), "S256", "PKCE method");
    let challenge = required("code_challenge");
    assert_eq!(
        challenge.len(),
        43,
        "an S256 challenge is 43 base64url characters"
    );
    let scope = required("scope");
    assert!(
        !scope.contains(','),
        "AADSTS70011: scopes are separated by spaces, not commas: {scope}"
    );
    let scopes: Vec<String> = scope
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    assert!(
        scopes
            .iter()
            .any(|s| short_scope(s) == "calendars.readwrite"),
        "the scopes ask for Calendars.ReadWrite: {scope}"
    );
    let state_param = required("state");
    let code = format!("M.C5{}", random_text(40));
    state.codes.insert(
        code.clone(),
        AuthCode {
            oid: user.oid.clone(),
            client_id: MICROSOFT_CLIENT_ID.to_owned(),
            redirect_uri: redirect_uri.clone(),
            scopes,
            challenge,
            issued: Instant::now(),
            expired: false,
            redeemed: false,
        },
    );
    let session_state = uuid::Uuid::new_v4().to_string();
    with_query(
        &redirect_uri,
        &[
            ("code", &code),
            ("state", &state_param),
            ("session_state", &session_state),
        ],
    )
}

/// The user declines: the redirect carries `error=access_denied`.
pub(super) fn deny(state: &State, url: &str) -> String {
    let pairs = authorization_request(url, &state.base);
    let redirect_uri = param(&pairs, "redirect_uri").expect("redirect_uri");
    let state_param = param(&pairs, "state").unwrap_or_default();
    with_query(
        redirect_uri,
        &[
            ("error", "access_denied"),
            ("error_subcode", "cancel"),
            (
                "error_description",
                "AADSTS65004: User declined to consent to access the app.",
            ),
            ("state", state_param),
        ],
    )
}
