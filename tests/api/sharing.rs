//! Sharing a calendar through invites, end to end: create, preview, join, change roles,
//! transfer, leave, remove, revoke; and the invite rules (usable, right calendar, counted
//! once). The rules an invite is checked by are in `invite_rules`, the public side of invite
//! links in `invite_links`.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{TestApp, TestUser, spawn_app};

pub(crate) async fn members(app: &TestApp, user: &TestUser, calendar: &str) -> Vec<Value> {
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
    // A side-effect-only answer, like leave and remove: `OK` as text, which the original's
    // web client reads without complaint (it refuses a JSON body here).
    assert_eq!(promoted.status(), StatusCode::OK);
    assert_eq!(
        promoted.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert_eq!(promoted.text().await.expect("body"), "OK");
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
        .get_json_as(&ada, &format!("/api/v1/calendars/{calendar}"))
        .await;
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
    let personal: Value = app.get_json_as(&s.owner, "/api/v1/calendars").await;
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
