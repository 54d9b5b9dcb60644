//! Settings: the defaults a new user reads, a missing row created on read and upserted on
//! replace, complete replacement that keeps what an older client leaves out,
//! compare-and-swap patches from two devices, the reminder/switch coupling, and
//! `settings_updated` on every connection of the user and nobody else's.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser, spawn_app};

async fn patch(app: &TestApp, user: &TestUser, base: i64, patch: Value) -> (StatusCode, Value) {
    let body = json!({ "baseRevision": base, "patch": patch });
    app.call(
        Method::PATCH,
        "/api/v1/users/me/settings",
        user,
        Some(&body),
    )
    .await
}

/// The settings body an older client sends: the required fields only.
fn older_client_settings() -> Value {
    json!({
        "notificationsOnByDefault": true,
        "defaultCalendarView": "week",
        "weekStartsOn": "sunday",
        "timeFormat": "12h",
        "dateFormat": "mdy",
    })
}

#[tokio::test]
async fn a_new_user_reads_the_defaults_as_a_row_and_as_a_document() {
    let app = spawn_app().await;
    let user = app.sign_up("settings@example.com").await;
    let (status, row) = app
        .call(Method::GET, "/api/v1/users/settings", &user, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(row["id"], user.id.as_str());
    assert_eq!(row["revision"], 1);
    assert_eq!(row["onboarded"], false);
    assert_eq!(row["timezone"], "UTC");
    assert_eq!(row["theme"], "system");
    assert_eq!(row["notificationEmails"]["eventChanged"], true);
    assert_eq!(
        row["defaultReminder"],
        json!({ "minutesBefore": 10, "allDay": { "daysBefore": 1, "atMinute": 1080 } })
    );
    assert!(row["createdAt"].as_str().is_some_and(|t| t.ends_with('Z')));

    let (status, document) = app
        .call(Method::GET, "/api/v1/users/settings/document", &user, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(document["revision"], 1);
    assert_eq!(document["updatedAt"], row["updatedAt"]);
    let value = document["value"].as_object().expect("value");
    assert!(!value.contains_key("id") && !value.contains_key("revision"));
    assert_eq!(value["dateFormat"], "dmy");

    let anonymous = app.get("/api/v1/users/settings").await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn an_older_clients_complete_settings_leave_newer_fields_intact() {
    let app = spawn_app().await;
    let user = app.sign_up("older@example.com").await;
    let newer = json!({
        "theme": "dark",
        "timezone": "Europe/Prague",
        "onboarded": true,
        "calendarOrder": ["b", "a"],
        "notificationEmails": { "eventChanged": false, "pollDecided": true },
    });
    let (status, _) = patch(&app, &user, 1, newer).await;
    assert_eq!(status, StatusCode::OK);

    let mut body = older_client_settings();
    body["someFutureField"] = json!("ignored");
    let (status, row) = app
        .call(Method::PUT, "/api/v1/users/settings", &user, Some(&body))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(row["revision"], 3);
    assert_eq!(row["defaultCalendarView"], "week");
    assert_eq!(row["weekStartsOn"], "sunday");
    assert_eq!(row["theme"], "dark");
    assert_eq!(row["timezone"], "Europe/Prague");
    assert_eq!(row["onboarded"], true);
    assert_eq!(row["calendarOrder"], json!(["b", "a"]));
    assert_eq!(row["notificationEmails"]["eventChanged"], false);
    assert!(
        row.get("someFutureField").is_none(),
        "unknown fields are not stored"
    );

    let (_, reread) = app
        .call(Method::GET, "/api/v1/users/settings", &user, None)
        .await;
    assert_eq!(reread, row);
}

#[tokio::test]
async fn invalid_settings_are_refused_without_a_change() {
    let app = spawn_app().await;
    let user = app.sign_up("invalid@example.com").await;
    let mut missing = older_client_settings();
    missing
        .as_object_mut()
        .expect("object")
        .remove("timeFormat");
    let mut bad_enum = older_client_settings();
    bad_enum["theme"] = json!("chartreuse");
    let mut bad_zone = older_client_settings();
    bad_zone["timezone"] = json!("Mars/Olympus");
    for body in [missing, bad_enum, bad_zone, json!([]), json!("settings")] {
        let (status, error) = app
            .call(Method::PUT, "/api/v1/users/settings", &user, Some(&body))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            error["error"]
                .as_str()
                .expect("error")
                .starts_with("Request is missing valid settings data")
        );
        assert!(error["requestId"].is_string());
    }
    for body in [
        json!({ "baseRevision": 0, "patch": { "theme": "dark" } }),
        json!({ "baseRevision": 1, "patch": {} }),
        json!({ "baseRevision": 1, "patch": { "unknown": true } }),
        json!({ "baseRevision": 1, "patch": { "weekStartsOn": 3 } }),
        json!({ "baseRevision": 1, "patch": { "theme": "dark" }, "extra": 1 }),
        json!({ "patch": { "theme": "dark" } }),
    ] {
        let (status, error) = app
            .call(
                Method::PATCH,
                "/api/v1/users/me/settings",
                &user,
                Some(&body),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            error["error"]
                .as_str()
                .expect("error")
                .starts_with("Request is missing a valid settings patch.")
        );
    }
    let (_, document) = app
        .call(Method::GET, "/api/v1/users/settings/document", &user, None)
        .await;
    assert_eq!(document["revision"], 1, "nothing changed");
}

#[tokio::test]
async fn two_devices_patching_from_the_same_revision_conflict() {
    let app = spawn_app().await;
    let user = app.sign_up("devices@example.com").await;
    let (status, phone) = patch(&app, &user, 1, json!({ "theme": "dark", "unknown": 1 })).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(phone["revision"], 2);
    assert_eq!(phone["value"]["theme"], "dark");
    assert!(phone["value"].get("unknown").is_none());

    // The laptop still believes revision 1.
    let (status, conflict) = patch(&app, &user, 1, json!({ "theme": "light" })).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(conflict["error"], "SettingsConflict");
    assert_eq!(conflict["message"], "Settings changed on another device.");
    assert!(conflict["requestId"].is_string());
    assert_eq!(conflict["current"]["revision"], 2);
    assert_eq!(conflict["current"]["value"]["theme"], "dark");
    assert!(conflict["current"]["value"].get("id").is_none());
    assert_eq!(conflict["current"], phone);

    let (status, laptop) = patch(&app, &user, 2, json!({ "theme": "light" })).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(laptop["revision"], 3);
}

#[tokio::test]
async fn concurrent_patches_from_one_revision_let_exactly_one_through() {
    let app = spawn_app().await;
    let user = app.sign_up("race@example.com").await;
    let attempts = ["dark", "light", "system", "dark", "light", "system"]
        .map(|theme| patch(&app, &user, 1, json!({ "theme": theme })));
    let outcomes = futures::future::join_all(attempts).await;
    let won = outcomes
        .iter()
        .filter(|(s, _)| *s == StatusCode::OK)
        .count();
    let lost = outcomes
        .iter()
        .filter(|(s, _)| *s == StatusCode::CONFLICT)
        .count();
    assert_eq!((won, lost), (1, 5));
    let (_, document) = app
        .call(Method::GET, "/api/v1/users/settings/document", &user, None)
        .await;
    assert_eq!(document["revision"], 2);
}

#[tokio::test]
async fn the_default_reminder_and_the_notifications_switch_stay_in_step() {
    let app = spawn_app().await;
    let user = app.sign_up("coupling@example.com").await;
    let silent = json!({ "minutesBefore": null, "allDay": null });
    let (_, document) = patch(&app, &user, 1, json!({ "defaultReminder": silent })).await;
    assert_eq!(document["value"]["notificationsOnByDefault"], false);

    let (_, document) = patch(&app, &user, 2, json!({ "notificationsOnByDefault": true })).await;
    assert_eq!(
        document["value"]["defaultReminder"],
        json!({ "minutesBefore": 10, "allDay": { "daysBefore": 1, "atMinute": 1080 } })
    );

    let mut body = older_client_settings();
    body["notificationsOnByDefault"] = json!(false);
    let (_, row) = app
        .call(Method::PUT, "/api/v1/users/settings", &user, Some(&body))
        .await;
    assert_eq!(row["defaultReminder"], silent);

    let (_, reminders) = app
        .call(Method::GET, "/api/v1/reminders", &user, None)
        .await;
    assert_eq!(reminders["default"], silent);
}

#[tokio::test]
async fn settings_changes_reach_every_connection_of_the_user_and_nobody_else() {
    let app = spawn_app().await;
    let user = app.sign_up("frames@example.com").await;
    let other = app.sign_up("other@example.com").await;
    let mut phone = app.stream(&user).await;
    let mut laptop = app.stream(&user).await;
    let mut others = app.stream(&other).await;

    let (status, _) = patch(&app, &user, 1, json!({ "onboarded": true })).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app
        .call(
            Method::PUT,
            "/api/v1/users/settings",
            &user,
            Some(&older_client_settings()),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    for connection in [&mut phone, &mut laptop] {
        assert_eq!(
            connection.next_frame().await,
            json!({ "type": "settings_updated", "payload": { "revision": 2 } })
        );
        assert_eq!(
            connection.next_frame().await,
            json!({ "type": "settings_updated", "payload": { "revision": 3 } })
        );
    }

    // The other user's first frame is their own change: nothing of the first user's leaked.
    let (status, _) = patch(&app, &other, 1, json!({ "theme": "dark" })).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        others.next_frame().await,
        json!({ "type": "settings_updated", "payload": { "revision": 2 } })
    );
}

/// Deletes `user`'s settings row behind the server's back; whether there was one.
async fn delete_settings_row(app: &TestApp, user: &TestUser) -> bool {
    use sea_orm::EntityTrait;
    let db = app.db_connection().await;
    let deleted = entities::user_settings::Entity::delete_by_id(user.id.clone())
        .exec(&db)
        .await
        .expect("delete the settings row");
    deleted.rows_affected == 1
}

/// `user`'s settings row as stored, if any.
async fn stored_settings(app: &TestApp, user: &TestUser) -> Option<entities::user_settings::Model> {
    use sea_orm::EntityTrait;
    let db = app.db_connection().await;
    entities::user_settings::Entity::find_by_id(user.id.clone())
        .one(&db)
        .await
        .expect("read the settings row")
}

#[tokio::test]
async fn a_missing_settings_row_is_created_on_read_and_upserted_on_put() {
    let app = spawn_app().await;
    let user = app.sign_up("lazy@example.com").await;
    assert!(delete_settings_row(&app, &user).await, "sign-up made one");

    // A read creates the defaults.
    let (status, row) = app
        .call(Method::GET, "/api/v1/users/settings", &user, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{row}");
    assert_eq!(row["revision"], 1);
    assert_eq!(row["onboarded"], false);
    assert_eq!(row["timezone"], "UTC");
    assert_eq!(row["dateFormat"], "dmy");
    let stored = stored_settings(&app, &user)
        .await
        .expect("created by the read");
    assert_eq!(stored.revision, 1);
    assert_eq!(stored.value["timezone"], "UTC");

    // A complete replacement creates the row too.
    assert!(delete_settings_row(&app, &user).await);
    let (status, row) = app
        .call(
            Method::PUT,
            "/api/v1/users/settings",
            &user,
            Some(&older_client_settings()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{row}");
    assert_eq!(row["defaultCalendarView"], "week");
    assert_eq!(row["weekStartsOn"], "sunday");
    assert_eq!(row["timezone"], "UTC", "omitted fields get their defaults");
    let stored = stored_settings(&app, &user)
        .await
        .expect("upserted by the PUT");
    assert_eq!(stored.value["weekStartsOn"], "sunday");
    assert_eq!(row["revision"], json!(stored.revision));
    let (_, reread) = app
        .call(Method::GET, "/api/v1/users/settings", &user, None)
        .await;
    assert_eq!(reread, row);
}
