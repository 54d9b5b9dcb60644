//! Apple identity tokens refused for a wrong audience (anything but the bundle id, also the
//! web client id configured beside it), issuer, expiry or signature; and a provider whose
//! JWKS answers slowly holding up only the sign-ins that wait for its keys.

use reqwest::StatusCode;
use serde_json::json;

use crate::auth_social::{APPLE_BUNDLE, GOOGLE_CLIENT, social};
use crate::helpers::spawn_app_with;
use crate::support::idp::{IdentityProvider, apple_claims, google_claims};

/// Apple's web (Services) client id, configured besides the bundle id.
const APPLE_WEB_CLIENT: &str = "dev.bowline.web";

#[tokio::test]
async fn apple_tokens_with_a_wrong_audience_issuer_expiry_or_signature_are_refused() {
    let idp = IdentityProvider::start().await;
    let jwks = idp.jwks_url();
    let app = spawn_app_with(move |s| {
        s.apple.client_id = Some(APPLE_WEB_CLIENT.into());
        s.apple.bundle_id = APPLE_BUNDLE.into();
        s.apple.jwks_url = jwks;
    })
    .await;
    let now = chrono::Utc::now().timestamp();
    let claims = || {
        apple_claims(
            APPLE_BUNDLE,
            "a-refused",
            "refused@privaterelay.appleid.com",
        )
    };
    let mut web_client = claims();
    web_client["aud"] = json!(APPLE_WEB_CLIENT);
    let mut someone_else = claims();
    someone_else["aud"] = json!("com.example.other");
    let mut google_issuer = claims();
    google_issuer["iss"] = json!("https://accounts.google.com");
    let mut expired = claims();
    expired["iat"] = json!(now - 1200);
    expired["exp"] = json!(now - 600);
    let good = idp.sign("key-a", &claims());
    let (head, rest) = good.split_once('.').expect("jwt");
    let (payload, _) = rest.split_once('.').expect("jwt");
    let cases = [
        ("the web client id", idp.sign("key-a", &web_client)),
        ("another audience", idp.sign("key-a", &someone_else)),
        ("Google's issuer", idp.sign("key-a", &google_issuer)),
        ("expired", idp.sign("key-a", &expired)),
        (
            "a forged signature",
            format!("{head}.{payload}.{}", "A".repeat(342)),
        ),
        ("a key Apple does not publish", idp.sign("key-b", &claims())),
    ];
    for (what, token) in cases {
        let (status, body) = social(
            &app,
            json!({ "provider": "apple", "idToken": { "token": token } }),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}: {body}");
        assert_eq!(
            body,
            json!({ "message": "Invalid token", "code": "INVALID_TOKEN" }),
            "{what}"
        );
    }
    // The same token for the bundle id signs in.
    let (status, body) = social(
        &app,
        json!({ "provider": "apple", "idToken": { "token": good } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn a_slow_jwks_holds_up_only_the_sign_ins_waiting_for_it() {
    let google = IdentityProvider::start().await;
    let apple = IdentityProvider::start().await;
    let (google_jwks, apple_jwks) = (google.jwks_url(), apple.jwks_url());
    let app = spawn_app_with(move |s| {
        s.google.client_id = Some(GOOGLE_CLIENT.into());
        s.google.jwks_url = google_jwks;
        s.apple.client_id = Some(APPLE_BUNDLE.into());
        s.apple.bundle_id = APPLE_BUNDLE.into();
        s.apple.jwks_url = apple_jwks;
    })
    .await;
    apple.hold();
    let apple_sign_in = |sub: &str| {
        let token = apple.sign(
            "key-a",
            &apple_claims(
                APPLE_BUNDLE,
                sub,
                &format!("{sub}@privaterelay.appleid.com"),
            ),
        );
        social(
            &app,
            json!({ "provider": "apple", "idToken": { "token": token } }),
        )
    };
    let first_apple = apple_sign_in("a-slow-1");
    let second_apple = apple_sign_in("a-slow-2");
    let google_meanwhile = async {
        apple.wait_for_fetches(1).await;
        let token = google.sign(
            "key-a",
            &google_claims(GOOGLE_CLIENT, "g-fast", "fast@example.com"),
        );
        // Apple's keys are still on their way; Google's sign-in must not wait for them
        // (the JWKS fetch gives up after 10 s, so a shared lock would show here).
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            social(
                &app,
                json!({ "provider": "google", "idToken": { "token": token } }),
            ),
        )
        .await
        .expect("Google's sign-in finishes while Apple's keys are held");
        apple.release();
        answer
    };
    let (first, second, google_answer) = tokio::join!(first_apple, second_apple, google_meanwhile);
    assert_eq!(google_answer.0, StatusCode::OK, "{}", google_answer.1);
    assert_eq!(first.0, StatusCode::OK, "{}", first.1);
    assert_eq!(second.0, StatusCode::OK, "{}", second.1);
    assert_eq!(apple.fetches(), 1, "one fetch served both Apple sign-ins");
}
