//! Attendance: idempotent answers, who may answer, the attendee list without emails, and
//! `attendance_changed` to every reader.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{TestUser, event_body, spawn_app};

#[tokio::test]
async fn attendance_is_idempotent_and_reaches_every_reader() {
    let app = spawn_app().await;
    let s = shared(&app, "attend").await;
    let body = event_body(&[&s.calendar], "Party", 20);
    app.create_event(&s.owner, &body).await;
    let id = body["id"].as_str().expect("id");
    let mut editor_stream = app.stream(&s.editor).await;
    let answer = |user: &TestUser, body: Value| {
        app.as_user(
            Method::PUT,
            &format!("/api/v1/events/{id}/attendance"),
            user,
        )
        .json(&body)
        .send()
    };
    for _ in 0..2 {
        let response = answer(&s.viewer, json!({ "status": "maybe" }))
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::OK);
    }
    let frame = editor_stream.next_frame().await;
    assert_eq!(frame["type"], "attendance_changed");
    assert_eq!(frame["payload"]["eventID"], id);
    assert_eq!(
        frame["payload"]["attendees"],
        json!([
            { "id": s.owner.id, "name": "Test User", "image": null, "status": "going" },
            { "id": s.viewer.id, "name": "Test User", "image": null, "status": "maybe" }
        ])
    );
    let declined: Value = answer(&s.editor, json!({ "attending": false }))
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        declined.as_array().expect("array").len(),
        2,
        "none removes (there was no answer)"
    );
    let declined: Value = answer(&s.editor, json!({ "status": "declined" }))
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert_eq!(declined[2]["status"], "declined", "declined comes last");
    let none: Value = answer(&s.viewer, json!({ "status": "none" }))
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert!(
        none.as_array()
            .expect("array")
            .iter()
            .all(|a| a["id"] != s.viewer.id.as_str())
    );
    assert_eq!(
        answer(&s.viewer, json!({ "status": "perhaps" }))
            .await
            .expect("request")
            .status(),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        answer(&s.outsider, json!({ "status": "going" }))
            .await
            .expect("request")
            .status(),
        StatusCode::FORBIDDEN
    );
    let anonymous = app
        .client
        .get(app.url(&format!("/api/v1/events/{id}/attendees")))
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

/// Answers that reach the event's actor together are answered by one batch, which reads the
/// attendee list once: each answer still lists the attendees as its own answer left them.
/// Every list holds its own answer and the creator, is in the order every list has (going,
/// maybe, declined), and of any two lists one holds the other (the batch applied its
/// answers one after another); the last read lists them all.
#[tokio::test]
async fn answers_answered_together_each_list_the_answers_before_them() {
    let app = spawn_app().await;
    let s = shared(&app, "together").await;
    let invite = app.create_invite(&s.owner, &s.calendar, None).await;
    let token = invite["id"].as_str().expect("token");
    let mut people = vec![s.editor.clone(), s.viewer.clone()];
    for n in 0..6 {
        let user = app.sign_up(&format!("answer-{n}@example.com")).await;
        assert_eq!(
            app.join(&user, &s.calendar, token).await.status(),
            StatusCode::OK
        );
        people.push(user);
    }
    let body = event_body(&[&s.calendar], "Launch", 20);
    app.create_event(&s.owner, &body).await;
    let id = body["id"].as_str().expect("id");
    let statuses = ["going", "maybe", "declined"];
    let answers = futures::future::join_all(people.iter().enumerate().map(|(n, user)| {
        let status = statuses[n % statuses.len()];
        let request = app
            .as_user(
                Method::PUT,
                &format!("/api/v1/events/{id}/attendance"),
                user,
            )
            .json(&json!({ "status": status }))
            .send();
        async move {
            let response = request.await.expect("request");
            assert_eq!(response.status(), StatusCode::OK);
            let list: Vec<Value> = response.json().await.expect("JSON");
            (user.id.clone(), status, list)
        }
    }))
    .await;
    let rank = |status: &str| match status {
        "going" => 0,
        "maybe" => 1,
        _ => 2,
    };
    let entries = |list: &[Value]| -> Vec<(String, String)> {
        list.iter()
            .map(|a| {
                (
                    a["id"].as_str().expect("id").to_owned(),
                    a["status"].as_str().expect("status").to_owned(),
                )
            })
            .collect()
    };
    for (user, status, list) in &answers {
        let entries = entries(list);
        assert!(
            entries.contains(&(user.clone(), (*status).to_owned())),
            "an answer lists its own: {entries:?}"
        );
        assert!(entries.contains(&(s.owner.id.clone(), "going".to_owned())));
        let ranks: Vec<i32> = entries.iter().map(|(_, status)| rank(status)).collect();
        assert!(ranks.is_sorted(), "going, maybe, declined: {entries:?}");
    }
    for (_, _, a) in &answers {
        for (_, _, b) in &answers {
            let (a, b) = (entries(a), entries(b));
            let (small, large) = if a.len() <= b.len() {
                (&a, &b)
            } else {
                (&b, &a)
            };
            assert!(
                small.iter().all(|entry| large.contains(entry)),
                "one list holds the other: {small:?} / {large:?}"
            );
        }
    }
    let all = app
        .get_json_as(&s.owner, &format!("/api/v1/events/{id}/attendees"))
        .await;
    let all = all.as_array().expect("array");
    assert_eq!(all.len(), people.len() + 1);
    let longest = answers
        .iter()
        .map(|(_, _, list)| list)
        .max_by_key(|list| list.len())
        .expect("answers");
    assert_eq!(longest, all, "the last answer lists what a read lists");
}
