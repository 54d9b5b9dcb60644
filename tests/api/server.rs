//! `GET /api/v1/server` and `GET /api/v1/server/ok`.

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

/// `syncProviders`: Google and Microsoft when their client id and secret are set, CalDAV
/// always — each only with `CALDAV_ENC_KEY`, which seals what connecting stores.
#[tokio::test]
async fn sync_providers_are_advertised_only_when_they_can_be_connected() {
    let configure = |s: &mut bowline::Settings, key: bool, secrets: bool| {
        if key {
            crate::helpers::caldav::with_caldav(s);
        }
        s.google.client_id = Some("web-client.apps.example".into());
        s.microsoft.client_id = Some("00000000-0000-0000-0000-000000000001".into());
        if secrets {
            s.google.client_secret = Some(bowline::config::Secret::new("g-secret"));
            s.microsoft.client_secret = Some(bowline::config::Secret::new("m-secret"));
        }
    };
    let providers = |app: crate::helpers::TestApp| async move {
        let body: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
        body["syncProviders"].clone()
    };
    let all = spawn_app_with(|s| configure(s, true, true)).await;
    assert_eq!(
        providers(all).await,
        json!(["google", "microsoft", "caldav"])
    );
    let ids_only = spawn_app_with(|s| configure(s, true, false)).await;
    assert_eq!(providers(ids_only).await, json!(["caldav"]));
    let no_key = spawn_app_with(|s| configure(s, false, true)).await;
    assert_eq!(
        providers(no_key).await,
        json!([]),
        "nothing could be stored sealed"
    );
}

#[tokio::test]
async fn http1_and_prior_knowledge_http2_are_both_served() {
    let app = spawn_app().await;
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("client");
    let response = h2
        .get(app.url("/api/v1/server/ok"))
        .send()
        .await
        .expect("h2c request");
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.status(), StatusCode::OK);
    let response = app.get("/api/v1/server/ok").await;
    assert_eq!(response.version(), reqwest::Version::HTTP_11);
    assert_eq!(response.status(), StatusCode::OK);

    // A request line that arrives in pieces is still HTTP/1.
    let address = app.url("").replace("http://", "");
    let mut socket = tokio::net::TcpStream::connect(address.trim_end_matches('/'))
        .await
        .expect("connect");
    socket.write_all(b"GE").await.expect("write");
    socket.flush().await.expect("flush");
    tokio::task::yield_now().await;
    socket
        .write_all(b"T /api/v1/server/ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    let mut answer = String::new();
    tokio::time::timeout(crate::helpers::WAIT, socket.read_to_string(&mut answer))
        .await
        .expect("answered in time")
        .expect("read");
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
}
