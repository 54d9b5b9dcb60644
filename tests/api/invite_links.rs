//! Invite links in public: the hand-off page behind a link, the app-site association that
//! lets the app open it, links mailed by members with the invite right, and the public
//! preview (rate limited per address; the next 30 days with recurrences expanded).

use chrono::Utc;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{TestUser, no_redirects, spawn_app, spawn_app_with};

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
async fn forwarded_addresses_count_only_from_trusted_proxies() {
    let preview = |app: &crate::helpers::TestApp, forwarded: String| {
        app.client
            .get(app.url(&format!(
                "/api/v1/calendars/tokens/{}",
                uuid::Uuid::new_v4()
            )))
            .header("x-forwarded-for", forwarded)
            .send()
    };
    // Off by default: a header per request changes nothing, the peer is the client.
    let app = spawn_app().await;
    for n in 0..30 {
        let response = preview(&app, format!("198.51.100.{n}"))
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
    let limited = preview(&app, "198.51.100.200".into())
        .await
        .expect("request");
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);

    // Behind a trusted proxy, the hop it added names the client; what the client wrote
    // itself to the left of it does not.
    let app = spawn_app_with(|s| s.auth.trust_proxy_headers = true).await;
    for n in 0..30 {
        let response = preview(&app, format!("10.9.9.{n}, 203.0.113.50"))
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
    let limited = preview(&app, "10.9.9.200, 203.0.113.50".into())
        .await
        .expect("request");
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    let another = preview(&app, "203.0.113.51".into()).await.expect("request");
    assert_eq!(another.status(), StatusCode::NOT_FOUND, "another client");
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
