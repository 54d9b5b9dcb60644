//! B's gateway to a connected server: requests go to A's `/api/v1/*` with the member token
//! (never B's own credentials), A's status, body and `Content-Type` come back unchanged, and
//! the shadow's role on A decides what goes through. Unknown connections, paths that would
//! leave `/api/v1/`, oversized bodies, a peer that hangs or redirects, and a loopback peer with
//! the private-host guard on are all stopped at B — proven by a stand-in peer that counts what
//! reaches it.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::federation::{
    Behaviour, Federation, Upstream, connection_to, gateway_as, home_call, preview, raw_get,
    remove_member,
};
use crate::helpers::{TestApp, event_body, spawn_app_sharing_database_with};

/// Both servers, with B's user connected to A through a stand-in peer that relays to A: the
/// servers, the peer and the connection id.
async fn connected_through_peer() -> (Federation, Upstream, String) {
    let fed = Federation::start().await;
    let peer = Upstream::relaying_to(&fed.origin.base).await;
    let connection = fed.connect_ok(&peer.base, &fed.invite.clone()).await;
    (fed, peer, connection)
}

/// `GET path` on A with the owner's session: the status, `Content-Type` and body.
async fn direct(
    app: &TestApp,
    fed: &Federation,
    path: &str,
) -> (StatusCode, Option<String>, Value) {
    let response = app
        .as_user(Method::GET, path, &fed.owner)
        .send()
        .await
        .expect("request");
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().expect("text").to_owned());
    (
        status,
        content_type,
        response.json().await.unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn a_viewer_reads_through_the_gateway_and_its_writes_get_a_403() {
    let (fed, connection) = Federation::connected().await;
    let event = fed
        .origin
        .create_event(&fed.owner, &event_body(&[&fed.calendar_id], "Standup", 9))
        .await;

    let relayed = fed
        .gateway(Method::GET, &connection, "api/v1/calendars", None)
        .await;
    assert_eq!(relayed.status, StatusCode::OK, "{}", relayed.text);
    let (_, content_type, _) = direct(&fed.origin, &fed, "/api/v1/calendars").await;
    assert_eq!(relayed.content_type, content_type, "A's Content-Type");
    let calendars = relayed.json();
    let listed = calendars.as_array().expect("calendars");
    assert_eq!(listed.len(), 1, "{calendars}");
    assert_eq!(listed[0]["id"], fed.calendar_id.as_str());
    assert_eq!(listed[0]["role"], "viewer");

    let relayed = fed
        .gateway(Method::GET, &connection, "api/v1/events", None)
        .await;
    assert_eq!(relayed.status, StatusCode::OK, "{}", relayed.text);
    let ids: Vec<Value> = relayed.json()["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    assert_eq!(ids, [event["id"].clone()]);

    // Not only JSON: A's calendar export comes back with A's Content-Type.
    let export = format!("api/v1/calendars/{}/export", fed.calendar_id);
    let relayed = fed.gateway(Method::GET, &connection, &export, None).await;
    let response = fed
        .origin
        .as_user(Method::GET, &format!("/{export}"), &fed.owner)
        .send()
        .await
        .expect("request");
    assert_eq!(relayed.status, response.status(), "{}", relayed.text);
    assert_eq!(
        relayed.content_type.as_deref(),
        response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().expect("text")),
    );
    assert!(relayed.text.contains("BEGIN:VCALENDAR"), "{}", relayed.text);

    // The query string goes along.
    let relayed = fed
        .gateway(
            Method::GET,
            &connection,
            "api/v1/events?since=not-a-time",
            None,
        )
        .await;
    let (status, _, body) = direct(&fed.origin, &fed, "/api/v1/events?since=not-a-time").await;
    assert_eq!(relayed.status, status, "{}", relayed.text);
    assert_eq!(relayed.json()["error"], body["error"]);

    let write = event_body(&[&fed.calendar_id], "Not mine to add", 11);
    let relayed = fed
        .gateway(Method::POST, &connection, "api/v1/events", Some(&write))
        .await;
    assert_eq!(relayed.status, StatusCode::FORBIDDEN, "{}", relayed.text);
    let stranger = fed.origin.sign_up("stranger@origin.example").await;
    let direct_write = fed
        .origin
        .event_request(Method::POST, &stranger, &write)
        .await;
    assert_eq!(direct_write.status(), StatusCode::FORBIDDEN);
    let direct_body: Value = direct_write.json().await.expect("JSON");
    assert_eq!(
        relayed.json()["error"],
        direct_body["error"],
        "A's 403 body"
    );
    assert_eq!(
        fed.origin.read_events(&fed.owner, "").await["events"]
            .as_array()
            .expect("events")
            .len(),
        1
    );
}

#[tokio::test]
async fn an_editor_writes_through_the_gateway_and_a_removed_shadow_loses_access() {
    let (fed, connection) = Federation::connected().await;
    let shadow = fed.shadow_id().await;
    assert_eq!(
        fed.origin
            .set_role(&fed.owner, &fed.calendar_id, &shadow, "editor")
            .await
            .status(),
        StatusCode::OK
    );
    let write = event_body(&[&fed.calendar_id], "From afar", 10);
    let write_again = event_body(&[&fed.calendar_id], "From afar again", 11);
    let relayed = fed
        .gateway(Method::POST, &connection, "api/v1/events", Some(&write))
        .await;
    assert_eq!(relayed.status, StatusCode::CREATED, "{}", relayed.text);
    assert_eq!(relayed.json()["id"], write["id"]);
    let seen = fed.origin.read_events(&fed.owner, "").await;
    assert!(
        seen["events"]
            .as_array()
            .expect("events")
            .iter()
            .any(|e| e["id"] == write["id"]),
        "A has the event: {seen}"
    );
    let relayed = fed
        .gateway(Method::DELETE, &connection, "api/v1/events", Some(&write))
        .await;
    assert_eq!(relayed.status, StatusCode::OK, "{}", relayed.text);
    assert_eq!(relayed.json()["removed"], true, "{}", relayed.text);
    let relayed = fed
        .gateway(
            Method::POST,
            &connection,
            "api/v1/events",
            Some(&write_again),
        )
        .await;
    assert_eq!(relayed.status, StatusCode::CREATED, "{}", relayed.text);
    // The event on B's side of things: it was not copied into B.
    let (_, home_events) =
        home_call(&fed.home, Method::GET, "/api/v1/events", &fed.guest, None).await;
    assert!(
        !home_events
            .to_string()
            .contains(write_again["id"].as_str().expect("id"))
    );

    assert_eq!(
        remove_member(&fed.origin, &fed.owner, &fed.calendar_id, &shadow).await,
        StatusCode::OK
    );
    for rest in ["api/v1/calendars", "api/v1/events"] {
        let relayed = fed.gateway(Method::GET, &connection, rest, None).await;
        assert_eq!(
            relayed.status,
            StatusCode::UNAUTHORIZED,
            "{rest}: A's 401 relayed: {}",
            relayed.text
        );
    }
    let relayed = fed
        .gateway(
            Method::POST,
            &connection,
            "api/v1/events",
            Some(&event_body(&[&fed.calendar_id], "Too late", 12)),
        )
        .await;
    assert_eq!(relayed.status, StatusCode::UNAUTHORIZED, "{}", relayed.text);
}

#[tokio::test]
async fn an_unknown_or_someone_elses_connection_is_not_found() {
    let (fed, connection) = Federation::connected().await;
    let other = fed.home.sign_up("other@home.example").await;
    for (user, id) in [
        (&other, connection.as_str()),
        (&fed.guest, "00000000-0000-0000-0000-000000000000"),
        (&fed.guest, "not-a-connection"),
    ] {
        let relayed = gateway_as(&fed.home, user, Method::GET, id, "api/v1/calendars", None).await;
        assert_eq!(
            relayed.status,
            StatusCode::NOT_FOUND,
            "{id}: {}",
            relayed.text
        );
        assert_eq!(relayed.json()["error"], "Federated connection not found.");
    }
    let anonymous = fed
        .home
        .get(&format!(
            "/api/v1/federation/s/{connection}/api/v1/calendars"
        ))
        .await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn paths_that_leave_api_v1_are_refused_and_never_forwarded() {
    let (fed, peer, connection) = connected_through_peer().await;
    let before = peer.count();
    let escapes = [
        "api/v1/../auth/get-session",
        "api/v1/%2e%2e/auth/get-session",
        "api/v1/%2E%2E/auth/get-session",
        "api/v1/.%2e/auth/get-session",
        "api/v1/..%2Fauth/get-session",
        "api/v1%2F..%2Fauth/get-session",
        "api/v1//evil.example/x",
        "api/v1/%5C..%5Cauth/get-session",
        "api/v1/..%5Cauth/get-session",
        "api/v1/%2F%2Fevil.example",
        "api/v1/calendars/%2e%2e/%2e%2e/%2e%2e/auth/get-session",
    ];
    for rest in escapes {
        // Sent byte for byte: an HTTP client would resolve the dot segments first.
        let (status, text) = raw_get(
            &fed.home,
            &format!("/api/v1/federation/s/{connection}/{rest}"),
            &fed.guest.token,
        )
        .await;
        assert_eq!(status, 400, "{rest}: {text}");
        assert!(!text.contains("mt1_"));
    }
    for rest in [
        "api/auth/get-session",
        "api/stream",
        "api/v2/calendars",
        "invite/x",
        "api/v1",
        "",
    ] {
        let relayed = gateway_as(&fed.home, &fed.guest, Method::GET, &connection, rest, None).await;
        assert!(
            matches!(
                relayed.status,
                StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND
            ),
            "{rest}: {} {}",
            relayed.status,
            relayed.text
        );
    }
    assert_eq!(
        peer.count(),
        before,
        "nothing was forwarded: {:?}",
        &peer.seen()[before..]
    );
}

#[tokio::test]
async fn the_peer_gets_the_member_token_and_never_bs_credentials() {
    let (fed, peer, connection) = connected_through_peer().await;
    let before = peer.count();
    let response = fed
        .home
        .client
        .get(fed.home.url(&format!(
            "/api/v1/federation/s/{connection}/api/v1/events?since=2026-01-01T00:00:00.000Z"
        )))
        .bearer_auth(&fed.guest.token)
        .header(
            "cookie",
            format!("better-auth.session_token={}", fed.guest.signed),
        )
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    let seen = peer.seen();
    assert_eq!(seen.len(), before + 1, "one request forwarded: {seen:?}");
    let forwarded = &seen[before];
    assert_eq!(forwarded.method, "GET");
    assert_eq!(
        forwarded.target,
        "/api/v1/events?since=2026-01-01T00:00:00.000Z"
    );
    assert_eq!(forwarded.cookie, None, "B's cookie stays home");
    let authorization = forwarded.authorization.as_deref().expect("a bearer");
    let token = authorization
        .strip_prefix("Bearer ")
        .expect("a bearer token");
    assert!(token.starts_with("mt1_"), "the member token");
    assert!(!authorization.contains(&fed.guest.token));
    assert!(!authorization.contains(&fed.guest.signed));
    // Also on the connect handshake: nothing of B's session went to the peer.
    for request in &seen {
        let sent = format!("{:?} {:?}", request.authorization, request.cookie);
        assert!(!sent.contains(&fed.guest.token), "{request:?}");
    }
}

#[tokio::test]
async fn a_body_over_one_mebibyte_is_refused_with_413_and_not_forwarded() {
    let (fed, peer, connection) = connected_through_peer().await;
    let before = peer.count();
    let mut big = event_body(&[&fed.calendar_id], "Big", 9);
    big["description"] = json!("x".repeat(1024 * 1024 + 1));
    let relayed = fed
        .gateway(Method::POST, &connection, "api/v1/events", Some(&big))
        .await;
    assert_eq!(
        relayed.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        relayed.text
    );
    assert!(
        peer.seen()[before..]
            .iter()
            .all(|r| r.body_len < 1024 * 1024),
        "the body was not forwarded"
    );
}

#[tokio::test]
async fn a_peer_that_never_answers_gives_502_within_the_timeout() {
    let (fed, peer, connection) = connected_through_peer().await;
    peer.set(Behaviour::Hang);
    let started = Instant::now();
    let relayed = fed
        .gateway(Method::GET, &connection, "api/v1/calendars", None)
        .await;
    let took = started.elapsed();
    assert_eq!(relayed.status, StatusCode::BAD_GATEWAY, "{}", relayed.text);
    let body = relayed.json();
    assert_eq!(body["error"], "FederatedServerUnreachable");
    assert_eq!(body["server"], peer.base.as_str());
    assert!(body["message"].is_string(), "{body}");
    // test.toml: request_timeout_ms = 3000.
    assert!(
        took >= Duration::from_millis(2500) && took < Duration::from_secs(8),
        "answered after {took:?}"
    );
}

#[tokio::test]
async fn a_peer_that_went_away_gives_502() {
    let (fed, peer, connection) = connected_through_peer().await;
    let server = peer.base.clone();
    drop(peer);
    let relayed = fed
        .gateway(Method::GET, &connection, "api/v1/calendars", None)
        .await;
    assert_eq!(relayed.status, StatusCode::BAD_GATEWAY, "{}", relayed.text);
    assert_eq!(relayed.json()["error"], "FederatedServerUnreachable");
    assert_eq!(relayed.json()["server"], server.as_str());
}

#[tokio::test]
async fn a_redirect_from_the_peer_is_relayed_and_never_followed() {
    let (fed, peer, connection) = connected_through_peer().await;
    let target = Upstream::start(Behaviour::Answer).await;
    peer.set(Behaviour::Redirect(format!(
        "{}/api/v1/calendars",
        target.base
    )));
    let response = crate::helpers::no_redirects()
        .get(fed.home.url(&format!(
            "/api/v1/federation/s/{connection}/api/v1/calendars"
        )))
        .bearer_auth(&fed.guest.token)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::FOUND);
    let body = response.text().await.expect("body");
    assert!(!body.contains("mt1_"));
    assert_eq!(target.count(), 0, "the redirect target was never asked");
}

#[tokio::test]
async fn with_the_private_host_guard_on_a_loopback_peer_is_never_reached() {
    let (fed, peer, connection) = connected_through_peer().await;
    let guarded = spawn_app_sharing_database_with(&fed.home, |s| {
        s.federation.allow_private_hosts = false;
    })
    .await;
    let before = peer.count();
    assert_eq!(
        connection_to(&guarded, &fed.guest, &peer.base)
            .await
            .as_deref(),
        Some(connection.as_str()),
        "the guarded server shares B's database"
    );
    let relayed = gateway_as(
        &guarded,
        &fed.guest,
        Method::GET,
        &connection,
        "api/v1/calendars",
        None,
    )
    .await;
    assert_eq!(relayed.status, StatusCode::BAD_GATEWAY, "{}", relayed.text);
    assert_eq!(relayed.json()["error"], "FederatedServerUnreachable");

    let (status, body) = preview(&guarded, &fed.guest, &peer.base, &fed.invite).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "preview: {body}");
    let (status, body) = home_call(
        &guarded,
        Method::POST,
        "/api/v1/federation/connect",
        &fed.guest,
        Some(&json!({ "server": peer.base, "token": fed.invite })),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "connect: {body}");
    for loopback in [
        "http://localhost:9",
        "http://[::1]:9",
        "http://127.1.2.3:9",
        "http://0.0.0.0:9",
    ] {
        let (status, body) = preview(&guarded, &fed.guest, loopback, &fed.invite).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{loopback}: {body}");
    }
    assert_eq!(
        peer.count(),
        before,
        "nothing reached the peer: {:?}",
        &peer.seen()[before..]
    );
}

