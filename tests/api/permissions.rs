//! The permission matrix, route by route: owner, editor, viewer, non-member and
//! unauthenticated callers, each against a freshly shared calendar.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::calendars::share_new_calendar;
use crate::helpers::{TestApp, TestUser, spawn_app};

#[derive(Debug, Clone, Copy)]
enum Route {
    ReadCalendar,
    RenameCalendar,
    DeleteCalendar,
    ListMembers,
    Join,
    Leave,
    ChangeRole,
    RemoveMember,
    CreateInvite,
    ListInvites,
    RevokeInvite,
}

/// Expected statuses for owner, editor, viewer, non-member, anonymous.
const MATRIX: [(Route, [u16; 5]); 11] = [
    (Route::ReadCalendar, [200, 200, 200, 403, 401]),
    (Route::RenameCalendar, [200, 403, 403, 403, 401]),
    (Route::DeleteCalendar, [200, 403, 403, 403, 401]),
    (Route::ListMembers, [200, 200, 200, 403, 401]),
    (Route::Join, [200, 200, 200, 200, 401]),
    (Route::Leave, [400, 200, 200, 403, 401]),
    (Route::ChangeRole, [200, 403, 403, 403, 401]),
    (Route::RemoveMember, [200, 403, 403, 403, 401]),
    (Route::CreateInvite, [201, 201, 403, 403, 401]),
    (Route::ListInvites, [200, 200, 403, 403, 401]),
    (Route::RevokeInvite, [200, 200, 403, 403, 401]),
];

struct People {
    owner: TestUser,
    editor: TestUser,
    viewer: TestUser,
    outsider: TestUser,
}

async fn call(
    app: &TestApp,
    people: &People,
    route: Route,
    caller: Option<&TestUser>,
) -> StatusCode {
    let calendar = share_new_calendar(app, &people.owner, &people.editor, &people.viewer).await;
    let invite = app.create_invite(&people.owner, &calendar, None).await["id"]
        .as_str()
        .expect("token")
        .to_owned();
    let document = json!({ "id": calendar, "name": "Renamed", "color": "#000000" });
    let (method, path, body) = match route {
        Route::ReadCalendar => (Method::GET, format!("/api/v1/calendars/{calendar}"), None),
        Route::RenameCalendar => (Method::PUT, "/api/v1/calendars".into(), Some(document)),
        Route::DeleteCalendar => (Method::DELETE, "/api/v1/calendars".into(), Some(document)),
        Route::ListMembers => (
            Method::GET,
            format!("/api/v1/calendars/{calendar}/members"),
            None,
        ),
        Route::Join => (
            Method::POST,
            format!("/api/v1/calendars/members/{calendar}"),
            Some(json!({ "token": invite })),
        ),
        Route::Leave => (
            Method::DELETE,
            format!("/api/v1/calendars/members/{calendar}"),
            None,
        ),
        Route::ChangeRole => (
            Method::PUT,
            format!("/api/v1/calendars/{calendar}/members/{}", people.viewer.id),
            Some(json!({ "role": "editor" })),
        ),
        Route::RemoveMember => (
            Method::DELETE,
            format!("/api/v1/calendars/{calendar}/members/{}", people.viewer.id),
            None,
        ),
        Route::CreateInvite => (
            Method::POST,
            "/api/v1/calendars/invites".into(),
            Some(
                json!({ "id": "new", "calendarID": calendar, "expiresAt": null, "maxUses": null }),
            ),
        ),
        Route::ListInvites => (
            Method::GET,
            format!("/api/v1/calendars/{calendar}/invites"),
            None,
        ),
        Route::RevokeInvite => (
            Method::DELETE,
            format!("/api/v1/calendars/invites/{invite}"),
            None,
        ),
    };
    let mut request = match caller {
        Some(user) => app.as_user(method, &path, user),
        None => app.client.request(method, app.url(&path)),
    };
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.expect("request").status()
}

#[tokio::test]
async fn every_route_against_every_role() {
    let app = spawn_app().await;
    let people = People {
        owner: app.sign_up("matrix-owner@example.com").await,
        editor: app.sign_up("matrix-editor@example.com").await,
        viewer: app.sign_up("matrix-viewer@example.com").await,
        outsider: app.sign_up("matrix-outsider@example.com").await,
    };
    let callers: [(&str, Option<&TestUser>); 5] = [
        ("owner", Some(&people.owner)),
        ("editor", Some(&people.editor)),
        ("viewer", Some(&people.viewer)),
        ("non-member", Some(&people.outsider)),
        ("anonymous", None),
    ];
    let mut mismatches = Vec::new();
    for (route, expected) in MATRIX {
        for ((who, caller), expected) in callers.iter().zip(expected) {
            let status = call(&app, &people, route, *caller).await;
            if status.as_u16() != expected {
                mismatches.push(format!(
                    "{route:?} as {who}: expected {expected}, got {status}"
                ));
            }
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
