//! Federation on the home side: a user of B previews an invite of A through B, connects to
//! it (B runs the accept handshake and keeps the member token sealed, never showing it), sees
//! the connection listed, connects to a second invite of A on the same connection, and
//! disconnects. Malformed origins, B's own origin, unreachable servers, bad invites, peers
//! whose answers are no accept answers and peers that redirect are refused; what a refusal
//! must not reach (a peer, a redirect's target) counts what it gets.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::event_body;
use crate::helpers::federation::{
    Behaviour, Federation, Upstream, columns_containing, connections, gateway_as, home_call,
    invite_to, preview,
};

/// `body` without its `requestId` (each server names its own requests).
fn without_request_id(mut body: Value) -> Value {
    if let Some(object) = body.as_object_mut() {
        object.remove("requestId");
    }
    body
}

/// A port on 127.0.0.1 nobody listens on.
async fn closed_origin() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    drop(listener);
    format!("http://{addr}")
}

/// Origins that are not bare http(s) origins, made from `origin`.
fn not_bare_origins(origin: &str) -> Vec<String> {
    let host = origin.trim_start_matches("http://");
    vec![
        format!("{origin}/api"),
        format!("{origin}?x=1"),
        format!("{origin}#top"),
        format!("http://ruth:secret@{host}"),
        format!("ftp://{host}"),
        host.to_owned(),
        "not an origin".to_owned(),
        String::new(),
    ]
}

/// B lists no connection and A's calendar has its owner only.
async fn nobody_joined(fed: &Federation) {
    assert!(connections(&fed.home, &fed.guest).await.is_empty());
    let (status, members) = fed
        .origin
        .call(
            Method::GET,
            &format!("/api/v1/calendars/{}/members", fed.calendar_id),
            &fed.owner,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(members.as_array().expect("members").len(), 1, "{members}");
}

#[tokio::test]
async fn preview_relays_the_origins_public_invite_preview() {
    let fed = Federation::start().await;
    fed.origin
        .create_event(&fed.owner, &event_body(&[&fed.calendar_id], "Standup", 9))
        .await;
    let direct = fed
        .origin
        .get(&format!("/api/v1/calendars/tokens/{}", fed.invite))
        .await;
    assert_eq!(direct.status(), StatusCode::OK);
    let direct: Value = direct.json().await.expect("JSON");
    let (status, relayed) = preview(&fed.home, &fed.guest, &fed.origin.base, &fed.invite).await;
    assert_eq!(status, StatusCode::OK, "{relayed}");
    assert_eq!(relayed, direct);
    assert_eq!(relayed["id"], fed.calendar_id.as_str());

    let unknown = uuid::Uuid::new_v4().to_string();
    let direct = fed
        .origin
        .get(&format!("/api/v1/calendars/tokens/{unknown}"))
        .await;
    let direct_status = direct.status();
    let direct: Value = direct.json().await.expect("JSON");
    let (status, relayed) = preview(&fed.home, &fed.guest, &fed.origin.base, &unknown).await;
    assert_eq!(status, direct_status, "{relayed}");
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(without_request_id(relayed), without_request_id(direct));

    let (status, body) = preview(&fed.home, &fed.guest, &closed_origin().await, &fed.invite).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "unreachable: {body}");

    let target = Upstream::start(Behaviour::Answer).await;
    let redirecting = Upstream::start(Behaviour::Redirect(format!("{}/x", target.base))).await;
    let (status, body) = preview(&fed.home, &fed.guest, &redirecting.base, &fed.invite).await;
    assert_ne!(status, StatusCode::OK, "{body}");
    assert_eq!(redirecting.count(), 1);
    assert_eq!(target.count(), 0, "the redirect was not followed");
}

