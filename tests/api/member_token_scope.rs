//! What a federation member token may do: it acts only within the calendars its shadow was
//! admitted to, on the calls a home server's users make through the gateway — event reads
//! and writes, attendance, the calendar and its members, invites, leaving, the stream and
//! token rotation. Every other operation of the OpenAPI document answers it 403 with one
//! clear error; a shadow can never become an owner; and its token ends with its last
//! membership, whatever ends it.

use std::collections::BTreeSet;

use bowline::http::rejection::MEMBER_TOKEN_REFUSED;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::federation::{
    accept, accepted, bearer_call, federated_app, federated_app_with, invite_to, profile,
    remove_member, rotate,
};
use crate::helpers::{TestApp, TestUser, event_body};
use crate::support::openapi::document;
use crate::support::smtp::SmtpSink;
use crate::support::sse::SseClient;

const HOME: &str = "https://home.example";

/// The operations a member token may call, as the document writes them.
const ALLOWED: [(&str, &str); 19] = [
    ("GET", "/api/stream"),
    ("GET", "/api/v1/calendars"),
    ("GET", "/api/v1/calendars/{id}"),
    ("GET", "/api/v1/calendars/{id}/export"),
    ("GET", "/api/v1/calendars/{calendarId}/members"),
    ("DELETE", "/api/v1/calendars/members/{calendarId}"),
    ("POST", "/api/v1/calendars/invites"),
    ("GET", "/api/v1/calendars/{calendarId}/invites"),
    ("DELETE", "/api/v1/calendars/invites/{inviteId}"),
    ("POST", "/api/v1/calendars/invites/{inviteId}/send"),
    ("GET", "/api/v1/events"),
    ("POST", "/api/v1/events"),
    ("PUT", "/api/v1/events"),
    ("DELETE", "/api/v1/events"),
    ("POST", "/api/v1/events/{eventId}/link"),
    ("POST", "/api/v1/events/{eventId}/fork"),
    ("GET", "/api/v1/events/{eventId}/attendees"),
    ("PUT", "/api/v1/events/{eventId}/attendance"),
    ("POST", "/api/v1/federation/token/rotate"),
];

/// An origin server, its owner, a calendar and a shadow admitted to it as an editor.
struct Admitted {
    app: TestApp,
    owner: TestUser,
    calendar: String,
    shadow: crate::helpers::federation::Accepted,
}

async fn admitted_editor() -> Admitted {
    admitted_editor_on(federated_app().await).await
}

/// [`admitted_editor`] on `app`.
async fn admitted_editor_on(app: TestApp) -> Admitted {
    let owner = app.sign_up("owner@origin.example").await;
    let calendar = app.create_calendar(&owner, "Shared far").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let invite = invite_to(&app, &owner, &calendar).await;
    let shadow = accepted(&app, &invite, "ruth@home.example", HOME).await;
    set_role(&app, &owner, &calendar, &shadow.user_id, "editor").await;
    Admitted {
        app,
        owner,
        calendar,
        shadow,
    }
}

async fn set_role(
    app: &TestApp,
    owner: &TestUser,
    calendar: &str,
    user: &str,
    role: &str,
) -> (StatusCode, Value) {
    app.call(
        Method::PUT,
        &format!("/api/v1/calendars/{calendar}/members/{user}"),
        owner,
        Some(&json!({ "role": role })),
    )
    .await
}

/// Every operation of the document that takes a credential, outside `/api/auth/*` (better-
/// auth's own routes, where a member token is no session): (method, path, takes a member
/// token).
fn credentialed_operations(document: &Value) -> Vec<(String, String, bool)> {
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        if path.starts_with("/api/auth/") {
            continue;
        }
        for (method, operation) in item.as_object().expect("path item") {
            let Some(security) = operation.get("security").and_then(Value::as_array) else {
                continue;
            };
            let schemes: Vec<&str> = security
                .iter()
                .filter_map(Value::as_object)
                .flat_map(|requirement| requirement.keys().map(String::as_str))
                .collect();
            if schemes.is_empty() {
                continue;
            }
            operations.push((
                method.to_uppercase(),
                path.clone(),
                schemes.contains(&"memberToken"),
            ));
        }
    }
    operations
}

