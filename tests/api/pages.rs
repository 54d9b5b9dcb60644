//! Pages: the lazily created default, creation, compare-and-swap saves from two devices,
//! reorder and delete with the default invariant (under concurrent changes and in the
//! database: `pages_default`), calendars dropped from configs on read, privacy, and the page
//! frames on the owner's connections.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser, spawn_app};

pub fn config(view: &str) -> Value {
    json!({
        "schemaVersion": 1,
        "view": { "id": view, "configVersion": 1 },
        "calendarVisibility": { "mode": "all", "hiddenCalendarIds": [] },
    })
}

pub async fn list(app: &TestApp, user: &TestUser) -> Vec<Value> {
    let (status, pages) = app.call(Method::GET, "/api/v1/pages", user, None).await;
    assert_eq!(status, StatusCode::OK);
    pages.as_array().expect("array").clone()
}

pub async fn create(app: &TestApp, user: &TestUser, name: &str) -> Value {
    let body = json!({ "name": name, "config": config("week") });
    let (status, page) = app
        .call(Method::POST, "/api/v1/pages", user, Some(&body))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{page}");
    page
}

pub async fn reorder(app: &TestApp, user: &TestUser, body: &Value) -> (StatusCode, Value) {
    app.call(Method::PUT, "/api/v1/pages/reorder", user, Some(body))
        .await
}

pub fn ids(pages: &[Value]) -> Vec<Value> {
    pages.iter().map(|p| p["id"].clone()).collect()
}

pub fn defaults(pages: &[Value]) -> usize {
    pages.iter().filter(|p| p["isDefault"] == true).count()
}

#[tokio::test]
async fn the_default_page_is_created_once_following_the_settings_view() {
    let app = spawn_app().await;
    let user = app.sign_up("pages@example.com").await;
    let patch = json!({ "baseRevision": 1, "patch": { "defaultCalendarView": "schedule" } });
    app.call(
        Method::PATCH,
        "/api/v1/users/me/settings",
        &user,
        Some(&patch),
    )
    .await;

    let first = list(&app, &user).await;
    assert_eq!(first.len(), 1);
    let page = &first[0];
    assert_eq!(page["name"], "My calendar");
    assert_eq!(page["isDefault"], true);
    assert_eq!(page["position"], 0);
    assert_eq!(page["revision"], 1);
    assert_eq!(
        page["config"],
        json!({
            "schemaVersion": 1,
            "icon": "house",
            "view": { "id": "agenda", "configVersion": 1, "groupBy": "day" },
            "calendarVisibility": { "mode": "all", "hiddenCalendarIds": [] },
            "filters": [],
            "showPolls": false,
        })
    );
    assert_eq!(list(&app, &user).await, first, "idempotent");
}

#[tokio::test]
async fn concurrent_first_reads_create_a_single_default() {
    let app = spawn_app().await;
    let user = app.sign_up("first-reads@example.com").await;
    let reads = futures::future::join_all((0..6).map(|_| list(&app, &user))).await;
    let id = reads[0][0]["id"].clone();
    for pages in &reads {
        assert_eq!(pages.len(), 1);
        assert_eq!(pages[0]["id"], id);
    }
}

#[tokio::test]
async fn pages_are_created_after_the_others_with_their_config_checked() {
    let app = spawn_app().await;
    let user = app.sign_up("create@example.com").await;
    let work = create(&app, &user, "  Work  ").await;
    assert_eq!(work["name"], "Work");
    assert_eq!(work["position"], 1, "after the default created on the way");
    assert_eq!(work["isDefault"], false);
    assert_eq!(work["revision"], 1);
    assert_eq!(
        work["config"]["view"],
        json!({ "id": "week", "configVersion": 1, "weekend": true, "density": "comfortable" })
    );
    assert_eq!(work["config"]["filters"], json!([]));
    assert!(work["config"].get("showPolls").is_none());
    let (status, read) = app
        .call(
            Method::GET,
            &format!("/api/v1/pages/{}", work["id"].as_str().expect("id")),
            &user,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(read, work);

    let mut unknown_key = config("day");
    unknown_key["colour"] = json!("red");
    let mut include_hidden = config("month");
    include_hidden["calendarVisibility"] = json!({ "mode": "include", "hiddenCalendarIds": [] });
    for body in [
        json!({ "name": "", "config": config("day") }),
        json!({ "name": "x".repeat(81), "config": config("day") }),
        json!({ "name": "Day", "config": config("year") }),
        json!({ "name": "Day", "config": unknown_key }),
        json!({ "name": "Month", "config": include_hidden }),
        json!({ "name": "Day", "config": config("day"), "position": 0 }),
        json!({ "name": "Day" }),
    ] {
        let (status, error) = app
            .call(Method::POST, "/api/v1/pages", &user, Some(&body))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            error["error"]
                .as_str()
                .expect("error")
                .starts_with("Request is missing valid page data.")
        );
    }
    assert_eq!(list(&app, &user).await.len(), 2);
}

