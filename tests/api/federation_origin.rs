//! Federation on the origin side, called the way a home server calls it: accepting an invite
//! issues a member token for a shadow user who joins as a viewer (a new shadow every time,
//! unless the shadow's current token comes along), the member token works on the API and the
//! stream with the shadow's rights but is no session, rotation exchanges it exactly once, and
//! removing the shadow from the calendar revokes its tokens at once.

use chrono::{DateTime, Duration, Utc};
use entities::{invites, member_tokens, users};
use reqwest::{Method, StatusCode};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

use crate::helpers::federation::{
    accept, accept_body, accepted, bearer_call, columns_containing, federated_app,
    federated_app_with, invite_to, profile, remove_member, rotate, rotate_from,
};
use crate::helpers::{TestApp, TestUser, event_body};
use crate::support::sse::SseClient;

const HOME: &str = "https://home.example";

/// An origin server with an owner and a calendar: the server, the owner and the calendar id.
async fn origin() -> (TestApp, TestUser, String) {
    let app = federated_app().await;
    let owner = app.sign_up("owner@origin.example").await;
    let calendar = app.create_calendar(&owner, "Shared far").await;
    let id = calendar["id"].as_str().expect("id").to_owned();
    (app, owner, id)
}

/// Whether `token` has the member-token form `mt1_<base36 ms>_<64 hex>`; its issue time.
fn issued_at(token: &str) -> DateTime<Utc> {
    let rest = token
        .strip_prefix("mt1_")
        .unwrap_or_else(|| panic!("member token form: {token}"));
    let (stamp, secret) = rest.split_once('_').expect("two parts");
    assert!(
        secret.len() == 64 && secret.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')),
        "64 lowercase hex characters"
    );
    assert!(
        stamp
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase()),
        "base36 issue time"
    );
    let millis = i64::from_str_radix(stamp, 36).expect("base36 milliseconds");
    DateTime::from_timestamp_millis(millis).expect("a time")
}

fn assert_near(time: DateTime<Utc>, expected: DateTime<Utc>, what: &str) {
    assert!(
        (time - expected).num_seconds().abs() < 120,
        "{what}: {time} is not about {expected}"
    );
}

fn timestamp(value: &Value) -> DateTime<Utc> {
    value
        .as_str()
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .unwrap_or_else(|| panic!("ISO timestamp: {value}"))
        .with_timezone(&Utc)
}

