//! Redirect targets: every route that redirects the browser or stores a callback for a
//! later redirect takes one rule — an absolute URL on a trusted origin, or a relative path
//! that stays on the server's origin as a browser resolves it — and refuses each of a table
//! of hostile targets (control characters and whitespace written or percent-encoded,
//! backslashes, a second leading slash, other origins in every spelling, other schemes)
//! with better-auth's 403, before anything is sent, stored or redirected.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser, no_redirects, spawn_app};

/// Hostile targets; `{trusted}` stands for the server's own `host:port`.
const HOSTILE: [&str; 30] = [
    "/\t/evil.example",
    "/\n/evil.example",
    "/\r/evil.example",
    "/\0/evil.example",
    "/ /evil.example",
    "\t//evil.example",
    " //evil.example",
    "/%09/evil.example",
    "/%0A/evil.example",
    "/%0d/evil.example",
    "/%00/evil.example",
    "/%20/evil.example",
    "/\\/evil.example",
    "\\/evil.example",
    "/\\evil.example",
    "//evil.example",
    "/%2F/evil.example",
    "%2F%2Fevil.example",
    "/%5C/evil.example",
    "https:evil.example",
    "https://evil.example/",
    "http://{trusted}@evil.example/",
    "\u{ff0f}\u{ff0f}evil.example",
    "/\u{ff0f}evil.example",
    "/\u{3000}/evil.example",
    "javascript:alert(document.cookie)",
    "JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "evil.example",
    "/x\u{7f}/../evil.example",
];

/// The table with `{trusted}` filled in for `app`.
fn hostile(app: &TestApp) -> Vec<String> {
    let host = app.base.trim_start_matches("http://");
    HOSTILE
        .iter()
        .map(|target| target.replace("{trusted}", host))
        .collect()
}

/// `path` with `callbackURL` percent-encoded into its query (after `query`, when given).
fn with_callback(path: &str, query: &str, target: &str) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(target.as_bytes()).collect();
    format!("{path}?{query}callbackURL={encoded}")
}

/// A GET without following redirects: the status, `Location` and the JSON body.
async fn get(
    app: &TestApp,
    path: &str,
    user: Option<&TestUser>,
) -> (StatusCode, Option<String>, Value) {
    let mut request = no_redirects().get(app.url(path));
    if let Some(user) = user {
        request = request.bearer_auth(&user.token);
    }
    answer(request.send().await.expect("request")).await
}

/// A POST of `body` with a trusted `Origin`, without following redirects.
async fn post(
    app: &TestApp,
    path: &str,
    user: Option<&TestUser>,
    body: &Value,
) -> (StatusCode, Option<String>, Value) {
    let mut request = no_redirects()
        .post(app.url(path))
        .header("origin", app.base.as_str())
        .json(body);
    if let Some(user) = user {
        request = request.bearer_auth(&user.token);
    }
    answer(request.send().await.expect("request")).await
}