/// GET through the gateway with B's guest: status, headers and the body as text.
async fn through_gateway(
    fed: &Federation,
    connection: &str,
) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let response = fed
        .home
        .client
        .get(fed.home.url(&format!(
            "/api/v1/federation/s/{connection}/api/v1/calendars"
        )))
        .bearer_auth(&fed.guest.token)
        .send()
        .await
        .expect("request");
    let status = response.status();
    let headers = response.headers().clone();
    (status, headers, response.text().await.expect("body"))
}

#[tokio::test]
async fn only_the_apis_own_content_types_are_relayed_and_always_sandboxed() {
    let (fed, peer, connection) = connected_through_peer().await;
    let script = "<script>alert(document.cookie)</script>";
    for refused in [
        Some("text/html"),
        Some("text/html; charset=utf-8"),
        Some("application/javascript"),
        Some("image/svg+xml"),
        Some("application/xml"),
        Some("multipart/form-data; boundary=x"),
        Some("text/plainx"),
        Some(""),
        None,
    ] {
        peer.set(Behaviour::Typed(
            refused.map(str::to_owned),
            script.to_owned(),
        ));
        let (status, headers, body) = through_gateway(&fed, &connection).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{refused:?}: {body}");
        let body: Value = serde_json::from_str(&body).expect("the usual error body");
        assert_eq!(body["error"], "FederatedAnswerRefused", "{refused:?}");
        assert!(body["requestId"].is_string());
        assert!(!body.to_string().contains("<script>"));
        assert_eq!(headers["content-type"], "application/json");
        assert_eq!(headers["x-content-type-options"], "nosniff");
    }
    for relayed in [
        "application/json",
        "application/json; charset=utf-8",
        "text/plain; charset=utf-8",
        "text/calendar",
        "image/png",
        "image/jpeg",
        "image/webp",
    ] {
        peer.set(Behaviour::Typed(
            Some(relayed.to_owned()),
            script.to_owned(),
        ));
        let (status, headers, body) = through_gateway(&fed, &connection).await;
        assert_eq!(status, StatusCode::OK, "{relayed}");
        assert_eq!(body, script, "{relayed}: relayed unchanged");
        assert_eq!(headers["content-type"], relayed);
        assert_eq!(
            headers["content-security-policy"], "sandbox; frame-ancestors 'none'",
            "{relayed}"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff");
    }
    // A relayed JSON answer of the real origin is sandboxed too.
    peer.set(Behaviour::Relay(fed.origin.base.clone()));
    let (status, headers, _) = through_gateway(&fed, &connection).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers["content-security-policy"],
        "sandbox; frame-ancestors 'none'"
    );
}