/// `GET /api/v1/calendars/:id/members` as the owner: `(id, role)` pairs.
async fn member_roles(app: &TestApp, owner: &TestUser, calendar_id: &str) -> Vec<(String, String)> {
    let (status, body) = app
        .call(
            Method::GET,
            &format!("/api/v1/calendars/{calendar_id}/members"),
            owner,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body.as_array()
        .expect("members")
        .iter()
        .map(|m| {
            (
                m["id"].as_str().expect("id").to_owned(),
                m["role"].as_str().expect("role").to_owned(),
            )
        })
        .collect()
}

/// The stored shadow users of `app`.
async fn shadows(app: &TestApp) -> Vec<users::Model> {
    users::Entity::find()
        .filter(users::Column::IsExternal.eq(true))
        .all(&app.db_connection().await)
        .await
        .expect("users")
}

#[tokio::test]
async fn accepting_an_invite_issues_a_member_token_for_a_new_viewer_shadow() {
    let (app, owner, calendar_id) = origin().await;
    let invite = invite_to(&app, &owner, &calendar_id).await;
    let before = Utc::now();
    let (status, body) = accept(
        &app,
        &invite,
        &profile("Remote Ruth", "ruth@home.example", HOME),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let token = body["memberToken"].as_str().expect("memberToken");
    let issued = issued_at(token);
    assert_near(issued, before, "issue time in the token");
    assert_near(
        timestamp(&body["memberTokenExpiresAt"]),
        before + Duration::days(90),
        "expiry",
    );
    let user_id = body["userID"].as_str().expect("userID");
    let uuid = user_id.strip_prefix("fed_").expect("fed_ prefix");
    assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{user_id}");
    let calendar = &body["calendar"];
    assert_eq!(calendar["id"], calendar_id.as_str());
    assert_eq!(calendar["creatorID"], owner.id.as_str());
    assert_eq!(calendar["name"], "Shared far");
    assert_eq!(calendar["color"], "#7A8BA3");
    assert_eq!(calendar["isDefault"], false);
    timestamp(&calendar["createdAt"]);
    timestamp(&calendar["updatedAt"]);

    assert!(
        member_roles(&app, &owner, &calendar_id)
            .await
            .contains(&(user_id.to_owned(), "viewer".to_owned())),
        "the shadow joined as a viewer"
    );
    let shadow = shadows(&app).await;
    assert_eq!(shadow.len(), 1);
    assert_eq!(shadow[0].id, user_id);
    assert_eq!(shadow[0].name, "Remote Ruth");
    assert_eq!(shadow[0].email, "ruth@home.example");
    assert_eq!(shadow[0].home_server.as_deref(), Some(HOME));
    assert!(!shadow[0].email_verified);

    // Only the token's SHA-256 is kept.
    let stored = member_tokens::Entity::find()
        .filter(member_tokens::Column::UserId.eq(user_id))
        .all(&app.db_connection().await)
        .await
        .expect("tokens");
    assert_eq!(stored.len(), 1);
    assert_eq!(
        stored[0].token_hash,
        bowline::domain::digest::sha256_hex(token)
    );
    let secret = token.rsplit('_').next().expect("secret");
    assert_eq!(columns_containing(&app, secret).await, vec![]);
}

#[tokio::test]
async fn accept_refuses_a_missing_token_a_bad_profile_and_a_home_that_is_no_bare_origin() {
    let (app, owner, calendar_id) = origin().await;
    let invite = invite_to(&app, &owner, &calendar_id).await;
    let good = profile("Remote Ruth", "ruth@home.example", HOME);

    let (status, body) = accept_body(&app, &json!({ "profile": good }), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "missing token: {body}");

    let bad_profiles = [
        json!(null),
        profile("", "ruth@home.example", HOME),
        profile("Remote Ruth", "not an address", HOME),
        json!({ "name": "Remote Ruth", "email": "ruth@home.example" }),
    ];
    for bad in bad_profiles {
        let (status, body) = accept(&app, &invite, &bad, None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "profile {bad}: {body}");
    }
    // (Ten requests in all: the accept limit per address.)
    for home in [
        "https://home.example/app",
        "https://home.example/?x=1",
        "https://ruth:secret@home.example",
        "ftp://home.example",
        "home.example",
    ] {
        let (status, body) = accept(
            &app,
            &invite,
            &profile("Remote Ruth", "ruth@home.example", home),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "homeServer {home}: {body}");
    }
    assert!(shadows(&app).await.is_empty(), "no shadow was made");
}

#[tokio::test]
async fn accept_refuses_profile_fields_over_their_limits() {
    let (app, owner, calendar_id) = origin().await;
    let invite = invite_to(&app, &owner, &calendar_id).await;
    let long_email = format!("{}@home.example", "r".repeat(320));
    let mut long_image = profile("Remote Ruth", "ruth@home.example", HOME);
    long_image["image"] = json!(format!("https://home.example/{}", "i".repeat(2048)));
    for bad in [
        profile(&"R".repeat(201), "ruth@home.example", HOME),
        profile("Remote Ruth", &long_email, HOME),
        long_image,
    ] {
        let (status, body) = accept(&app, &invite, &bad, None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    }
    let mut longest = profile(&"R".repeat(200), "ruth@home.example", HOME);
    longest["image"] = json!(format!("https://home.example/{}", "i".repeat(2000)));
    let (status, body) = accept(&app, &invite, &longest, None).await;
    assert_eq!(status, StatusCode::OK, "at the limits: {body}");
    assert_eq!(shadows(&app).await.len(), 1);
}

#[tokio::test]
async fn accept_answers_404_for_an_unknown_revoked_used_up_or_expired_invite() {
    let (app, owner, calendar_id) = origin().await;
    let ruth = profile("Remote Ruth", "ruth@home.example", HOME);
    let not_found = |status: StatusCode, body: &Value, what: &str| {
        assert_eq!(status, StatusCode::NOT_FOUND, "{what}: {body}");
        assert!(
            body["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("Invite not found")),
            "{what}: {body}"
        );
    };

    let (status, body) = accept(&app, &uuid::Uuid::new_v4().to_string(), &ruth, None).await;
    not_found(status, &body, "unknown");

    let revoked = invite_to(&app, &owner, &calendar_id).await;
    let (status, _) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/calendars/invites/{revoked}"),
            &owner,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = accept(&app, &revoked, &ruth, None).await;
    not_found(status, &body, "revoked");

    let once = app.create_invite(&owner, &calendar_id, Some(1)).await;
    let once = once["id"].as_str().expect("id");
    accepted(&app, once, "ruth@home.example", HOME).await;
    let (status, body) = accept(&app, once, &ruth, None).await;
    not_found(status, &body, "used up");

    let expired = invite_to(&app, &owner, &calendar_id).await;
    invites::ActiveModel {
        id: Set(bowline::domain::ids::InviteId::from_uuid(
            expired.parse().expect("uuid"),
        )),
        expires_at: Set(Some(Utc::now() - Duration::minutes(1))),
        ..Default::default()
    }
    .update(&app.db_connection().await)
    .await
    .expect("expire the invite");
    let (status, body) = accept(&app, &expired, &ruth, None).await;
    not_found(status, &body, "expired");

    assert_eq!(shadows(&app).await.len(), 1, "only the one accepted invite");
}

#[tokio::test]
async fn without_a_bearer_every_accept_makes_a_new_shadow() {
    let (app, owner, calendar_id) = origin().await;
    let invite = invite_to(&app, &owner, &calendar_id).await;
    let first = accepted(&app, &invite, "ruth@home.example", HOME).await;
    let second = accepted(&app, &invite, "ruth@home.example", HOME).await;
    assert_ne!(
        first.user_id, second.user_id,
        "a claimed profile proves nothing"
    );
    assert_ne!(first.token, second.token);
    for shadow in [&first, &second] {
        let (status, calendars) =
            bearer_call(&app, Method::GET, "/api/v1/calendars", &shadow.token, None).await;
        assert_eq!(status, StatusCode::OK, "{calendars}");
    }
    let members = member_roles(&app, &owner, &calendar_id).await;
    for shadow in [&first, &second] {
        assert!(members.contains(&(shadow.user_id.clone(), "viewer".to_owned())));
    }
}

#[tokio::test]
async fn the_current_token_as_bearer_keeps_the_shadow_and_exchanges_the_token() {
    let (app, owner, calendar_id) = origin().await;
    let invite = invite_to(&app, &owner, &calendar_id).await;
    let first = accepted(&app, &invite, "ruth@home.example", HOME).await;
    let second_calendar = app.create_calendar(&owner, "Also shared").await;
    let second_id = second_calendar["id"].as_str().expect("id");
    let second_invite = invite_to(&app, &owner, second_id).await;

    let (status, body) = accept(
        &app,
        &second_invite,
        &profile("Remote Ruth", "ruth@home.example", HOME),
        Some(&first.token),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["userID"], first.user_id.as_str(), "the same shadow");
    let exchanged = body["memberToken"].as_str().expect("memberToken");
    assert_ne!(exchanged, first.token);
    let (status, _) = bearer_call(&app, Method::GET, "/api/v1/calendars", &first.token, None).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "the old token stopped working"
    );
    let (status, calendars) =
        bearer_call(&app, Method::GET, "/api/v1/calendars", exchanged, None).await;
    assert_eq!(status, StatusCode::OK);
    let mut ids: Vec<&str> = calendars
        .as_array()
        .expect("calendars")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    ids.sort_unstable();
    let mut expected = vec![calendar_id.as_str(), second_id];
    expected.sort_unstable();
    assert_eq!(ids, expected);

    // A token of a shadow from another home, a made-up token and a session prove nothing.
    let elsewhere = accepted(
        &app,
        &invite,
        "ruth@elsewhere.example",
        "https://elsewhere.example",
    )
    .await;
    let stranger = app.sign_up("stranger@origin.example").await;
    for bearer in [
        elsewhere.token.as_str(),
        "mt1_0_0000",
        stranger.token.as_str(),
    ] {
        let (status, body) = accept(
            &app,
            &second_invite,
            &profile("Remote Ruth", "ruth@home.example", HOME),
            Some(bearer),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        assert_eq!(
            body["error"],
            "The existing federation credential is invalid."
        );
    }
    assert_eq!(
        shadows(&app).await.len(),
        2,
        "no shadow made by a refused accept"
    );
    let (status, _) = bearer_call(
        &app,
        Method::GET,
        "/api/v1/calendars",
        &elsewhere.token,
        None,
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a refused accept leaves the presented token alone"
    );
}

#[tokio::test]
async fn a_shadow_whose_address_is_taken_gets_a_synthetic_one_at_its_home_host() {
    let (app, owner, calendar_id) = origin().await;
    let invite = invite_to(&app, &owner, &calendar_id).await;
    let shadow = accepted(&app, &invite, "owner@origin.example", HOME).await;
    let (status, calendar) = app
        .call(
            Method::GET,
            &format!("/api/v1/calendars/{calendar_id}"),
            &owner,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{calendar}");
    let member = calendar["members"]
        .as_array()
        .expect("members")
        .iter()
        .find(|m| m["id"] == shadow.user_id.as_str())
        .expect("the shadow is listed")
        .clone();
    let email = member["email"].as_str().expect("email");
    let local = email
        .strip_suffix("@home.example")
        .and_then(|local| local.strip_prefix("federated+"))
        .unwrap_or_else(|| panic!("federated+<8>@home.example: {email}"));
    assert_eq!(local.chars().count(), 8, "{email}");
}

#[tokio::test]
async fn a_member_token_acts_as_its_viewer_shadow_but_is_no_session() {
    let (app, owner, calendar_id) = origin().await;
    let invite = invite_to(&app, &owner, &calendar_id).await;
    let shadow = accepted(&app, &invite, "ruth@home.example", HOME).await;
    let event = app
        .create_event(&owner, &event_body(&[&calendar_id], "Standup", 9))
        .await;

    let (status, calendars) =
        bearer_call(&app, Method::GET, "/api/v1/calendars", &shadow.token, None).await;
    assert_eq!(status, StatusCode::OK, "{calendars}");
    let listed: Vec<&Value> = calendars.as_array().expect("calendars").iter().collect();
    assert_eq!(listed.len(), 1, "only the shared calendar: {calendars}");
    assert_eq!(listed[0]["id"], calendar_id.as_str());
    assert_eq!(listed[0]["role"], "viewer");
    let (status, events) =
        bearer_call(&app, Method::GET, "/api/v1/events", &shadow.token, None).await;
    assert_eq!(status, StatusCode::OK, "{events}");
    assert!(
        events
            .to_string()
            .contains(event["id"].as_str().expect("id")),
        "{events}"
    );
    let (status, body) = bearer_call(
        &app,
        Method::POST,
        "/api/v1/events",
        &shadow.token,
        Some(&event_body(&[&calendar_id], "Not mine to add", 11)),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    let response = app
        .client
        .get(app.url("/api/auth/get-session"))
        .bearer_auth(&shadow.token)
        .send()
        .await
        .expect("request");
    let status = response.status();
    let session: Value = response.json().await.unwrap_or(Value::Null);
    assert!(
        status == StatusCode::UNAUTHORIZED || (status == StatusCode::OK && session.is_null()),
        "a member token is no session: {status} {session}"
    );

    let mut stream = SseClient::open(
        app.client
            .get(app.url("/api/stream"))
            .bearer_auth(&shadow.token),
    )
    .await;
    let added = app
        .create_event(&owner, &event_body(&[&calendar_id], "Retro", 14))
        .await;
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "event_created", "{frame}");
    assert_eq!(frame["payload"]["id"], added["id"]);
}

#[tokio::test]
async fn rotating_exchanges_the_member_token_and_needs_one() {
    let (app, owner, calendar_id) = origin().await;
    let invite = invite_to(&app, &owner, &calendar_id).await;
    let shadow = accepted(&app, &invite, "ruth@home.example", HOME).await;
    let before = Utc::now();
    let (status, body) = rotate(&app, Some(&shadow.token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let rotated = body["memberToken"].as_str().expect("memberToken");
    assert_ne!(rotated, shadow.token);
    assert_near(issued_at(rotated), before, "issue time in the new token");
    assert_near(
        timestamp(&body["memberTokenExpiresAt"]),
        before + Duration::days(90),
        "new expiry",
    );
    let (status, _) =
        bearer_call(&app, Method::GET, "/api/v1/calendars", &shadow.token, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the old token is spent");
    let (status, _) = rotate(&app, Some(&shadow.token)).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "the old token rotates no more"
    );
    let (status, calendars) =
        bearer_call(&app, Method::GET, "/api/v1/calendars", rotated, None).await;
    assert_eq!(status, StatusCode::OK, "{calendars}");

    for bearer in [Some(owner.token.as_str()), None] {
        let (status, body) = rotate(&app, bearer).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        assert_eq!(body["error"], "A federated member token is required.");
    }
}

#[tokio::test]
async fn of_concurrent_rotations_with_one_token_exactly_one_wins() {
    // Behind a trusted proxy (loopback) naming a new client address each round, so that
    // rounds go on past one address's 30 rotations until a loser is seen to have lost the
    // exchange itself (passed the token check before the winner committed), which a
    // loaded machine, spreading the four requests out, makes rarer.
    let app = federated_app_with(|s| s.auth.trust_proxy_headers = true).await;
    let owner = app.sign_up("owner@origin.example").await;
    let calendar = app.create_calendar(&owner, "Shared far").await;
    let calendar_id = calendar["id"].as_str().expect("id").to_owned();
    let invite = invite_to(&app, &owner, &calendar_id).await;
    let mut token = accepted(&app, &invite, "ruth@home.example", HOME)
        .await
        .token;
    let (mut rounds, mut lost_exchanges) = (0, 0);
    while rounds < 6 || (lost_exchanges == 0 && rounds < 100) {
        let round = rounds;
        rounds += 1;
        let address = format!("198.51.100.{}", 1 + round);
        let answers =
            futures::future::join_all((0..4).map(|_| rotate_from(&app, &token, &address))).await;
        let (winners, losers): (Vec<_>, Vec<_>) = answers
            .into_iter()
            .partition(|(status, _)| *status == StatusCode::OK);
        assert_eq!(winners.len(), 1, "round {round}: one winner: {winners:?}");
        for (status, body) in &losers {
            assert_eq!(*status, StatusCode::UNAUTHORIZED, "round {round}: {body}");
            if body["error"] == "The federation credential was already rotated." {
                lost_exchanges += 1;
            }
            // Past the token check before the winner committed: the exchange lost; after
            // it: the token is no member token any more.
            assert!(
                body["error"] == "The federation credential was already rotated."
                    || body["error"] == "A federated member token is required.",
                "round {round}: {body}"
            );
        }
        let (status, _) = bearer_call(&app, Method::GET, "/api/v1/calendars", &token, None).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "round {round}: the old token is spent"
        );
        token = winners[0].1["memberToken"]
            .as_str()
            .expect("memberToken")
            .to_owned();
        let (status, _) = bearer_call(&app, Method::GET, "/api/v1/calendars", &token, None).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "round {round}: the winner's token works"
        );
    }
    assert!(
        lost_exchanges > 0,
        "of {rounds} rounds' losers, some passed the token check while the winner was exchanging"
    );
}

#[tokio::test]
async fn removing_the_shadow_from_the_calendar_revokes_its_member_tokens_at_once() {
    let (app, owner, calendar_id) = origin().await;
    let invite = invite_to(&app, &owner, &calendar_id).await;
    let shadow = accepted(&app, &invite, "ruth@home.example", HOME).await;
    let mut stream = SseClient::open(
        app.client
            .get(app.url("/api/stream"))
            .bearer_auth(&shadow.token),
    )
    .await;
    assert_eq!(
        remove_member(&app, &owner, &calendar_id, &shadow.user_id).await,
        StatusCode::OK
    );
    for path in ["/api/v1/calendars", "/api/v1/events", "/api/stream"] {
        let (status, _) = bearer_call(&app, Method::GET, path, &shadow.token, None).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{path} right after the removal"
        );
    }
    let (status, _) = rotate(&app, Some(&shadow.token)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    stream.expect_end().await;
}

#[tokio::test]
async fn accept_takes_ten_requests_per_address_in_fifteen_minutes() {
    let (app, owner, calendar_id) = origin().await;
    let invite = invite_to(&app, &owner, &calendar_id).await;
    for n in 0..10 {
        accepted(&app, &invite, &format!("ruth{n}@home.example"), HOME).await;
    }
    let (status, body) = accept(
        &app,
        &invite,
        &profile("Remote Ruth", "ruth@home.example", HOME),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(shadows(&app).await.len(), 10);
}