#[tokio::test]
async fn preview_refuses_a_server_that_is_no_bare_origin_and_a_malformed_token() {
    let fed = Federation::start().await;
    let peer = Upstream::relaying_to(&fed.origin.base).await;
    for server in not_bare_origins(&peer.base) {
        let (status, body) = preview(&fed.home, &fed.guest, &server, &fed.invite).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "server {server:?}: {body}");
    }
    for token in [
        "short",
        "0123456789ABCDEF0123",
        "../../api/v1/calendars",
        "0123456789abcdef/../../x",
        &"a".repeat(65),
        "",
    ] {
        let (status, body) = preview(&fed.home, &fed.guest, &peer.base, token).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "token {token:?}: {body}");
    }
    assert_eq!(
        peer.count(),
        0,
        "nothing reached the peer: {:?}",
        peer.seen()
    );

    let anonymous = fed
        .home
        .get(&format!(
            "/api/v1/federation/preview?server={}&token={}",
            peer.base, fed.invite
        ))
        .await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(peer.count(), 0);
}

#[tokio::test]
async fn connect_stores_a_connection_and_no_token_reaches_the_client_or_the_disk() {
    let fed = Federation::start().await;
    let (status, body) = fed.connect(&fed.origin.base, &fed.invite).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["server"], fed.origin.base.as_str());
    assert_eq!(body["calendar"]["id"], fed.calendar_id.as_str());
    assert_eq!(body["calendar"]["name"], "Shared far");
    assert!(body.get("memberToken").is_none(), "{body}");

    let list = connections(&fed.home, &fed.guest).await;
    assert_eq!(list.len(), 1, "{list:?}");
    let connection = &list[0];
    assert_eq!(connection["server"], fed.origin.base.as_str());
    assert_eq!(
        connection["label"],
        fed.origin.base.trim_start_matches("http://")
    );
    assert!(connection["id"].as_str().is_some_and(|id| !id.is_empty()));
    let remote = connection["remoteUserID"].as_str().expect("remoteUserID");
    assert!(remote.starts_with("fed_"), "{remote}");
    let mut keys: Vec<&String> = connection.as_object().expect("object").keys().collect();
    keys.sort();
    assert_eq!(keys, ["id", "label", "remoteUserID", "server"]);

    let (status, members) = fed
        .origin
        .call(
            Method::GET,
            &format!("/api/v1/calendars/{}/members", fed.calendar_id),
            &fed.owner,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let shadow = members
        .as_array()
        .expect("members")
        .iter()
        .find(|m| m["id"] == remote)
        .unwrap_or_else(|| panic!("the shadow is a member on A: {members}"));
    assert_eq!(shadow["role"], "viewer");
    assert_eq!(shadow["name"], "Test User");

    // B keeps the token sealed: no column of its database holds a member token.
    assert_eq!(columns_containing(&fed.home, "mt1_").await, vec![]);
    assert!(
        !columns_containing(&fed.home, &fed.origin.base)
            .await
            .is_empty(),
        "the connection is stored"
    );
    // The guest's other B answers show no token either.
    for path in [
        "/api/v1/calendars",
        "/api/v1/events",
        "/api/v1/users/connections",
    ] {
        home_call(&fed.home, Method::GET, path, &fed.guest, None).await;
    }
}

#[tokio::test]
async fn connect_refuses_its_own_origin_and_origins_that_are_not_bare() {
    let fed = Federation::start().await;
    let own_invite = {
        let calendar = fed.home.create_calendar(&fed.guest, "Home only").await;
        invite_to(&fed.home, &fed.guest, calendar["id"].as_str().expect("id")).await
    };
    let (status, body) = fed.connect(&fed.home.base, &own_invite).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        body["error"],
        "That invite belongs to this server — join it directly."
    );

    let peer = Upstream::relaying_to(&fed.origin.base).await;
    for server in not_bare_origins(&peer.base) {
        let (status, body) = fed.connect(&server, &fed.invite).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "server {server:?}: {body}");
    }
    assert_eq!(
        peer.count(),
        0,
        "nothing reached the peer: {:?}",
        peer.seen()
    );

    let anonymous = fed
        .home
        .post_json(
            "/api/v1/federation/connect",
            &json!({ "server": fed.origin.base, "token": fed.invite }),
        )
        .await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    nobody_joined(&fed).await;
}