#[tokio::test]
async fn every_operation_outside_the_shadows_calendars_refuses_a_member_token() {
    let Admitted {
        app,
        calendar,
        shadow,
        ..
    } = admitted_editor().await;
    let document = document(&app).await;
    let operations = credentialed_operations(&document);
    let allowed: BTreeSet<(String, String)> = operations
        .iter()
        .filter(|(_, _, member)| *member)
        .map(|(method, path, _)| (method.clone(), path.clone()))
        .collect();
    let expected: BTreeSet<(String, String)> = ALLOWED
        .iter()
        .map(|(method, path)| ((*method).to_owned(), (*path).to_owned()))
        .collect();
    assert_eq!(
        allowed, expected,
        "the document lists the member token's operations"
    );

    let refused: Vec<&(String, String, bool)> =
        operations.iter().filter(|(_, _, member)| !member).collect();
    assert!(refused.len() >= 40, "{} refused operations", refused.len());
    for (method, path, _) in refused {
        // Ids of the shadow's own calendar and of itself: refused all the same.
        let concrete = path
            .replace("{path}", "calendars")
            .replace("{userId}", &shadow.user_id)
            .replace("{connectionId}", &calendar);
        let concrete = with_ids(&concrete, &calendar);
        let method = Method::from_bytes(method.as_bytes()).expect("method");
        let body = (method != Method::GET).then(|| json!({}));
        let (status, answer) = bearer_call(
            &app,
            method.clone(),
            &concrete,
            &shadow.token,
            body.as_ref(),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {answer}");
        assert_eq!(answer["error"], MEMBER_TOKEN_REFUSED, "{method} {path}");
        assert!(answer["requestId"].is_string());
    }
}

/// `path` with every remaining `{param}` replaced by `id`.
fn with_ids(path: &str, id: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').expect("closing brace") + open;
        out.push_str(id);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

#[tokio::test]
async fn the_allowed_operations_work_within_the_shadows_calendars() {
    let sink = SmtpSink::start().await;
    let url = sink.url();
    let app =
        federated_app_with(move |s| s.mail.smtp_url = Some(bowline::config::Secret::new(url)))
            .await;
    let Admitted {
        app,
        owner,
        calendar,
        shadow,
    } = admitted_editor_on(app).await;
    // A second calendar the same shadow is admitted to (its current token as bearer).
    let second = app.create_calendar(&owner, "Second far").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let invite = invite_to(&app, &owner, &second).await;
    let (status, body) = accept(
        &app,
        &invite,
        &profile("Remote Ruth", "ruth@home.example", HOME),
        Some(&shadow.token),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["userID"], shadow.user_id.as_str());
    let token = body["memberToken"].as_str().expect("token").to_owned();
    set_role(&app, &owner, &second, &shadow.user_id, "editor").await;
    let call = |method: Method, path: String, body: Option<Value>| {
        let app = &app;
        let token = token.clone();
        async move { bearer_call(app, method, &path, &token, body.as_ref()).await }
    };

    let mut stream =
        SseClient::open(app.client.get(app.url("/api/stream")).bearer_auth(&token)).await;
    let (status, listed) = call(Method::GET, "/api/v1/calendars".into(), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed.as_array().expect("calendars").len(), 2, "{listed}");
    for path in [
        format!("/api/v1/calendars/{calendar}"),
        format!("/api/v1/calendars/{calendar}/members"),
        format!("/api/v1/calendars/{calendar}/invites"),
        "/api/v1/events".to_owned(),
    ] {
        let (status, body) = call(Method::GET, path.clone(), None).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
    }
    let export = app
        .client
        .get(app.url(&format!("/api/v1/calendars/{calendar}/export")))
        .bearer_auth(&token)
        .send()
        .await
        .expect("export");
    assert_eq!(export.status(), StatusCode::OK);

    // Invites of its calendar, as an editor.
    let (status, invite) = call(
        Method::POST,
        "/api/v1/calendars/invites".into(),
        Some(json!({ "calendarID": calendar, "expiresAt": null, "maxUses": null })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{invite}");
    let invite_id = invite["id"].as_str().expect("id").to_owned();
    let (status, body) = call(
        Method::POST,
        format!("/api/v1/calendars/invites/{invite_id}/send"),
        Some(json!({ "email": "guest@example.com" })),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let mail = sink.next_mail().await;
    assert!(
        mail.text().contains(&format!("/invite/{invite_id}")),
        "{}",
        mail.text()
    );
    let (status, _) = call(
        Method::DELETE,
        format!("/api/v1/calendars/invites/{invite_id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    // Events: create, update, link, fork, attendance, delete.
    let (status, event) = call(
        Method::POST,
        "/api/v1/events".into(),
        Some(event_body(&[&calendar], "From far away", 9)),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{event}");
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "event_created");
    let event_id = event["id"].as_str().expect("id").to_owned();
    let mut changed = event.clone();
    changed["title"] = json!("Moved from far away");
    let (status, body) = call(Method::PUT, "/api/v1/events".into(), Some(changed)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = call(
        Method::POST,
        format!("/api/v1/events/{event_id}/fork"),
        Some(json!({ "calendarID": second })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = call(
        Method::POST,
        format!("/api/v1/events/{event_id}/link"),
        Some(json!({ "calendarID": second })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = call(
        Method::PUT,
        format!("/api/v1/events/{event_id}/attendance"),
        Some(json!({ "status": "going" })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, attendees) = call(
        Method::GET,
        format!("/api/v1/events/{event_id}/attendees"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(attendees[0]["status"], "going", "{attendees}");
    let (status, body) = call(
        Method::DELETE,
        "/api/v1/events".into(),
        Some(json!({ "id": event_id })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Rotation, then leaving both calendars: the second leave ends the token.
    let (status, rotated) = rotate(&app, Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let token = rotated["memberToken"].as_str().expect("token").to_owned();
    for (left, status_after) in [
        (&second, StatusCode::OK),
        (&calendar, StatusCode::UNAUTHORIZED),
    ] {
        let (status, body) = bearer_call(
            &app,
            Method::DELETE,
            &format!("/api/v1/calendars/members/{left}"),
            &token,
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (status, _) = bearer_call(&app, Method::GET, "/api/v1/calendars", &token, None).await;
        assert_eq!(status, status_after);
    }
}

#[tokio::test]
async fn the_probes_bypass_is_closed() {
    let Admitted {
        app,
        owner,
        calendar,
        shadow,
    } = admitted_editor().await;
    let token = &shadow.token;
    for (method, path, body) in [
        (
            Method::POST,
            "/api/v1/calendars".to_owned(),
            json!({ "name": "Mine now", "color": "#C8553D" }),
        ),
        (
            Method::POST,
            "/api/v1/users/connections/caldav".to_owned(),
            json!({ "serverUrl": "https://caldav.example.com/", "username": "x", "password": "y" }),
        ),
        (
            Method::POST,
            "/api/v1/pages".to_owned(),
            json!({ "name": "Mine", "config": {} }),
        ),
        (
            Method::PUT,
            "/api/v1/users/settings".to_owned(),
            json!({ "timezone": "UTC" }),
        ),
        (
            Method::POST,
            "/api/v1/users/avatar".to_owned(),
            json!({ "data": "iVBORw0KGgo=" }),
        ),
        (
            Method::PUT,
            format!("/api/v1/reminders/calendars/{calendar}"),
            json!({ "rule": null }),
        ),
    ] {
        let (status, answer) = bearer_call(&app, method.clone(), &path, token, Some(&body)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {answer}");
        assert_eq!(answer["error"], MEMBER_TOKEN_REFUSED);
    }
    let import = app
        .client
        .post(app.url("/api/v1/calendars/import?name=Mine"))
        .bearer_auth(token)
        .header("content-type", "text/calendar")
        .body("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n")
        .send()
        .await
        .expect("import");
    assert_eq!(import.status(), StatusCode::FORBIDDEN);
    let (_, listed) = bearer_call(&app, Method::GET, "/api/v1/calendars", token, None).await;
    assert_eq!(
        listed.as_array().expect("calendars").len(),
        1,
        "it owns nothing: {listed}"
    );

    // A shadow never becomes an owner.
    let (status, body) = set_role(&app, &owner, &calendar, &shadow.user_id, "owner").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        body["error"],
        "A member from another server can't own a calendar here."
    );
    let (_, members) = app
        .call(
            Method::GET,
            &format!("/api/v1/calendars/{calendar}/members"),
            &owner,
            None,
        )
        .await;
    let roles: Vec<(&str, &str)> = members
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            (
                m["id"].as_str().expect("id"),
                m["role"].as_str().expect("role"),
            )
        })
        .collect();
    assert!(roles.contains(&(owner.id.as_str(), "owner")), "{members}");
    assert!(
        roles.contains(&(shadow.user_id.as_str(), "editor")),
        "{members}"
    );

    // Removed from its only calendar, its token is gone.
    assert_eq!(
        remove_member(&app, &owner, &calendar, &shadow.user_id).await,
        StatusCode::OK
    );
    let (status, _) = bearer_call(&app, Method::GET, "/api/v1/events", token, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_token_ends_with_the_last_membership_whatever_ends_it() {
    // The calendar deleted: its memberships cascade, and so does the token, at once.
    let Admitted {
        app,
        owner,
        calendar,
        shadow,
    } = admitted_editor().await;
    let mut stream = SseClient::open(
        app.client
            .get(app.url("/api/stream"))
            .bearer_auth(&shadow.token),
    )
    .await;
    let (status, _) = app
        .call(
            Method::DELETE,
            "/api/v1/calendars",
            &owner,
            Some(&json!({ "id": calendar })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) =
        bearer_call(&app, Method::GET, "/api/v1/calendars", &shadow.token, None).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "after the calendar's deletion"
    );
    stream.expect_end().await;

    // The owner's account deleted: their calendars go, and the shadow's token with them.
    let Admitted {
        app, owner, shadow, ..
    } = admitted_editor().await;
    let mut stream = SseClient::open(
        app.client
            .get(app.url("/api/stream"))
            .bearer_auth(&shadow.token),
    )
    .await;
    let deleted = app
        .as_user(Method::POST, "/api/auth/delete-user", &owner)
        .header("origin", app.base.as_str())
        .json(&json!({ "password": owner.password }))
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), StatusCode::OK);
    let (status, _) = bearer_call(&app, Method::GET, "/api/v1/events", &shadow.token, None).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "after the owner's deletion"
    );
    stream.expect_end().await;
}
