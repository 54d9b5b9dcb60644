//! Avatars: upload sniffed from the bytes (not the name), the size bound, the public
//! immutable download at the versioned URL the user's `image` points at (only there: the
//! unversioned and stale URLs are `no-cache`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::spawn_app;

/// A 1 × 1 PNG's signature and header (no pixels are ever decoded).
const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R', 0, 0, 0,
    1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1F, 0x15, 0xC4, 0x89,
];
/// A 2 × 2 JPEG's start: SOI, JFIF, a baseline frame header.
const JPEG: &[u8] = &[
    0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0,
    0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0x02, 0x00, 0x02, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1,
    0xFF, 0xD9,
];
const GIF: &[u8] = b"GIF89a\x01\x00\x01\x00\x80\x00\x00";

/// [`PNG`] declaring `width` × `height` pixels in its header.
fn png_declaring(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = PNG.to_vec();
    bytes[16..20].copy_from_slice(&width.to_be_bytes());
    bytes[20..24].copy_from_slice(&height.to_be_bytes());
    bytes
}

/// [`JPEG`] declaring `width` × `height` pixels in its frame header.
fn jpeg_declaring(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = JPEG.to_vec();
    bytes[25..27].copy_from_slice(&height.to_be_bytes());
    bytes[27..29].copy_from_slice(&width.to_be_bytes());
    bytes
}

#[tokio::test]
async fn an_uploaded_avatar_is_served_publicly_at_the_users_image_url() {
    let app = spawn_app().await;
    let user = app.sign_up("avatar@example.com").await;
    let body = json!({ "data": STANDARD.encode(PNG) });
    let (status, uploaded) = app
        .call(Method::POST, "/api/v1/users/avatar", &user, Some(&body))
        .await;
    assert_eq!(status, StatusCode::OK);
    let url = uploaded["url"].as_str().expect("url").to_owned();
    assert!(
        url.starts_with(&format!("{}/api/v1/users/{}/avatar?v=", app.base, user.id)),
        "{url}"
    );

    let session = app.session(&user.token).await;
    assert_eq!(session["user"]["image"], url.as_str());

    let image = app.client.get(&url).send().await.expect("request");
    assert_eq!(image.status(), StatusCode::OK);
    assert_eq!(image.headers()["content-type"], "image/png");
    assert_eq!(
        image.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(image.bytes().await.expect("bytes").as_ref(), PNG);

    // A new avatar gets a new URL; the old one no longer promises its bytes forever.
    let body = json!({ "data": format!("data:image/jpeg;base64,{}", STANDARD.encode(JPEG)) });
    let (status, replaced) = app
        .call(Method::POST, "/api/v1/users/avatar", &user, Some(&body))
        .await;
    assert_eq!(status, StatusCode::OK);
    let new_url = replaced["url"].as_str().expect("url");
    assert_ne!(new_url, url);
    let image = app.client.get(new_url).send().await.expect("request");
    assert_eq!(image.headers()["content-type"], "image/jpeg");
    assert_eq!(image.bytes().await.expect("bytes").as_ref(), JPEG);
    let stale = app.client.get(&url).send().await.expect("request");
    assert_eq!(stale.headers()["cache-control"], "no-cache");
    // Without a version the URL's answer changes with the avatar: never cached for good.
    let unversioned = app.get(&format!("/api/v1/users/{}/avatar", user.id)).await;
    assert_eq!(unversioned.status(), StatusCode::OK);
    assert_eq!(unversioned.headers()["cache-control"], "no-cache");
    assert_eq!(unversioned.bytes().await.expect("bytes").as_ref(), JPEG);
    let current = app.client.get(new_url).send().await.expect("request");
    assert_eq!(
        current.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
}

#[tokio::test]
async fn the_type_comes_from_the_bytes_and_the_size_is_bounded() {
    let app = spawn_app().await;
    let user = app.sign_up("sniff@example.com").await;
    let mut oversize = PNG.to_vec();
    oversize.resize(256 * 1024 + 1, 0);
    let mut largest = PNG.to_vec();
    largest.resize(256 * 1024, 0);
    for (data, message) in [
        (
            format!("data:image/png;base64,{}", STANDARD.encode(GIF)),
            "Avatar must be a JPEG, PNG or WebP image.",
        ),
        (
            STANDARD.encode(b"just some text"),
            "Avatar must be a JPEG, PNG or WebP image.",
        ),
        (STANDARD.encode(&oversize), "Avatar must be at most 256 KB."),
        (
            STANDARD.encode(png_declaring(60_000, 60_000)),
            "Avatar must be at most 4096 × 4096 pixels.",
        ),
        (
            STANDARD.encode(png_declaring(4_097, 16)),
            "Avatar must be at most 4096 × 4096 pixels.",
        ),
        (
            STANDARD.encode(jpeg_declaring(60_000, 60_000)),
            "Avatar must be at most 4096 × 4096 pixels.",
        ),
        (
            STANDARD.encode(&PNG[..14]),
            "Avatar image is damaged: its size cannot be read.",
        ),
        (String::new(), "Avatar data is empty."),
        ("***".to_owned(), "Avatar data must be base64."),
    ] {
        let (status, error) = app
            .call(
                Method::POST,
                "/api/v1/users/avatar",
                &user,
                Some(&json!({ "data": data })),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(error["error"], message);
        assert!(error["requestId"].is_string());
    }
    let (status, _) = app
        .call(
            Method::POST,
            "/api/v1/users/avatar",
            &user,
            Some(&json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let missing = app.get(&format!("/api/v1/users/{}/avatar", user.id)).await;
    assert_eq!(
        missing.status(),
        StatusCode::NOT_FOUND,
        "nothing was stored"
    );

    let (status, _) = app
        .call(
            Method::POST,
            "/api/v1/users/avatar",
            &user,
            Some(&json!({ "data": STANDARD.encode(&largest) })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "exactly 256 KiB fits");
}

#[tokio::test]
async fn unknown_users_have_no_avatar_and_uploads_need_a_session() {
    let app = spawn_app().await;
    let response = app.get("/api/v1/users/nobody/avatar").await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body: serde_json::Value = response.json().await.expect("JSON");
    assert_eq!(body["error"], "Avatar not found...");
    let anonymous = app
        .client
        .post(app.url("/api/v1/users/avatar"))
        .json(&json!({ "data": STANDARD.encode(PNG) }))
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}
