//! Calendars: create, list (with role and provider fields), read, rename, delete; ids and
//! membership checks; the frames each change sends.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser, spawn_app};

/// The owner's calendar shared with an editor and a viewer, and an outsider.
pub struct Shared {
    pub owner: TestUser,
    pub editor: TestUser,
    pub viewer: TestUser,
    pub outsider: TestUser,
    pub calendar: String,
}

/// Signs up four users and shares a new calendar of the first with two of them.
pub async fn shared(app: &TestApp, tag: &str) -> Shared {
    let owner = app.sign_up(&format!("owner-{tag}@example.com")).await;
    let editor = app.sign_up(&format!("editor-{tag}@example.com")).await;
    let viewer = app.sign_up(&format!("viewer-{tag}@example.com")).await;
    let outsider = app.sign_up(&format!("outsider-{tag}@example.com")).await;
    let calendar = share_new_calendar(app, &owner, &editor, &viewer).await;
    Shared {
        owner,
        editor,
        viewer,
        outsider,
        calendar,
    }
}

/// A new calendar of `owner` with `editor` and `viewer` in those roles; returns its id.
pub async fn share_new_calendar(
    app: &TestApp,
    owner: &TestUser,
    editor: &TestUser,
    viewer: &TestUser,
) -> String {
    let calendar = app.create_calendar(owner, "Team").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let invite = app.create_invite(owner, &calendar, None).await;
    let token = invite["id"].as_str().expect("token");
    for user in [editor, viewer] {
        assert_eq!(
            app.join(user, &calendar, token).await.status(),
            StatusCode::OK
        );
    }
    assert_eq!(
        app.set_role(owner, &calendar, &editor.id, "editor")
            .await
            .status(),
        StatusCode::OK
    );
    calendar
}

#[tokio::test]
async fn a_created_calendar_is_listed_with_role_and_read_with_members() {
    let app = spawn_app().await;
    let owner = app.sign_up("cal-owner@example.com").await;
    let created = app.create_calendar(&owner, "Family").await;
    assert_eq!(created["name"], "Family");
    assert_eq!(created["color"], "#7A8BA3");
    assert_eq!(
        created["creatorID"],
        owner.id.as_str(),
        "identity comes from the server"
    );
    assert_eq!(created["isDefault"], false);
    assert_eq!(created["role"], "owner");
    assert_eq!(
        created["members"],
        json!([{ "id": owner.id, "name": "Test User", "email": owner.email }])
    );

    let listed: Value = app.get_json_as(&owner, "/api/v1/calendars").await;
    let listed = listed.as_array().expect("array");
    assert_eq!(listed.len(), 2, "the personal calendar and the new one");
    let personal = listed
        .iter()
        .find(|c| c["isDefault"] == true)
        .expect("personal calendar");
    assert_eq!(personal["role"], "owner");
    for field in [
        "provider",
        "accountId",
        "accountLabel",
        "serverUrl",
        "syncStatus",
        "syncErrorCode",
    ] {
        assert_eq!(personal[field], Value::Null, "{field}");
    }

    let id = created["id"].as_str().expect("id");
    let read: Value = app
        .get_json_as(&owner, &format!("/api/v1/calendars/{id}"))
        .await;
    assert_eq!(read["id"], id);
    assert_eq!(read["members"][0]["email"], owner.email.as_str());
}

#[tokio::test]
async fn creating_into_a_provider_account_is_a_clear_4xx() {
    let app = spawn_app().await;
    let user = app.sign_up("provider@example.com").await;
    // An account that is not the caller's: 403, as the reference says.
    for body in [
        json!({ "name": "G", "color": "#fff", "provider": "google", "accountId": "acc" }),
        json!({ "name": "G", "color": "#fff", "provider": "caldav", "accountId": "acc" }),
        json!({ "name": "G", "color": "#fff", "provider": "caldav",
                "accountId": "6f1c9c52-3c1e-4f43-9a57-0d2f8c1e7a01" }),
    ] {
        let response = app
            .as_user(Method::POST, "/api/v1/calendars", &user)
            .json(&body)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{body}");
        let error: Value = response.json().await.expect("JSON");
        assert_eq!(error["error"], "That account isn't connected to your user.");
    }
    for body in [
        json!({ "name": "G", "color": "#fff", "provider": "google" }),
        json!({ "name": "G", "color": "#fff", "provider": "myspace", "accountId": "acc" }),
        json!({ "name": "", "color": "#fff" }),
        json!({ "color": "#fff" }),
    ] {
        let response = app
            .as_user(Method::POST, "/api/v1/calendars", &user)
            .json(&body)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
    }
}

