//! The one-active-default rule for Pages: deleting the default passes it on, the rule holds
//! under concurrent creates, deletes and reorders (counted in the database before any read
//! could repair it), and the database itself refuses a second active default (the partial
//! unique index), whatever the server does.

use reqwest::{Method, StatusCode};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter,
};
use serde_json::json;

use crate::helpers::{TestApp, TestUser, spawn_app};
use crate::pages::{config, create, defaults, ids, list, reorder};

/// `user`'s active default Pages as stored.
async fn active_defaults(app: &TestApp, user: &TestUser) -> u64 {
    let db = app.db_connection().await;
    entities::pages::Entity::find()
        .filter(entities::pages::Column::UserId.eq(user.id.as_str()))
        .filter(entities::pages::Column::IsDefault.eq(true))
        .filter(entities::pages::Column::DeletedAt.is_null())
        .count(&db)
        .await
        .expect("count")
}

#[tokio::test]
async fn the_default_invariant_holds_under_concurrent_creates_deletes_and_reorders() {
    let app = spawn_app().await;
    let user = app.sign_up("invariant@example.com").await;
    let home = list(&app, &user).await.remove(0);
    let mut pages = vec![home];
    for n in 0..4 {
        pages.push(create(&app, &user, &format!("Page {n}")).await);
    }
    let all_ids = ids(&pages);
    let mut reversed = all_ids.clone();
    reversed.reverse();
    let tasks = vec![
        Box::pin(async {
            app.call(
                Method::DELETE,
                &format!("/api/v1/pages/{}", all_ids[0].as_str().expect("id")),
                &user,
                None,
            )
            .await
            .0
        }) as std::pin::Pin<Box<dyn std::future::Future<Output = StatusCode>>>,
        Box::pin(async {
            reorder(
                &app,
                &user,
                &json!({ "pageIds": reversed, "defaultPageId": all_ids[2] }),
            )
            .await
            .0
        }),
        Box::pin(async {
            reorder(
                &app,
                &user,
                &json!({ "pageIds": all_ids, "defaultPageId": all_ids[3] }),
            )
            .await
            .0
        }),
        Box::pin(async {
            app.call(
                Method::DELETE,
                &format!("/api/v1/pages/{}", all_ids[3].as_str().expect("id")),
                &user,
                None,
            )
            .await
            .0
        }),
        Box::pin(async {
            create(&app, &user, "Late").await;
            StatusCode::CREATED
        }),
        Box::pin(async {
            create(&app, &user, "Later").await;
            StatusCode::CREATED
        }),
    ];
    let outcomes = futures::future::join_all(tasks).await;
    for status in outcomes {
        assert!(
            [
                StatusCode::OK,
                StatusCode::CREATED,
                StatusCode::BAD_REQUEST,
                StatusCode::NOT_FOUND
            ]
            .contains(&status),
            "{status}"
        );
    }
    // Counted in the database before anything reads the Pages: a list repairs a missing
    // default, so counting after one would hide a change that left none.
    assert_eq!(active_defaults(&app, &user).await, 1);
    let after = list(&app, &user).await;
    assert_eq!(defaults(&after), 1, "{after:?}");
    assert_eq!(active_defaults(&app, &user).await, 1);
}

#[tokio::test]
async fn deleting_the_default_passes_it_to_the_next_survivor() {
    let app = spawn_app().await;
    let user = app.sign_up("delete@example.com").await;
    let home = list(&app, &user).await.remove(0);
    let work = create(&app, &user, "Work").await;
    let trips = create(&app, &user, "Trips").await;
    let mut stream = app.stream(&user).await;

    let path = format!("/api/v1/pages/{}", home["id"].as_str().expect("id"));
    let (status, body) = app.call(Method::DELETE, &path, &user, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({ "id": home["id"] }));
    assert_eq!(
        stream.next_frame().await,
        json!({ "type": "page_removed", "payload": { "id": home["id"] } })
    );
    let heir = stream.next_frame().await;
    assert_eq!(heir["type"], "page_updated");
    assert_eq!(heir["payload"]["page"]["id"], work["id"]);
    assert_eq!(heir["payload"]["page"]["isDefault"], true);
    assert_eq!(heir["payload"]["page"]["revision"], 2);

    let (status, _) = app.call(Method::GET, &path, &user, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app.call(Method::DELETE, &path, &user, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let pages = list(&app, &user).await;
    assert_eq!(ids(&pages), vec![work["id"].clone(), trips["id"].clone()]);
    assert_eq!(defaults(&pages), 1);

    // Deleting a page that is not the default moves nothing.
    let trips_path = format!("/api/v1/pages/{}", trips["id"].as_str().expect("id"));
    let (status, _) = app.call(Method::DELETE, &trips_path, &user, None).await;
    assert_eq!(status, StatusCode::OK);
    let pages = list(&app, &user).await;
    assert_eq!(pages.len(), 1);
    assert_eq!(pages[0]["revision"], 2);
}

/// A Page row for `user`, written straight to the database.
fn page_row(user: &TestUser, is_default: bool, deleted: bool) -> entities::pages::ActiveModel {
    let now = chrono::Utc::now();
    entities::pages::ActiveModel {
        id: Set(bowline::domain::ids::PageId::generate()),
        user_id: Set(user.id.as_str().into()),
        name: Set("Inserted".into()),
        position: Set(9),
        is_default: Set(is_default),
        config: Set(config("week")),
        revision: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        deleted_at: Set(deleted.then_some(now)),
    }
}

#[tokio::test]
async fn the_database_refuses_a_second_active_default() {
    let app = spawn_app().await;
    let user = app.sign_up("constraint@example.com").await;
    let other = app.sign_up("constraint-other@example.com").await;
    assert_eq!(defaults(&list(&app, &user).await), 1);
    let db = app.db_connection().await;

    let second = page_row(&user, true, false).insert(&db).await;
    assert!(second.is_err(), "a second active default was stored");
    assert_eq!(active_defaults(&app, &user).await, 1);
    // Deleted defaults, other Pages and other users' defaults are not in the way.
    page_row(&user, true, true)
        .insert(&db)
        .await
        .expect("a deleted default");
    page_row(&user, false, false)
        .insert(&db)
        .await
        .expect("a Page that is not the default");
    page_row(&other, true, false)
        .insert(&db)
        .await
        .expect("another user's default");
    assert_eq!(active_defaults(&app, &user).await, 1);
    let (status, _) = app.call(Method::GET, "/api/v1/pages", &user, None).await;
    assert_eq!(status, StatusCode::OK);
}
