//! Native id-token sign-in for Google, Apple and Microsoft against keys served on 127.0.0.1:
//! creation, repeat sign-in, refusal of a wrong audience, issuer, expiry or signature, key
//! rotation, and the account-linking rules (Microsoft, which sends no `email_verified`, is a
//! trusted linking provider).

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app_with};
use crate::support::idp::{IdentityProvider, apple_claims, google_claims};

/// The Google web client id the test servers accept.
pub const GOOGLE_CLIENT: &str = "web-client.apps.example";
/// The app bundle id: the audience of Apple identity tokens.
pub const APPLE_BUNDLE: &str = "dev.bowline.app";

/// A server with Google and Apple sign-in, both with keys from `idp`.
pub async fn app_with(idp: &IdentityProvider) -> TestApp {
    let jwks = idp.jwks_url();
    spawn_app_with(move |s| {
        s.google.client_id = Some(GOOGLE_CLIENT.into());
        s.google.jwks_url = jwks.clone();
        s.apple.client_id = Some(APPLE_BUNDLE.into());
        s.apple.bundle_id = APPLE_BUNDLE.into();
        s.apple.jwks_url = jwks;
    })
    .await
}

/// `POST /api/auth/sign-in/social` with `body`, as a native client sends it.
pub async fn social(app: &TestApp, body: Value) -> (StatusCode, Value) {
    // Native clients send no Origin and no cookie.
    let response = app
        .client
        .post(app.url("/api/auth/sign-in/social"))
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = response.status();
    (status, response.json().await.expect("JSON"))
}

