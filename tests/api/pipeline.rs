//! The request pipeline: request ids, body limits, JSON errors, unmatched routes, CORS and
//! the headers every response carries.

use bytes::Bytes;
use http_body_util::StreamBody;
use hyper::body::Frame;
use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{spawn_app, spawn_app_with};

async fn error_body(response: reqwest::Response) -> (StatusCode, String, Value) {
    let status = response.status();
    let header = response
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .expect("x-request-id header")
        .to_owned();
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    let body: Value = response.json().await.expect("JSON error body");
    (status, header, body)
}

#[tokio::test]
async fn a_valid_client_request_id_is_echoed() {
    let app = spawn_app().await;
    let response = app
        .client
        .get(app.url("/api/v1/server/ok"))
        .header("x-request-id", "trace.42_a-b")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["x-request-id"], "trace.42_a-b");
}

#[tokio::test]
async fn an_invalid_client_request_id_is_replaced_and_matches_the_error_body() {
    let app = spawn_app().await;
    let response = app
        .client
        .get(app.url("/api/v1/does-not-exist"))
        .header("x-request-id", "not valid!")
        .send()
        .await
        .expect("request");
    let (status, header, body) = error_body(response).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_ne!(header, "not valid!");
    assert!(uuid::Uuid::parse_str(&header).is_ok(), "{header}");
    assert_eq!(body["requestId"], header.as_str());
}

#[tokio::test]
async fn unmatched_routes_are_json_404s() {
    let app = spawn_app().await;
    for path in ["/", "/api/v1/nothing/here", "/api/auth/unknown", "/metrics"] {
        let (status, header, body) = error_body(app.get(path).await).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            body,
            serde_json::json!({"error": "Not found.", "requestId": header})
        );
    }
}

#[tokio::test]
async fn a_json_body_over_512_kb_is_413() {
    let app = spawn_app().await;
    let big = format!("{{\"data\":\"{}\"}}", "x".repeat(600 * 1024));
    let response = app
        .client
        .post(app.url("/api/v1/server"))
        .header("content-type", "application/json")
        .body(big.clone())
        .send()
        .await
        .expect("request");
    let (status, header, body) = error_body(response).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body["requestId"], header.as_str());

    // Without a Content-Length (chunked), the cap holds while reading.
    let chunks: Vec<Result<Frame<Bytes>, std::io::Error>> = big
        .as_bytes()
        .chunks(64 * 1024)
        .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
        .collect();
    let response = app
        .client
        .post(app.url("/api/v1/server"))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap(StreamBody::new(futures::stream::iter(
            chunks,
        ))))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn a_json_body_of_exactly_512_kb_passes_the_cap() {
    let app = spawn_app().await;
    let filler = 512 * 1024 - "{\"d\":\"\"}".len();
    let body = format!("{{\"d\":\"{}\"}}", "x".repeat(filler));
    assert_eq!(body.len(), 512 * 1024);
    let response = app
        .client
        .post(app.url("/api/v1/server/ok"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("request");
    // Past the cap, the route itself answers: it only takes GET.
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn malformed_json_is_400_with_the_parser_message() {
    let app = spawn_app().await;
    for (content_type, body) in [
        ("application/json", "{\"a\":"),
        ("application/json; charset=utf-8", "{not json}"),
        ("application/merge-patch+json", "[1,2"),
    ] {
        let response = app
            .client
            .post(app.url("/api/v1/anything"))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .expect("request");
        let (status, header, json) = error_body(response).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let message = json["error"].as_str().expect("error text");
        assert!(
            message.starts_with("Request body is not valid JSON"),
            "{message}"
        );
        assert_eq!(json["requestId"], header.as_str());
    }
}

#[tokio::test]
async fn a_known_path_with_the_wrong_method_is_a_json_405() {
    let app = spawn_app().await;
    let response = app
        .client
        .delete(app.url("/api/v1/server"))
        .send()
        .await
        .expect("request");
    let (status, _, body) = error_body(response).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(body["error"], "Method not allowed.");
}

#[tokio::test]
async fn every_response_carries_the_security_headers() {
    let app = spawn_app().await;
    for path in ["/api/v1/server/ok", "/nope"] {
        let response = app.get(path).await;
        let headers = response.headers();
        assert_eq!(headers["content-security-policy"], "frame-ancestors 'none'");
        assert_eq!(headers["referrer-policy"], "no-referrer");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["x-frame-options"], "DENY");
    }
    // The metrics listener's answers too.
    let addr = app.metrics_addr.expect("metrics listener enabled");
    for path in ["/metrics", "/nope"] {
        let response = app
            .client
            .get(format!("http://{addr}{path}"))
            .send()
            .await
            .expect("scrape");
        assert_eq!(
            response.headers()["x-content-type-options"],
            "nosniff",
            "{path}"
        );
    }
}

#[tokio::test]
async fn cors_allows_listed_origins_with_credentials_and_refuses_others() {
    let app = spawn_app_with(|s| s.server.cors_origins = vec!["https://web.example".into()]).await;

    let allowed = app
        .client
        .get(app.url("/api/v1/server/ok"))
        .header("origin", "https://web.example")
        .send()
        .await
        .expect("request");
    assert_eq!(allowed.status(), StatusCode::OK);
    let headers = allowed.headers();
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://web.example"
    );
    assert_eq!(headers["access-control-allow-credentials"], "true");
    let exposed = headers["access-control-expose-headers"]
        .to_str()
        .expect("text");
    assert!(exposed.contains("x-request-id"), "{exposed}");

    // The server's own origin is always allowed, and errors carry the CORS headers too.
    let own = app
        .client
        .get(app.url("/missing"))
        .header("origin", app.base.as_str())
        .send()
        .await
        .expect("request");
    assert_eq!(own.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        own.headers()["access-control-allow-origin"],
        app.base.as_str()
    );

    let preflight = app
        .client
        .request(reqwest::Method::OPTIONS, app.url("/api/v1/server"))
        .header("origin", "https://web.example")
        .header("access-control-request-method", "PUT")
        .header(
            "access-control-request-headers",
            "content-type, authorization",
        )
        .send()
        .await
        .expect("request");
    assert_eq!(preflight.status(), StatusCode::NO_CONTENT);
    let headers = preflight.headers();
    assert!(
        headers["access-control-allow-methods"]
            .to_str()
            .expect("text")
            .contains("PUT")
    );
    assert_eq!(
        headers["access-control-allow-headers"],
        "content-type, authorization"
    );

    let refused = app
        .client
        .get(app.url("/api/v1/server/ok"))
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("request");
    let (status, _, body) = error_body(refused).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"], "Origin is not allowed to call this API.");

    // No Origin header at all (mobile apps, curl): always allowed.
    assert_eq!(app.get("/api/v1/server/ok").await.status(), StatusCode::OK);
}
