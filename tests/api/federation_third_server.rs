//! A member token is bound to its shadow: taken from B's traffic (here, from a stand-in peer
//! that sees it), it cannot make another home server C the owner of B's shadow on A, it is
//! nothing on C, and on A it acts only as that shadow, with that shadow's rights.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::helpers::event_body;
use crate::helpers::federation::{
    Federation, Upstream, accept, bearer_call, connections, federated_app, invite_to, profile,
};

/// The member token B sends to A for its user (read off the wire between them).
fn token_seen_by(peer: &Upstream) -> String {
    peer.seen()
        .iter()
        .rev()
        .find_map(|r| {
            r.authorization
                .as_deref()?
                .strip_prefix("Bearer mt1_")
                .map(|t| format!("mt1_{t}"))
        })
        .expect("B sent a member token")
}

#[tokio::test]
async fn a_stolen_member_token_is_bound_to_its_shadow_only() {
    let fed = Federation::start().await;
    let peer = Upstream::relaying_to(&fed.origin.base).await;
    let connection = fed.connect_ok(&peer.base, &fed.invite.clone()).await;
    let shadow = fed.shadow_id().await;
    let relayed = fed
        .gateway(Method::GET, &connection, "api/v1/calendars", None)
        .await;
    assert_eq!(relayed.status, StatusCode::OK);
    let stolen = token_seen_by(&peer);

    // A third server C and its own user, connected to the same invite: another shadow.
    let third = federated_app().await;
    let carol = third.sign_up("carol@third.example").await;
    let (status, body) = crate::helpers::federation::home_call(
        &third,
        Method::POST,
        "/api/v1/federation/connect",
        &carol,
        Some(&serde_json::json!({ "server": fed.origin.base, "token": fed.invite })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let carols = connections(&third, &carol).await;
    assert_ne!(
        carols[0]["remoteUserID"],
        shadow.as_str(),
        "C's user has a shadow of its own"
    );

    // C presenting the stolen token on accept, as a home server proving "its" shadow.
    let private = fed.origin.create_calendar(&fed.owner, "Owner only").await;
    let private_id = private["id"].as_str().expect("id");
    let other_invite = invite_to(&fed.origin, &fed.owner, private_id).await;
    let (status, body) = accept(
        &fed.origin,
        &other_invite,
        &profile("Carol", "carol@third.example", &third.base),
        Some(&stolen),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(
        body["error"],
        "The existing federation credential is invalid."
    );

    // On C the token is nothing.
    let (status, _) = bearer_call(&third, Method::GET, "/api/v1/calendars", &stolen, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // On A it is B's shadow and nothing more: a viewer of the shared calendar only.
    let (status, calendars) =
        bearer_call(&fed.origin, Method::GET, "/api/v1/calendars", &stolen, None).await;
    assert_eq!(status, StatusCode::OK, "{calendars}");
    let ids: Vec<&Value> = calendars
        .as_array()
        .expect("calendars")
        .iter()
        .map(|c| &c["id"])
        .collect();
    assert_eq!(ids, [&Value::from(fed.calendar_id.as_str())]);
    let (status, _) = bearer_call(
        &fed.origin,
        Method::GET,
        &format!("/api/v1/calendars/{private_id}"),
        &stolen,
        None,
    )
    .await;
    assert!(
        matches!(status, StatusCode::FORBIDDEN | StatusCode::NOT_FOUND),
        "another calendar of A: {status}"
    );
    for calendar in [fed.calendar_id.as_str(), private_id] {
        let (status, body) = bearer_call(
            &fed.origin,
            Method::POST,
            "/api/v1/events",
            &stolen,
            Some(&event_body(&[calendar], "Planted", 9)),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{calendar}: {body}");
    }
    let (status, members) = fed
        .origin
        .call(
            Method::GET,
            &format!("/api/v1/calendars/{private_id}/members"),
            &fed.owner,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        members.as_array().expect("members").len(),
        1,
        "nobody joined the owner's other calendar: {members}"
    );
}