#[tokio::test]
async fn google_id_token_creates_the_user_then_signs_it_in_again() {
    let idp = IdentityProvider::start().await;
    let app = app_with(&idp).await;
    let token = idp.sign(
        "key-a",
        &google_claims(GOOGLE_CLIENT, "g-123", "Grace@Example.com"),
    );
    let (status, body) = social(
        &app,
        json!({ "provider": "google", "idToken": { "token": token } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["redirect"], false);
    assert!(body.get("url").is_none());
    assert_eq!(body["user"]["email"], "grace@example.com");
    assert_eq!(body["user"]["name"], "Grace Hopper");
    assert_eq!(body["user"]["emailVerified"], true);
    assert_eq!(body["user"]["image"], "https://example.com/grace.png");
    let user_id = body["user"]["id"].clone();

    let again = idp.sign(
        "key-a",
        &google_claims(GOOGLE_CLIENT, "g-123", "grace@example.com"),
    );
    let (status, body) = social(
        &app,
        json!({ "provider": "google", "idToken": { "token": again } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["user"]["id"], user_id,
        "same provider subject, same user"
    );
    let session: Value = app
        .client
        .get(app.url("/api/auth/get-session"))
        .bearer_auth(body["token"].as_str().expect("token"))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert_eq!(session["user"]["id"], user_id);
    let accounts: Value = app
        .client
        .get(app.url("/api/auth/list-accounts"))
        .bearer_auth(body["token"].as_str().expect("token"))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert_eq!(accounts[0]["providerId"], "google");
    assert_eq!(accounts[0]["accountId"], "g-123");
}

#[tokio::test]
async fn apple_identity_token_with_string_email_verified_and_name_beside_the_token() {
    let idp = IdentityProvider::start().await;
    let app = app_with(&idp).await;
    let token = idp.sign(
        "key-a",
        &apple_claims(APPLE_BUNDLE, "a-001", "relay@privaterelay.appleid.com"),
    );
    let (status, body) = social(
        &app,
        json!({
            "provider": "apple",
            "idToken": { "token": token, "user": { "name": { "firstName": "Tim", "lastName": "Apple" } } }
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["name"], "Tim Apple");
    assert_eq!(body["user"]["emailVerified"], true);
}

#[tokio::test]
async fn wrong_audience_issuer_expiry_or_signature_is_refused() {
    let idp = IdentityProvider::start().await;
    let app = app_with(&idp).await;
    let now = chrono::Utc::now().timestamp();
    let mut wrong_aud = google_claims("someone-else", "g-1", "x@example.com");
    let mut wrong_iss = google_claims(GOOGLE_CLIENT, "g-1", "x@example.com");
    wrong_iss["iss"] = json!("https://evil.example");
    let mut expired = google_claims(GOOGLE_CLIENT, "g-1", "x@example.com");
    expired["iat"] = json!(now - 7200);
    expired["exp"] = json!(now - 3600);
    let mut apple_to_google = apple_claims(APPLE_BUNDLE, "a-1", "x@example.com");
    apple_to_google["aud"] = json!(GOOGLE_CLIENT);
    let good = idp.sign(
        "key-a",
        &google_claims(GOOGLE_CLIENT, "g-1", "x@example.com"),
    );
    let (head, rest) = good.split_once('.').expect("jwt");
    let (payload, _) = rest.split_once('.').expect("jwt");
    let bad_signature = format!("{head}.{payload}.{}", "A".repeat(342));
    wrong_aud["aud"] = json!("someone-else");
    let cases = [
        ("google", idp.sign("key-a", &wrong_aud)),
        ("google", idp.sign("key-a", &wrong_iss)),
        ("google", idp.sign("key-a", &expired)),
        ("google", idp.sign("key-a", &apple_to_google)),
        ("google", bad_signature),
        ("google", "not a jwt".to_owned()),
        // Signed by a key the provider does not publish.
        (
            "google",
            idp.sign(
                "key-b",
                &google_claims(GOOGLE_CLIENT, "g-1", "x@example.com"),
            ),
        ),
    ];
    for (provider, token) in cases {
        let (status, body) = social(
            &app,
            json!({ "provider": provider, "idToken": { "token": token } }),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        assert_eq!(body["code"], "INVALID_TOKEN");
    }
}

#[tokio::test]
async fn a_rotated_key_is_fetched_when_a_token_names_it() {
    let idp = IdentityProvider::start().await;
    let app = app_with(&idp).await;
    let first = idp.sign(
        "key-a",
        &google_claims(GOOGLE_CLIENT, "g-9", "rot@example.com"),
    );
    assert_eq!(
        social(
            &app,
            json!({ "provider": "google", "idToken": { "token": first } })
        )
        .await
        .0,
        StatusCode::OK
    );
    let fetches = idp.fetches();
    // Cached: a second token with the same key does not refetch.
    let second = idp.sign(
        "key-a",
        &google_claims(GOOGLE_CLIENT, "g-9", "rot@example.com"),
    );
    assert_eq!(
        social(
            &app,
            json!({ "provider": "google", "idToken": { "token": second } })
        )
        .await
        .0,
        StatusCode::OK
    );
    assert_eq!(idp.fetches(), fetches);

    idp.publish(&["key-b"]);
    let rotated = idp.sign(
        "key-b",
        &google_claims(GOOGLE_CLIENT, "g-9", "rot@example.com"),
    );
    let (status, body) = social(
        &app,
        json!({ "provider": "google", "idToken": { "token": rotated } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(idp.fetches(), fetches + 1);
}

#[tokio::test]
async fn providers_without_configuration_are_not_found_and_not_advertised() {
    let app = spawn_app_with(|_| {}).await;
    let (status, body) = social(
        &app,
        json!({ "provider": "google", "idToken": { "token": "x" } }),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["code"], "PROVIDER_NOT_FOUND");
    let info: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
    assert_eq!(info["socials"], json!([]));
}

#[tokio::test]
async fn an_existing_verified_email_user_is_linked_and_an_unverified_one_is_not() {
    let idp = IdentityProvider::start().await;
    let app = app_with(&idp).await;
    let local = app.sign_up("shared@example.com").await;

    // The local password user has not verified the address: no implicit link.
    let token = idp.sign(
        "key-a",
        &google_claims(GOOGLE_CLIENT, "g-shared", "shared@example.com"),
    );
    let (status, body) = social(
        &app,
        json!({ "provider": "google", "idToken": { "token": token } }),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        body,
        json!({ "message": "account not linked", "code": "OAUTH_LINK_ERROR" })
    );

    // Once verified, the Google identity joins the same user.
    verify_email(&app, &local.id).await;
    let token = idp.sign(
        "key-a",
        &google_claims(GOOGLE_CLIENT, "g-shared", "shared@example.com"),
    );
    let (status, body) = social(
        &app,
        json!({ "provider": "google", "idToken": { "token": token } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["id"], local.id.as_str());
}

#[tokio::test]
async fn link_social_adds_a_provider_identity_with_a_different_email() {
    let idp = IdentityProvider::start().await;
    let app = app_with(&idp).await;
    let user = app.sign_up("owner@example.com").await;
    let token = idp.sign(
        "key-a",
        &apple_claims(APPLE_BUNDLE, "a-link", "someone@privaterelay.appleid.com"),
    );
    let response = app
        .as_user(reqwest::Method::POST, "/api/auth/link-social", &user)
        .json(&json!({ "provider": "apple", "idToken": { "token": token } }))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.json::<Value>().await.expect("JSON"),
        json!({ "url": "", "status": true, "redirect": false })
    );
    // The Apple identity now signs in as that user.
    let token = idp.sign(
        "key-a",
        &apple_claims(APPLE_BUNDLE, "a-link", "someone@privaterelay.appleid.com"),
    );
    let (status, body) = social(
        &app,
        json!({ "provider": "apple", "idToken": { "token": token } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["user"]["id"], user.id.as_str());

    // Linking it to someone else is a conflict.
    let other = app.sign_up("other@example.com").await;
    let token = idp.sign(
        "key-a",
        &apple_claims(APPLE_BUNDLE, "a-link", "someone@privaterelay.appleid.com"),
    );
    let conflict = app
        .as_user(reqwest::Method::POST, "/api/auth/link-social", &other)
        .json(&json!({ "provider": "apple", "idToken": { "token": token } }))
        .send()
        .await
        .expect("request");
    assert_eq!(conflict.status(), StatusCode::CONFLICT);
}

/// The Microsoft client id the test servers accept.
const MICROSOFT_CLIENT: &str = "00000000-0000-0000-0000-0000000000m5";

/// Claims of a Microsoft id token from tenant `tid` (no `email_verified`, as Microsoft sends).
fn microsoft_claims(tid: &str, oid: &str, email: &str) -> Value {
    let now = chrono::Utc::now().timestamp();
    json!({
        "iss": format!("https://login.microsoftonline.com/{tid}/v2.0"),
        "aud": MICROSOFT_CLIENT,
        "sub": format!("pairwise-{oid}"),
        "oid": oid,
        "tid": tid,
        "preferred_username": email,
        "name": "Ada Lovelace",
        "iat": now,
        "exp": now + 3600,
    })
}

async fn microsoft_app(idp: &IdentityProvider) -> TestApp {
    let jwks = idp.jwks_url();
    spawn_app_with(move |s| {
        s.microsoft.client_id = Some(MICROSOFT_CLIENT.into());
        s.microsoft.jwks_url = jwks;
    })
    .await
}

#[tokio::test]
async fn microsoft_id_tokens_sign_in_by_object_id_and_link_as_a_trusted_provider() {
    let idp = IdentityProvider::start().await;
    let app = microsoft_app(&idp).await;
    let tenant = "9188040d-6c67-4c5b-b112-36a304b66dad";

    let token = idp.sign(
        "key-a",
        &microsoft_claims(tenant, "oid-1", "Ada@Example.com"),
    );
    let (status, body) = social(
        &app,
        json!({ "provider": "microsoft", "idToken": { "token": token } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["user"]["email"], "ada@example.com",
        "the sign-in name stands in for email"
    );
    assert_eq!(
        body["user"]["emailVerified"], false,
        "Microsoft does not say"
    );
    let ada = body["user"]["id"].clone();
    let rows =
        bowline::store::accounts::list_for_user(&app.ctx().db, &ada.as_str().unwrap().into())
            .await
            .expect("accounts");
    assert_eq!(rows[0].provider_id, "microsoft");
    assert_eq!(
        rows[0].account_id, "oid-1",
        "better-auth keeps Microsoft's object id"
    );

    // The neutral id names the same provider; the same object id is the same user.
    let again = idp.sign(
        "key-a",
        &microsoft_claims(tenant, "oid-1", "ada@example.com"),
    );
    let (status, body) = social(
        &app,
        json!({ "provider": "provider_c", "idToken": { "token": again } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["id"], ada);

    // A verified local user with the same address is linked although the token says
    // nothing about verification: Microsoft is trusted.
    let local = app.sign_up("grace@example.com").await;
    verify_email(&app, &local.id).await;
    let token = idp.sign(
        "key-a",
        &microsoft_claims(tenant, "oid-2", "grace@example.com"),
    );
    let (status, body) = social(
        &app,
        json!({ "provider": "microsoft", "idToken": { "token": token } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["id"], local.id.as_str());
}

#[tokio::test]
async fn a_microsoft_token_whose_issuer_is_not_its_own_tenant_is_refused() {
    let idp = IdentityProvider::start().await;
    let app = microsoft_app(&idp).await;
    let mut claims = microsoft_claims("tenant-a", "oid-3", "eve@example.com");
    claims["iss"] = json!("https://login.microsoftonline.com/tenant-b/v2.0");
    let token = idp.sign("key-a", &claims);
    let (status, body) = social(
        &app,
        json!({ "provider": "microsoft", "idToken": { "token": token } }),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["code"], "INVALID_TOKEN");

    let mut claims = microsoft_claims("tenant-a", "oid-3", "eve@example.com");
    claims["aud"] = json!("someone-else");
    let token = idp.sign("key-a", &claims);
    let (status, _) = social(
        &app,
        json!({ "provider": "microsoft", "idToken": { "token": token } }),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// Marks `user_id`'s address verified, as a confirmed link would.
async fn verify_email(app: &TestApp, user_id: &str) {
    bowline::store::users::set_email_verified(&app.ctx().db, &user_id.into(), chrono::Utc::now())
        .await
        .expect("verify");
}
