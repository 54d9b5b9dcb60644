//! `GET /api/v1/server` and `GET /api/v1/server/ok`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{spawn_app, spawn_app_with};

#[tokio::test]
async fn health_reports_ok_and_the_version() {
    let app = spawn_app().await;
    let response = app.get("/api/v1/server/ok").await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body, json!({"ok": true, "version": "0.1.5"}));
}

#[tokio::test]
async fn server_info_has_the_client_contract_fields() {
    let app = spawn_app().await;
    let body: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
    assert_eq!(body["version"], "0.1.5");
    assert_eq!(body["minClientVersion"], "0.1.3");
    assert_eq!(body["socials"], json!([]));
    assert_eq!(body["syncProviders"], json!([]));
    assert_eq!(body["email"], false);
    assert!(
        body["implementation"]
            .as_str()
            .is_some_and(|s| s.starts_with("bowline/"))
    );
}

#[tokio::test]
async fn socials_are_advertised_only_when_configured() {
    let app = spawn_app_with(|s| {
        s.google.client_id = Some("web-client.apps.example".into());
        s.apple.client_id = Some("dev.bowline.app".into());
    })
    .await;
    let body: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
    assert_eq!(body["socials"], json!(["google", "apple"]));

    let only_apple = spawn_app_with(|s| s.apple.client_id = Some("dev.bowline.app".into())).await;
    let body: Value = only_apple
        .get("/api/v1/server")
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(body["socials"], json!(["apple"]));
}
