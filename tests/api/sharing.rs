//! Sharing a calendar through invites, end to end: create, preview, join, change roles,
//! transfer, leave, remove, revoke; and the invite rules (usable, right calendar, counted
//! once), the public pages for invite links.

use chrono::Utc;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{TestApp, TestUser, no_redirects, spawn_app, spawn_app_with};

async fn members(app: &TestApp, user: &TestUser, calendar: &str) -> Vec<Value> {
    let response = app
        .as_user(
            Method::GET,
            &format!("/api/v1/calendars/{calendar}/members"),
            user,
        )
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    response.json::<Vec<Value>>().await.expect("JSON")
}

#[tokio::test]
async fn two_people_share_a_calendar_through_an_invite_link() {
    let app = spawn_app().await;
    let ada = app.sign_up("ada-share@example.com").await;
    let bob = app.sign_up("bob-share@example.com").await;
    let calendar = app.create_calendar(&ada, "Family").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let invite = app.create_invite(&ada, &calendar, Some(5)).await;
    assert_eq!(invite["calendarID"], calendar.as_str());
    assert_eq!(invite["maxUses"], 5);
    assert_eq!(invite["uses"], 0);
    assert_eq!(invite["expiresAt"], Value::Null);
    let token = invite["id"].as_str().expect("token").to_owned();

    // The public preview: identity, names and avatars, never emails.
    let preview = app.get(&format!("/api/v1/calendars/tokens/{token}")).await;
    assert_eq!(preview.status(), StatusCode::OK);
    let preview: Value = preview.json().await.expect("JSON");
    assert_eq!(preview["id"], calendar.as_str());
    assert_eq!(preview["name"], "Family");
    assert_eq!(
        preview["members"],
        json!([{ "id": ada.id, "name": "Test User", "image": null }])
    );
    assert!(
        !preview.to_string().contains("@example.com"),
        "no emails in a preview"
    );
    assert_eq!(preview["events"], json!([]));

    let mut ada_stream = app.stream(&ada).await;
    let joined = app.join(&bob, &calendar, &token).await;
    assert_eq!(joined.status(), StatusCode::OK);
    let rows: Value = joined.json().await.expect("JSON");
    assert_eq!(rows[0]["role"], "viewer");
    assert_eq!(rows[0]["userID"], bob.id.as_str());
    assert_eq!(rows[0]["calendarID"], calendar.as_str());
    let frame = ada_stream.next_frame().await;
    assert_eq!(frame["type"], "calendar_updated");
    assert_eq!(
        frame["payload"]["members"]
            .as_array()
            .expect("members")
            .len(),
        2
    );

    // Joining again changes nothing and does not count.
    let again = app.join(&bob, &calendar, &token).await;
    assert_eq!(again.json::<Value>().await.expect("JSON"), json!([]));
    let listed: Value = app
        .as_user(
            Method::GET,
            &format!("/api/v1/calendars/{calendar}/invites"),
            &ada,
        )
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert_eq!(listed[0]["uses"], 1);

    // Promote, then transfer ownership.
    let mut bob_stream = app.stream(&bob).await;
    let promoted = app.set_role(&ada, &calendar, &bob.id, "editor").await;
    assert_eq!(
        promoted.json::<Value>().await.expect("JSON"),
        json!({ "id": bob.id, "role": "editor" })
    );
    let frame = bob_stream.next_frame().await;
    assert_eq!(frame["type"], "calendar_updated");
    assert_eq!(frame["payload"]["role"], "editor");
    let transferred = app.set_role(&ada, &calendar, &bob.id, "owner").await;
    assert_eq!(transferred.status(), StatusCode::OK);
    assert_eq!(bob_stream.next_frame().await["payload"]["role"], "owner");
    let roles: Vec<(String, String)> = members(&app, &ada, &calendar)
        .await
        .iter()
        .map(|m| {
            (
                m["id"].as_str().expect("id").to_owned(),
                m["role"].as_str().expect("role").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        roles,
        vec![
            (bob.id.clone(), "owner".into()),
            (ada.id.clone(), "editor".into())
        ]
    );
    let read: Value = app
        .as_user(Method::GET, &format!("/api/v1/calendars/{calendar}"), &ada)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert_eq!(read["creatorID"], bob.id.as_str());

    // The new owner cannot leave; the old one can, and is told.
    let refused = app
        .as_user(
            Method::DELETE,
            &format!("/api/v1/calendars/members/{calendar}"),
            &bob,
        )
        .send()
        .await
        .expect("request");
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let left = app
        .as_user(
            Method::DELETE,
            &format!("/api/v1/calendars/members/{calendar}"),
            &ada,
        )
        .send()
        .await
        .expect("request");
    assert_eq!(left.status(), StatusCode::OK);
    loop {
        let frame = ada_stream.next_frame().await;
        if frame["type"] == "calendar_removed" {
            assert_eq!(frame["payload"], json!({ "id": calendar }));
            break;
        }
    }

    // Revoked: the link stops working everywhere.
    let revoked = app
        .as_user(
            Method::DELETE,
            &format!("/api/v1/calendars/invites/{token}"),
            &bob,
        )
        .send()
        .await
        .expect("request");
    assert_eq!(revoked.status(), StatusCode::OK);
    assert_eq!(
        app.get(&format!("/api/v1/calendars/tokens/{token}"))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.join(&ada, &calendar, &token).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn invites_are_checked_before_anything_is_written() {
    use entities::invites;
    use sea_orm::{ActiveModelTrait, ActiveValue::Set};

    let app = spawn_app().await;
    let s = shared(&app, "rules").await;
    let joiner = app.sign_up("joiner-rules@example.com").await;
    let conn = app.db_connection().await;
    let calendar_id = uuid::Uuid::parse_str(&s.calendar).expect("uuid");
    let now = Utc::now();
    let expired = invites::ActiveModel {
        id: Set(uuid::Uuid::new_v4()),
        calendar_id: Set(calendar_id),
        created_by: Set(Some(s.owner.id.clone())),
        expires_at: Set(Some(now - chrono::Duration::minutes(1))),
        max_uses: Set(None),
        uses: Set(0),
        revoked_at: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&conn)
    .await
    .expect("expired invite");

    let single = app.create_invite(&s.owner, &s.calendar, Some(1)).await;
    let single_token = single["id"].as_str().expect("token");
    let other_calendar = app.create_calendar(&s.outsider, "Elsewhere").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let other_invite = app.create_invite(&s.outsider, &other_calendar, None).await;

    let cases: [(&str, StatusCode); 4] = [
        (&expired.id.to_string(), StatusCode::NOT_FOUND),
        ("not-a-uuid", StatusCode::NOT_FOUND),
        (&uuid::Uuid::new_v4().to_string(), StatusCode::NOT_FOUND),
        (
            other_invite["id"].as_str().expect("token"),
            StatusCode::FORBIDDEN,
        ),
    ];
    for (token, status) in cases {
        let response = app.join(&joiner, &s.calendar, token).await;
        assert_eq!(response.status(), status, "{token}");
        assert_eq!(
            app.get(&format!("/api/v1/calendars/tokens/{token}"))
                .await
                .status()
                .is_success(),
            token == other_invite["id"].as_str().expect("token")
        );
    }
    let no_token = app
        .as_user(
            Method::POST,
            &format!("/api/v1/calendars/members/{}", s.calendar),
            &joiner,
        )
        .json(&json!({}))
        .send()
        .await
        .expect("request");
    assert_eq!(no_token.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        members(&app, &s.owner, &s.calendar).await.len(),
        3,
        "nobody was added"
    );

    // A single-use invite: the first joiner counts it, the next one is refused.
    assert_eq!(
        app.join(&joiner, &s.calendar, single_token).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        app.join(&s.outsider, &s.calendar, single_token)
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get(&format!("/api/v1/calendars/tokens/{single_token}"))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    let listed: Value = app
        .as_user(
            Method::GET,
            &format!("/api/v1/calendars/{}/invites", s.calendar),
            &s.owner,
        )
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert!(
        listed
            .as_array()
            .expect("array")
            .iter()
            .all(|i| i["id"] != single_token),
        "an exhausted invite is no longer listed"
    );
}

#[tokio::test]
async fn invite_fields_are_validated() {
    let app = spawn_app().await;
    let s = shared(&app, "fields").await;
    for body in [
        json!({ "calendarID": s.calendar, "maxUses": null }),
        json!({ "calendarID": s.calendar, "expiresAt": null }),
        json!({ "calendarID": "nope", "expiresAt": null, "maxUses": null }),
        json!({ "calendarID": s.calendar, "expiresAt": "yesterday", "maxUses": null }),
        json!({ "calendarID": s.calendar, "expiresAt": "2001-01-01T00:00:00.000Z", "maxUses": null }),
        json!({ "calendarID": s.calendar, "expiresAt": null, "maxUses": 0 }),
        json!({ "calendarID": s.calendar, "expiresAt": null, "maxUses": 1.5 }),
    ] {
        let response = app
            .as_user(Method::POST, "/api/v1/calendars/invites", &s.owner)
            .json(&body)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
    }
    let later = (Utc::now() + chrono::Duration::days(7)).to_rfc3339();
    let ok = app
        .as_user(Method::POST, "/api/v1/calendars/invites", &s.editor)
        .json(&json!({ "id": "new", "calendarID": s.calendar, "expiresAt": later, "maxUses": 3 }))
        .send()
        .await
        .expect("request");
    assert_eq!(ok.status(), StatusCode::CREATED);
    let body: Value = ok.json().await.expect("JSON");
    assert!(body["expiresAt"].as_str().expect("expiry").ends_with('Z'));
}

#[tokio::test]
async fn members_are_removed_by_the_owner_and_told() {
    let app = spawn_app().await;
    let s = shared(&app, "remove").await;
    let mut viewer_stream = app.stream(&s.viewer).await;
    let remove = |actor: &TestUser, target: &str| {
        app.as_user(
            Method::DELETE,
            &format!("/api/v1/calendars/{}/members/{target}", s.calendar),
            actor,
        )
        .send()
    };
    assert_eq!(
        remove(&s.editor, &s.viewer.id)
            .await
            .expect("request")
            .status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        remove(&s.owner, &s.owner.id)
            .await
            .expect("request")
            .status(),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        remove(&s.owner, &s.outsider.id)
            .await
            .expect("request")
            .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        remove(&s.owner, "bad id!").await.expect("request").status(),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        remove(&s.owner, &s.viewer.id)
            .await
            .expect("request")
            .status(),
        StatusCode::OK
    );
    let frame = viewer_stream.next_frame().await;
    assert_eq!(
        frame,
        json!({ "type": "calendar_removed", "payload": { "id": s.calendar } })
    );
    assert_eq!(members(&app, &s.owner, &s.calendar).await.len(), 2);
    let read = app
        .as_user(
            Method::GET,
            &format!("/api/v1/calendars/{}", s.calendar),
            &s.viewer,
        )
        .send()
        .await
        .expect("request");
    assert_eq!(read.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn role_changes_are_validated_and_ownership_of_a_personal_calendar_stays() {
    let app = spawn_app().await;
    let s = shared(&app, "roles").await;
    let bad = app
        .set_role(&s.owner, &s.calendar, &s.viewer.id, "admin")
        .await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        bad.json::<Value>().await.expect("JSON")["error"],
        "Role must be 'viewer', 'editor' or 'owner'."
    );
    let owner_demoted = app
        .set_role(&s.owner, &s.calendar, &s.owner.id, "viewer")
        .await;
    assert_eq!(owner_demoted.status(), StatusCode::BAD_REQUEST);
    let not_member = app
        .set_role(&s.owner, &s.calendar, &s.outsider.id, "viewer")
        .await;
    assert_eq!(not_member.status(), StatusCode::NOT_FOUND);

    // A personal calendar cannot change hands.
    let personal: Value = app
        .as_user(Method::GET, "/api/v1/calendars", &s.owner)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    let personal = personal
        .as_array()
        .expect("array")
        .iter()
        .find(|c| c["isDefault"] == true)
        .expect("personal")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let invite = app.create_invite(&s.owner, &personal, None).await;
    assert_eq!(
        app.join(&s.viewer, &personal, invite["id"].as_str().expect("token"))
            .await
            .status(),
        StatusCode::OK
    );
    let transfer = app
        .set_role(&s.owner, &personal, &s.viewer.id, "owner")
        .await;
    assert_eq!(transfer.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_invite_page_hands_off_to_the_app() {
    let app = spawn_app_with(|s| s.server.app_scheme = "bowline".into()).await;
    let token = uuid::Uuid::new_v4().to_string();
    let page = app.get(&format!("/invite/{token}")).await;
    assert_eq!(page.status(), StatusCode::OK);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .expect("text")
            .starts_with("text/html")
    );
    let html = page.text().await.expect("body");
    let server: String = url::form_urlencoded::byte_serialize(app.base.as_bytes()).collect();
    assert!(
        html.contains(&format!("bowline://invite/{token}?server={server}")),
        "{html}"
    );
    assert!(html.contains("app store"));
    let invalid = app.get("/invite/NOT_A_TOKEN").await;
    assert_eq!(invalid.status(), StatusCode::BAD_REQUEST);
    assert_eq!(invalid.text().await.expect("body"), "Invalid invite.");
}

#[tokio::test]
async fn the_app_site_association_appears_once_the_team_id_is_set() {
    let without = spawn_app().await;
    let missing = no_redirects()
        .get(without.url("/.well-known/apple-app-site-association"))
        .send()
        .await
        .expect("request");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);

    let with = spawn_app_with(|s| s.apple.team_id = Some("TEAM123".into())).await;
    let found = no_redirects()
        .get(with.url("/.well-known/apple-app-site-association"))
        .send()
        .await
        .expect("request");
    assert_eq!(found.status(), StatusCode::OK);
    assert_eq!(found.headers()["content-type"], "application/json");
    let document: Value = found.json().await.expect("JSON");
    assert_eq!(
        document,
        json!({ "applinks": { "details": [ {
            "appIDs": ["TEAM123.dev.bowline.app"],
            "components": [ { "/": "/invite/*", "comment": "Calendar invite" } ]
        } ] } })
    );
}

#[tokio::test]
async fn invite_links_are_mailed_by_members_with_the_invite_right() {
    let sink = crate::support::smtp::SmtpSink::start().await;
    let app = crate::helpers::spawn_app_with_mail(&sink).await;
    let s = shared(&app, "mail").await;
    let invite = app.create_invite(&s.editor, &s.calendar, None).await;
    let token = invite["id"].as_str().expect("token");
    let send = |user: &TestUser, email: &str| {
        app.as_user(
            Method::POST,
            &format!("/api/v1/calendars/invites/{token}/send"),
            user,
        )
        .json(&json!({ "email": email }))
        .send()
    };
    assert_eq!(
        send(&s.viewer, "friend@example.com")
            .await
            .expect("request")
            .status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        send(&s.editor, "not an address")
            .await
            .expect("request")
            .status(),
        StatusCode::BAD_REQUEST
    );
    let sent = send(&s.editor, "friend@example.com")
        .await
        .expect("request");
    assert_eq!(sent.status(), StatusCode::NO_CONTENT);
    let mail = sink.next_mail().await;
    assert_eq!(mail.to, ["friend@example.com"]);
    assert_eq!(mail.subject(), "Test User shared a calendar with you");
    mail.link_starting_with(&format!("{}/invite/{token}", app.base));
}

#[tokio::test]
async fn the_preview_is_rate_limited_per_address() {
    let app = spawn_app().await;
    let token = uuid::Uuid::new_v4();
    for _ in 0..30 {
        let response = app
            .client
            .get(app.url(&format!("/api/v1/calendars/tokens/{token}")))
            .header("x-forwarded-for", "192.0.2.44")
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
    let limited = app
        .client
        .get(app.url(&format!("/api/v1/calendars/tokens/{token}")))
        .header("x-forwarded-for", "192.0.2.44")
        .send()
        .await
        .expect("request");
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    let body: Value = limited.json().await.expect("JSON");
    assert!(body["requestId"].is_string());
}

/// A timestamp as clients send it.
fn stamp(at: chrono::DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[tokio::test]
async fn the_preview_summarizes_the_next_thirty_days_with_recurrences_expanded() {
    let app = spawn_app().await;
    let owner = app.sign_up("owner@example.com").await;
    let calendar = app.create_calendar(&owner, "Family").await;
    let calendar = calendar["id"].as_str().expect("id").to_owned();
    let soon = Utc::now() + chrono::Duration::days(2);

    let mut single = crate::helpers::event_body(&[&calendar], "Dentist", 9);
    single["start"] = json!(stamp(soon));
    single["end"] = json!(stamp(soon + chrono::Duration::hours(1)));
    single["description"] = json!("bring the forms");
    let created = app.event_request(Method::POST, &owner, &single).await;
    assert_eq!(created.status(), StatusCode::CREATED);

    let mut weekly = crate::helpers::event_body(&[&calendar], "Swim", 9);
    weekly["start"] = json!(stamp(soon + chrono::Duration::hours(3)));
    weekly["end"] = json!(stamp(soon + chrono::Duration::hours(4)));
    weekly["recurrence"] = json!("RRULE:FREQ=WEEKLY;COUNT=3");
    let created = app.event_request(Method::POST, &owner, &weekly).await;
    assert_eq!(created.status(), StatusCode::CREATED);

    let mut far = crate::helpers::event_body(&[&calendar], "Far away", 9);
    far["start"] = json!(stamp(soon + chrono::Duration::days(60)));
    far["end"] = json!(stamp(
        soon + chrono::Duration::days(60) + chrono::Duration::hours(1)
    ));
    let created = app.event_request(Method::POST, &owner, &far).await;
    assert_eq!(created.status(), StatusCode::CREATED);

    let invite = app.create_invite(&owner, &calendar, None).await;
    let token = invite["id"].as_str().expect("token");
    let preview: Value = app
        .get(&format!("/api/v1/calendars/tokens/{token}"))
        .await
        .json()
        .await
        .expect("JSON");
    let events = preview["events"].as_array().expect("events");
    let titles: Vec<&str> = events.iter().filter_map(|e| e["title"].as_str()).collect();
    assert_eq!(titles, ["Dentist", "Swim", "Swim", "Swim"]);
    assert_eq!(events[0]["id"], single["id"]);
    assert_eq!(events[0]["start"], single["start"]);
    let weekly_id = weekly["id"].as_str().expect("id");
    let second = soon + chrono::Duration::hours(3) + chrono::Duration::days(7);
    let second_ms =
        chrono::DurationRound::duration_trunc(second, chrono::Duration::milliseconds(1))
            .expect("ms")
            .timestamp_millis();
    assert_eq!(events[2]["id"], format!("{weekly_id}_{second_ms}"));
    assert_eq!(events[2]["recurrence"], Value::Null);
    for event in events {
        let event = event.as_object().expect("object");
        assert!(
            !event.contains_key("description"),
            "a summary, not the event"
        );
        assert!(!event.contains_key("location"));
    }
}