#[tokio::test]
async fn bad_ids_are_400_and_foreign_or_unknown_calendars_403() {
    let app = spawn_app().await;
    let user = app.sign_up("ids@example.com").await;
    let other = app.sign_up("ids-other@example.com").await;
    let foreign = app.create_calendar(&other, "Other's").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let unknown = uuid::Uuid::new_v4().to_string();
    let cases = [
        (
            Method::GET,
            "/api/v1/calendars/not-a-uuid".to_owned(),
            None,
            400,
        ),
        (
            Method::GET,
            format!(
                "/api/v1/calendars/{}",
                unknown.to_uppercase().replace('-', "")
            ),
            None,
            400,
        ),
        (
            Method::GET,
            format!("/api/v1/calendars/{unknown}"),
            None,
            403,
        ),
        (
            Method::GET,
            format!("/api/v1/calendars/{foreign}"),
            None,
            403,
        ),
        (
            Method::GET,
            format!("/api/v1/calendars/{foreign}/members"),
            None,
            403,
        ),
        (
            Method::PUT,
            "/api/v1/calendars".to_owned(),
            Some(json!({ "id": "x", "name": "n", "color": "c" })),
            400,
        ),
        (
            Method::PUT,
            "/api/v1/calendars".to_owned(),
            Some(json!({ "id": unknown, "name": "n", "color": "c" })),
            403,
        ),
        (
            Method::DELETE,
            "/api/v1/calendars".to_owned(),
            Some(json!({ "id": foreign, "name": "n", "color": "c" })),
            403,
        ),
    ];
    for (method, path, body, status) in cases {
        let mut request = app.as_user(method.clone(), &path, &user);
        if let Some(body) = &body {
            request = request.json(body);
        }
        let response = request.send().await.expect("request");
        assert_eq!(response.status().as_u16(), status, "{method} {path}");
        let error: Value = response.json().await.expect("JSON");
        assert!(error["requestId"].is_string());
    }
}

#[tokio::test]
async fn rename_reaches_every_member_with_their_role_and_nobody_else() {
    let app = spawn_app().await;
    let s = shared(&app, "rename").await;
    let mut owner_stream = app.stream(&s.owner).await;
    let mut editor_stream = app.stream(&s.editor).await;
    let mut viewer_stream = app.stream(&s.viewer).await;
    let mut outsider_stream = app.stream(&s.outsider).await;

    let renamed = app
        .as_user(Method::PUT, "/api/v1/calendars", &s.owner)
        .json(&json!({ "id": s.calendar, "name": "Renamed", "color": "#123456", "members": [] }))
        .send()
        .await
        .expect("request");
    assert_eq!(renamed.status(), StatusCode::OK);
    let body: Value = renamed.json().await.expect("JSON");
    assert_eq!(body["name"], "Renamed");
    assert_eq!(body["members"].as_array().expect("members").len(), 3);

    for (stream, role) in [
        (&mut owner_stream, "owner"),
        (&mut editor_stream, "editor"),
        (&mut viewer_stream, "viewer"),
    ] {
        let frame = stream.next_frame().await;
        assert_eq!(frame["type"], "calendar_updated");
        assert_eq!(frame["payload"]["name"], "Renamed");
        assert_eq!(frame["payload"]["role"], role);
    }
    // The outsider's next frame is one addressed to them, not the rename.
    app.ctx().shared.services.broadcast(
        [&bowline::domain::ids::UserId::from(s.outsider.id.as_str())],
        &bowline::domain::frames::Frame::new("reminders_updated", json!({})),
    );
    assert_eq!(
        outsider_stream.next_frame().await["type"],
        "reminders_updated"
    );
}

#[tokio::test]
async fn only_the_owner_deletes_and_never_the_personal_calendar() {
    let app = spawn_app().await;
    let s = shared(&app, "delete").await;
    let body = json!({ "id": s.calendar, "name": "Team", "color": "#7A8BA3" });
    let by_editor = app
        .as_user(Method::DELETE, "/api/v1/calendars", &s.editor)
        .json(&body)
        .send()
        .await
        .expect("request");
    assert_eq!(by_editor.status(), StatusCode::FORBIDDEN);
    let personal = app
        .as_user(Method::GET, "/api/v1/calendars", &s.owner)
        .send()
        .await
        .expect("request");
    let personal: Value = personal.json().await.expect("JSON");
    let personal_id = personal
        .as_array()
        .expect("array")
        .iter()
        .find(|c| c["isDefault"] == true)
        .expect("personal")["id"]
        .clone();
    let refused = app
        .as_user(Method::DELETE, "/api/v1/calendars", &s.owner)
        .json(&json!({ "id": personal_id, "name": "x", "color": "y" }))
        .send()
        .await
        .expect("request");
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        refused.json::<Value>().await.expect("JSON")["error"],
        "Your personal calendar can't be deleted."
    );

    let mut viewer_stream = app.stream(&s.viewer).await;
    let deleted = app
        .as_user(Method::DELETE, "/api/v1/calendars", &s.owner)
        .json(&body)
        .send()
        .await
        .expect("request");
    assert_eq!(deleted.status(), StatusCode::OK);
    let body: Value = deleted.json().await.expect("JSON");
    assert_eq!(body["members"], json!([]));
    let frame = viewer_stream.next_frame().await;
    assert_eq!(frame["type"], "calendar_removed");
    assert_eq!(frame["payload"]["id"], s.calendar.as_str());
    assert_eq!(frame["payload"]["members"], json!([]));
    let gone = app
        .as_user(
            Method::GET,
            &format!("/api/v1/calendars/{}", s.calendar),
            &s.viewer,
        )
        .send()
        .await
        .expect("request");
    assert_eq!(
        gone.status(),
        StatusCode::FORBIDDEN,
        "no membership, no calendar"
    );
}

#[tokio::test]
async fn the_static_google_path_is_not_taken_for_a_calendar_id() {
    let app = spawn_app().await;
    let user = app.sign_up("google-path@example.com").await;
    let response = app
        .as_user(Method::GET, "/api/v1/calendars/google", &user)
        .send()
        .await
        .expect("request");
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "the sync trigger, not `:id` (which would be a 400 for a non-UUID)"
    );
    let anonymous = app.get("/api/v1/calendars/google").await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let not_an_id = app
        .as_user(Method::GET, "/api/v1/calendars/googlf", &user)
        .send()
        .await
        .expect("request");
    assert_eq!(not_an_id.status(), StatusCode::BAD_REQUEST, "`:id` itself");
}