#[tokio::test]
async fn saves_from_two_devices_conflict_on_the_revision() {
    let app = spawn_app().await;
    let user = app.sign_up("cas@example.com").await;
    let page = create(&app, &user, "Work").await;
    let path = format!("/api/v1/pages/{}", page["id"].as_str().expect("id"));
    let save = |name: &str, base: i64| json!({ "baseRevision": base, "name": name, "config": config("day") });

    let (status, saved) = app
        .call(Method::PATCH, &path, &user, Some(&save("Phone", 1)))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(saved["revision"], 2);
    assert_eq!(saved["name"], "Phone");
    assert_eq!(saved["config"]["view"]["density"], "comfortable");

    let (status, conflict) = app
        .call(Method::PATCH, &path, &user, Some(&save("Laptop", 1)))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(conflict["error"], "PAGE_CONFLICT");
    assert_eq!(conflict["message"], "Page changed on another device.");
    assert_eq!(conflict["current"], saved);
    assert!(conflict["requestId"].is_string());

    let (status, _) = app
        .call(Method::PATCH, &path, &user, Some(&save("Laptop", 0)))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let unknown = format!("/api/v1/pages/{}", uuid::Uuid::new_v4());
    let (status, error) = app
        .call(Method::PATCH, &unknown, &user, Some(&save("X", 1)))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error["error"], "Page not found.");
}

