//! The rules invites are checked by: a join needs a usable invite of that calendar (unexpired,
//! not exhausted, not revoked), checked before anything is written, and invite fields are
//! validated.

use chrono::Utc;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::spawn_app;
use crate::sharing::members;

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
        id: Set(bowline::domain::ids::InviteId::generate()),
        calendar_id: Set(calendar_id.into()),
        created_by: Set(Some(s.owner.id.as_str().into())),
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