async fn answer(response: reqwest::Response) -> (StatusCode, Option<String>, Value) {
    let status = response.status();
    let location = response
        .headers()
        .get("location")
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    let text = response.text().await.expect("body");
    (
        status,
        location,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// Asserts better-auth's refusal of a target: 403 with `code`, nothing redirected. A NUL
/// (in a query, or a JSON string) is refused by the pipeline before any route reads it:
/// 400, in better-auth's shape too.
fn assert_refused(
    what: &str,
    target: &str,
    (status, location, body): &(StatusCode, Option<String>, Value),
    code: &str,
) {
    assert_eq!(*location, None, "{what} with {target:?} redirects nowhere");
    if target.contains('\0') && *status == StatusCode::BAD_REQUEST {
        assert_eq!(
            body["code"], "BAD_REQUEST",
            "{what} with {target:?}: {body}"
        );
        return;
    }
    assert_eq!(
        *status,
        StatusCode::FORBIDDEN,
        "{what} with {target:?}: {body}"
    );
    assert_eq!(body["code"], code, "{what} with {target:?}: {body}");
    assert!(
        body["message"].is_string(),
        "{what} with {target:?}: {body}"
    );
    assert_eq!(*location, None, "{what} with {target:?} redirects nowhere");
}

#[tokio::test]
async fn the_probes_target_is_refused_where_it_was_redirected_to() {
    let app = spawn_app().await;
    let (status, location, body) = get(
        &app,
        "/api/auth/verify-email?token=x&callbackURL=%2F%09%2Fevil.example",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["code"], "INVALID_CALLBACK_URL");
    assert_eq!(location, None);

    // The same route still redirects to a target of its own origin, or a trusted one.
    for target in [
        "/email-verified",
        &format!("{}/email-verified?x=1", app.base),
    ] {
        let (status, location, _) = get(
            &app,
            &with_callback("/api/auth/verify-email", "token=x&", target),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::FOUND, "{target}");
        let location = location.expect("Location");
        assert!(location.starts_with(target), "{location}");
        assert!(location.contains("error=INVALID_TOKEN"), "{location}");
    }
}

#[tokio::test]
async fn every_redirecting_route_refuses_every_hostile_target() {
    let app = spawn_app().await;
    let user = app.sign_up("targets@example.com").await;
    let targets = hostile(&app);
    assert!(targets.len() >= 20);
    for target in &targets {
        // Routes that redirect at once to a `callbackURL` of their query.
        for (path, query, signed_in) in [
            ("/api/auth/verify-email", "token=x&", false),
            ("/api/auth/reset-password/some-token", "", false),
            ("/api/auth/delete-user/callback", "token=x&", true),
        ] {
            let answer = get(
                &app,
                &with_callback(path, query, target),
                signed_in.then_some(&user),
            )
            .await;
            assert_refused(path, target, &answer, "INVALID_CALLBACK_URL");
        }
        // Routes that store a target for a later redirect: in a mailed link, or in the
        // state of a provider link the OAuth callback redirects with.
        for (path, body, signed_in, code) in [
            (
                "/api/auth/link-social",
                json!({ "provider": "google", "callbackURL": target }),
                true,
                "INVALID_CALLBACK_URL",
            ),
            (
                "/api/auth/link-social",
                json!({ "provider": "google", "errorCallbackURL": target }),
                true,
                "INVALID_ERROR_CALLBACK_URL",
            ),
            (
                "/api/auth/link-social",
                json!({ "provider": "google", "newUserCallbackURL": target }),
                true,
                "INVALID_NEW_USER_CALLBACK_URL",
            ),
            (
                "/api/auth/sign-in/social",
                json!({ "provider": "google", "callbackURL": target }),
                false,
                "INVALID_CALLBACK_URL",
            ),
            (
                "/api/auth/request-password-reset",
                json!({ "email": user.email, "redirectTo": target }),
                false,
                "INVALID_REDIRECT_URL",
            ),
            (
                "/api/auth/send-verification-email",
                json!({ "email": user.email, "callbackURL": target }),
                false,
                "INVALID_CALLBACK_URL",
            ),
            (
                "/api/auth/change-email",
                json!({ "newEmail": "elsewhere@example.com", "callbackURL": target }),
                true,
                "INVALID_CALLBACK_URL",
            ),
            (
                "/api/auth/sign-up/email",
                json!({ "email": "new@example.com", "password": "correct horse battery", "name": "N", "callbackURL": target }),
                false,
                "INVALID_CALLBACK_URL",
            ),
            (
                "/api/auth/sign-in/email",
                json!({ "email": user.email, "password": user.password, "callbackURL": target }),
                false,
                "INVALID_CALLBACK_URL",
            ),
            (
                "/api/auth/delete-user",
                json!({ "callbackURL": target }),
                true,
                "INVALID_CALLBACK_URL",
            ),
        ] {
            let answer = post(&app, path, signed_in.then_some(&user), &body).await;
            assert_refused(path, target, &answer, code);
        }
    }

    // Nothing was mailed, signed up, changed or deleted by any of them.
    let (status, _) = app
        .call(Method::GET, "/api/v1/calendars", &user, None)
        .await;
    assert_eq!(status, StatusCode::OK, "the account is still there");
    let (status, _, _) = post(
        &app,
        "/api/auth/sign-in/email",
        None,
        &json!({ "email": "new@example.com", "password": "correct horse battery" }),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "no account was signed up");
    let session = app.session(&user.token).await;
    assert_eq!(session["user"]["email"], user.email.as_str());
    assert_eq!(session["user"]["emailVerified"], false);
}
