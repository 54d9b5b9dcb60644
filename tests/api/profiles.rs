//! A user's name and image follow one rule on every path that sets them: at most 200
//! characters of name, and an image that is an http(s) URL. Sign-up and profile updates
//! refuse what breaks it; a provider's claims at sign-in are fitted to it.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::auth_social::{GOOGLE_CLIENT, app_with, social};
use crate::helpers::spawn_app;
use crate::support::idp::{IdentityProvider, google_claims};

#[tokio::test]
async fn sign_up_and_profile_updates_refuse_long_names_and_non_web_images() {
    let app = spawn_app().await;
    let long = "N".repeat(201);
    for (body, field) in [
        (
            json!({ "email": "a@example.com", "password": "long enough pw", "name": long }),
            "name",
        ),
        (
            json!({ "email": "b@example.com", "password": "long enough pw", "name": "B", "image": "javascript:alert(1)" }),
            "image",
        ),
    ] {
        let response = app.post_json("/api/auth/sign-up/email", &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{field}");
        let answer: Value = response.json().await.expect("JSON");
        assert_eq!(answer["code"], "VALIDATION_ERROR");
        assert!(
            answer["message"]
                .as_str()
                .expect("message")
                .starts_with(&format!("[body.{field}]")),
            "{answer}"
        );
    }
    assert_eq!(
        app.sign_in("a@example.com", "long enough pw")
            .await
            .status(),
        StatusCode::UNAUTHORIZED,
        "nobody was created"
    );

    let user = app.sign_up("profile@example.com").await;
    let update = |body: Value| {
        app.as_user(Method::POST, "/api/auth/update-user", &user)
            .json(&body)
            .send()
    };
    for body in [
        json!({ "name": "N".repeat(201) }),
        json!({ "image": "data:image/png;base64,AAAA" }),
        json!({ "image": "/relative.png" }),
    ] {
        let response = update(body.clone()).await.expect("request");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
    }
    let fine =
        update(json!({ "name": "N".repeat(200), "image": "https://cdn.example.com/me.png" }))
            .await
            .expect("request");
    assert_eq!(fine.status(), StatusCode::OK);
    let session = app.session(&user.token).await;
    assert_eq!(session["user"]["name"].as_str().expect("name").len(), 200);
    assert_eq!(session["user"]["image"], "https://cdn.example.com/me.png");
    let cleared = update(json!({ "image": null })).await.expect("request");
    assert_eq!(cleared.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_providers_claims_are_fitted_to_the_rules_at_sign_in() {
    let idp = IdentityProvider::start().await;
    let app = app_with(&idp).await;
    let mut claims = google_claims(GOOGLE_CLIENT, "g-long", "long@example.com");
    claims["name"] = json!("G".repeat(500));
    claims["picture"] = json!("javascript:alert(1)");
    let token = idp.sign("key-a", &claims);
    let (status, body) = social(
        &app,
        json!({ "provider": "google", "idToken": { "token": token } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["name"].as_str().expect("name").len(), 200);
    assert_eq!(body["user"]["image"], Value::Null);
}