#[tokio::test]
async fn connect_refuses_unreachable_servers_and_invites_the_origin_refuses() {
    let fed = Federation::start().await;
    let (status, body) = fed.connect(&closed_origin().await, &fed.invite).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "unreachable: {body}");

    let (status, body) = fed
        .connect(&fed.origin.base, &uuid::Uuid::new_v4().to_string())
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "unknown invite: {body}");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("Invite not found")),
        "A's message: {body}"
    );
    let (status, body) = fed.connect(&fed.origin.base, "not-a-token").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "malformed invite: {body}");

    // A peer whose answers are no accept answers, and one that redirects elsewhere.
    let stranger = Upstream::start(Behaviour::Answer).await;
    let (status, body) = fed.connect(&stranger.base, &fed.invite).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "no member token: {body}");
    let before = stranger.count();
    let redirecting =
        Upstream::start(Behaviour::Redirect(format!("{}/elsewhere", stranger.base))).await;
    let (status, body) = fed.connect(&redirecting.base, &fed.invite).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "redirected: {body}");
    assert!(redirecting.count() > 0, "the redirecting peer was asked");
    assert_eq!(stranger.count(), before, "the redirect was not followed");

    nobody_joined(&fed).await;
}

#[tokio::test]
async fn connecting_to_a_second_invite_of_the_same_server_reuses_the_connection() {
    let fed = Federation::start().await;
    let first = fed.connect_ok(&fed.origin.base, &fed.invite).await;
    let shadow = fed.shadow_id().await;
    let second_calendar = fed.origin.create_calendar(&fed.owner, "Also shared").await;
    let second_id = second_calendar["id"].as_str().expect("id");
    let second_invite = invite_to(&fed.origin, &fed.owner, second_id).await;

    let (status, body) = fed.connect(&fed.origin.base, &second_invite).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["calendar"]["id"], second_id);
    let list = connections(&fed.home, &fed.guest).await;
    assert_eq!(list.len(), 1, "one connection: {list:?}");
    assert_eq!(list[0]["id"], first.as_str());
    assert_eq!(
        list[0]["remoteUserID"],
        shadow.as_str(),
        "the same shadow on A"
    );

    let relayed = fed
        .gateway(Method::GET, &first, "api/v1/calendars", None)
        .await;
    assert_eq!(relayed.status, StatusCode::OK, "{}", relayed.text);
    let mut ids: Vec<String> = relayed
        .json()
        .as_array()
        .expect("calendars")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_owned())
        .collect();
    ids.sort();
    let mut expected = vec![fed.calendar_id.clone(), second_id.to_owned()];
    expected.sort();
    assert_eq!(ids, expected);
    assert_eq!(columns_containing(&fed.home, "mt1_").await, vec![]);
}

#[tokio::test]
async fn disconnecting_drops_the_connection_and_its_gateway() {
    for route in ["svc", "musubi"] {
        let (fed, connection) = Federation::connected().await;
        let path = format!("/api/v1/users/connections/{route}");
        let (status, body) = home_call(
            &fed.home,
            Method::DELETE,
            &path,
            &fed.guest,
            Some(&json!({ "server": "not an origin" })),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{route}: {body}");
        assert_eq!(connections(&fed.home, &fed.guest).await.len(), 1);

        let (status, body) = home_call(
            &fed.home,
            Method::DELETE,
            &path,
            &fed.guest,
            Some(&json!({ "server": fed.origin.base })),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{route}: {body}");
        assert_eq!(body, "OK");
        assert!(
            connections(&fed.home, &fed.guest).await.is_empty(),
            "{route}"
        );
        let relayed = gateway_as(
            &fed.home,
            &fed.guest,
            Method::GET,
            &connection,
            "api/v1/calendars",
            None,
        )
        .await;
        assert_eq!(
            relayed.status,
            StatusCode::NOT_FOUND,
            "{route}: {}",
            relayed.text
        );
        assert_eq!(relayed.json()["error"], "Federated connection not found.");
    }
}
