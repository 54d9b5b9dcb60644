//! The machinery of the permission-matrix tests (`permissions`, `event_permissions`): the
//! five callers (owner, editor, viewer, non-member, anonymous), a request that checks that
//! a refusal wrote nothing (every table a calendar or event route writes, compared row by
//! row before and after), and the loop over a matrix of expected statuses.

use std::fmt::Debug;

use reqwest::{Method, StatusCode};
use sea_orm::{DatabaseConnection, EntityTrait};
use serde_json::Value;

use crate::helpers::{TestApp, TestUser};

/// The callers of a matrix, signed up once.
pub struct People {
    pub owner: TestUser,
    pub editor: TestUser,
    pub viewer: TestUser,
    pub outsider: TestUser,
}

impl People {
    /// Signs up the four users.
    pub async fn sign_up(app: &TestApp, tag: &str) -> Self {
        Self {
            owner: app.sign_up(&format!("{tag}-owner@example.com")).await,
            editor: app.sign_up(&format!("{tag}-editor@example.com")).await,
            viewer: app.sign_up(&format!("{tag}-viewer@example.com")).await,
            outsider: app.sign_up(&format!("{tag}-outsider@example.com")).await,
        }
    }

    /// The five callers in matrix order.
    pub fn callers(&self) -> [(&'static str, Option<&TestUser>); 5] {
        [
            ("owner", Some(&self.owner)),
            ("editor", Some(&self.editor)),
            ("viewer", Some(&self.viewer)),
            ("non-member", Some(&self.outsider)),
            ("anonymous", None),
        ]
    }
}

async fn rows<E>(conn: &DatabaseConnection) -> Vec<String>
where
    E: EntityTrait,
    E::Model: Debug,
{
    let mut rows: Vec<String> = E::find()
        .all(conn)
        .await
        .expect("rows")
        .iter()
        .map(|row| format!("{row:?}"))
        .collect();
    rows.sort();
    rows
}

/// Every row a calendar, member, invite or event route can write.
async fn snapshot(conn: &DatabaseConnection) -> Vec<Vec<String>> {
    use entities::*;
    vec![
        rows::<calendars::Entity>(conn).await,
        rows::<calendar_members::Entity>(conn).await,
        rows::<invites::Entity>(conn).await,
        rows::<events::Entity>(conn).await,
        rows::<calendar_events::Entity>(conn).await,
        rows::<event_attendees::Entity>(conn).await,
        rows::<event_visibility_losses::Entity>(conn).await,
        rows::<event_view_changes::Entity>(conn).await,
        rows::<pending_notifications::Entity>(conn).await,
    ]
}

/// Sends `method path` (with `body` as JSON) as `caller` (`None`: no credentials); if it
/// is refused (4xx), asserts that nothing was written. Returns the status and the body.
pub async fn send(
    app: &TestApp,
    caller: Option<&TestUser>,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> (StatusCode, Value) {
    let conn = app.db_connection().await;
    let before = snapshot(&conn).await;
    let mut request = match caller {
        Some(user) => app.as_user(method.clone(), path, user),
        None => app.client.request(method.clone(), app.url(path)),
    };
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    let text = response.text().await.expect("body");
    if status.is_client_error() {
        assert_eq!(
            snapshot(&conn).await,
            before,
            "{method} {path} was refused ({status}) but wrote"
        );
    }
    let _ = conn.close().await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Calls every route of `matrix` as each caller (a fresh fixture each time, built by
/// `call`) and fails with every mismatch at once.
pub async fn check<R: Copy + Debug>(
    people: &People,
    matrix: &[(R, [u16; 5])],
    call: impl AsyncFn(R, Option<&TestUser>) -> StatusCode,
) {
    let mut mismatches = Vec::new();
    for (route, expected) in matrix {
        for ((who, caller), expected) in people.callers().into_iter().zip(expected) {
            let status = call(*route, caller).await;
            if status.as_u16() != *expected {
                mismatches.push(format!(
                    "{route:?} as {who}: expected {expected}, got {status}"
                ));
            }
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