#[tokio::test]
async fn pages_are_private_to_their_owner() {
    let app = spawn_app().await;
    let owner = app.sign_up("private@example.com").await;
    let other = app.sign_up("curious@example.com").await;
    let page = create(&app, &owner, "Mine").await;
    let path = format!("/api/v1/pages/{}", page["id"].as_str().expect("id"));
    let (status, _) = app.call(Method::GET, &path, &other, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let save = json!({ "baseRevision": 1, "name": "Theirs", "config": config("day") });
    let (status, _) = app.call(Method::PATCH, &path, &other, Some(&save)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app.call(Method::DELETE, &path, &other, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let others = list(&app, &other).await;
    assert_eq!(others.len(), 1, "only their own default");
    let (status, _) = reorder(
        &app,
        &other,
        &json!({ "pageIds": [page["id"], others[0]["id"]] }),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, read) = app.call(Method::GET, &path, &owner, None).await;
    assert_eq!(
        (status, read["name"].clone()),
        (StatusCode::OK, json!("Mine"))
    );
}

#[tokio::test]
async fn reorder_renumbers_moves_the_default_and_bumps_what_changed() {
    let app = spawn_app().await;
    let user = app.sign_up("reorder@example.com").await;
    let home = list(&app, &user).await.remove(0);
    let work = create(&app, &user, "Work").await;
    let trips = create(&app, &user, "Trips").await;

    let (status, pages) = reorder(
        &app,
        &user,
        &json!({ "pageIds": [trips["id"], home["id"], work["id"]] }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let pages = pages.as_array().expect("array").clone();
    assert_eq!(
        ids(&pages),
        vec![trips["id"].clone(), home["id"].clone(), work["id"].clone()]
    );
    assert_eq!(
        pages
            .iter()
            .map(|p| p["position"].clone())
            .collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert_eq!(pages[1]["isDefault"], true, "the default stays");
    assert_eq!(pages[0]["revision"], 2);
    assert_eq!(pages[1]["revision"], 2);
    assert_eq!(pages[2]["revision"], 2);

    // Same order, new default: only the two flags change.
    let body =
        json!({ "pageIds": [trips["id"], home["id"], work["id"]], "defaultPageId": work["id"] });
    let (status, pages) = reorder(&app, &user, &body).await;
    assert_eq!(status, StatusCode::OK);
    let pages = pages.as_array().expect("array").clone();
    assert_eq!(defaults(&pages), 1);
    assert_eq!(pages[2]["isDefault"], true);
    assert_eq!(
        pages
            .iter()
            .map(|p| p["revision"].clone())
            .collect::<Vec<_>>(),
        [2, 3, 3]
    );

    for (body, message) in [
        (
            json!({ "pageIds": [trips["id"], home["id"]] }),
            "Page order must contain every active page exactly once.",
        ),
        (
            json!({ "pageIds": [trips["id"], home["id"], work["id"], uuid::Uuid::new_v4()] }),
            "Page order must contain every active page exactly once.",
        ),
        (
            json!({ "pageIds": [trips["id"], trips["id"], work["id"]] }),
            "Request is missing a valid page order.",
        ),
        (
            json!({ "pageIds": [] }),
            "Request is missing a valid page order.",
        ),
        (
            json!({ "pageIds": [trips["id"], home["id"], work["id"]], "defaultPageId": uuid::Uuid::new_v4() }),
            "Request is missing a valid page order.",
        ),
        (
            json!({ "pageIds": ["not-a-uuid"] }),
            "Request is missing a valid page order.",
        ),
    ] {
        let (status, error) = reorder(&app, &user, &body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            error["error"].as_str().expect("error").starts_with(message),
            "{error}"
        );
    }
    let after = list(&app, &user).await;
    assert_eq!(after, pages, "refused orders change nothing");
}

#[tokio::test]
async fn configs_drop_calendars_the_owner_can_no_longer_access() {
    let app = spawn_app().await;
    let owner = app.sign_up("cal-owner@example.com").await;
    let user = app.sign_up("cal-user@example.com").await;
    let kept = app.create_calendar(&user, "Kept").await["id"].clone();
    let shared = app.create_calendar(&owner, "Shared").await["id"].clone();
    let invite = app
        .create_invite(&owner, shared.as_str().expect("id"), None)
        .await;
    let joined = app
        .join(
            &user,
            shared.as_str().expect("id"),
            invite["id"].as_str().expect("token"),
        )
        .await;
    assert_eq!(joined.status(), StatusCode::OK);

    let mut include = config("month");
    include["calendarVisibility"] =
        json!({ "mode": "include", "calendarIds": [kept, shared, "never-existed"] });
    let body = json!({ "name": "Focus", "config": include });
    let (status, page) = app
        .call(Method::POST, "/api/v1/pages", &user, Some(&body))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        page["config"]["calendarVisibility"]["calendarIds"],
        json!([kept, shared])
    );

    let leave = format!("/api/v1/calendars/members/{}", shared.as_str().expect("id"));
    let (status, _) = app.call(Method::DELETE, &leave, &user, None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, read) = app
        .call(
            Method::GET,
            &format!("/api/v1/pages/{}", page["id"].as_str().expect("id")),
            &user,
            None,
        )
        .await;
    assert_eq!(
        read["config"]["calendarVisibility"]["calendarIds"],
        json!([kept])
    );
}

#[tokio::test]
async fn page_frames_reach_every_connection_of_the_owner_and_nobody_else() {
    let app = spawn_app().await;
    let user = app.sign_up("page-frames@example.com").await;
    let other = app.sign_up("page-other@example.com").await;
    list(&app, &user).await;
    let mut phone = app.stream(&user).await;
    let mut laptop = app.stream(&user).await;
    let mut others = app.stream(&other).await;

    let page = create(&app, &user, "Work").await;
    let path = format!("/api/v1/pages/{}", page["id"].as_str().expect("id"));
    let save = json!({ "baseRevision": 1, "name": "Office", "config": config("day") });
    let (_, saved) = app.call(Method::PATCH, &path, &user, Some(&save)).await;
    app.call(Method::DELETE, &path, &user, None).await;
    for connection in [&mut phone, &mut laptop] {
        assert_eq!(
            connection.next_frame().await,
            json!({ "type": "page_created", "payload": { "page": page } })
        );
        assert_eq!(
            connection.next_frame().await,
            json!({ "type": "page_updated", "payload": { "page": saved } })
        );
        assert_eq!(
            connection.next_frame().await,
            json!({ "type": "page_removed", "payload": { "id": page["id"] } })
        );
    }
    // The other user's first frame is their own default Page being created.
    let theirs = list(&app, &other).await;
    let frame = others.next_frame().await;
    assert_eq!(frame["type"], "page_created");
    assert_eq!(frame["payload"]["page"], theirs[0]);
}
