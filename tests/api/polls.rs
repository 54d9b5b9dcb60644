//! Scheduling polls on the original's wire: anyone makes a poll (a session is optional),
//! anyone with its link answers by name and address (replacing an address's answers needs
//! a session that proved it), the organizer (or whoever proves the organizer's address, who
//! then owns it) decides, closes or deletes it; deciding makes an all-day event through the
//! calendar's actor (frames, provider writes) and mails the participants who want it.
//! Addresses never appear in an answer; bad input is a 4xx with `{error, requestId}`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};

use crate::helpers::google::{google_app, google_id, link, mirror_id, until_frame};
use crate::helpers::{TestApp, TestUser, no_redirects, spawn_app, spawn_app_with_mail};
use crate::support::google_api::GoogleApi;
use crate::support::smtp::{ReceivedMail, SmtpSink};

const POLLS: &str = "/api/v1/scheduling/polls";
const LAYER: &str = "/api/v1/scheduling/polls/calendar";

/// Sends `method path` (as `user` when given, with `body` as JSON when given): the status,
/// the body as JSON (`Null` when not JSON) and as text.
async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    user: Option<&TestUser>,
    body: Option<&Value>,
) -> (StatusCode, Value, String) {
    let mut request = app.client.request(method, app.url(path));
    if let Some(user) = user {
        request = request.bearer_auth(&user.token);
    }
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    let text = response.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    )
}

/// Makes a poll (201 expected): its summary.
async fn create(app: &TestApp, user: Option<&TestUser>, body: &Value) -> Value {
    let (status, poll, text) = send(app, Method::POST, POLLS, user, Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{text}");
    poll
}

/// A poll body offering `dates`, made by `email` (nobody signed in).
fn anonymous_poll(title: &str, email: &str, dates: &[&str]) -> Value {
    json!({
        "title": title,
        "name": "Olga",
        "email": email,
        "slots": dates.iter().map(|date| json!({ "date": date })).collect::<Vec<_>>(),
    })
}

/// A poll body offering `dates`, for a signed-in organizer.
fn own_poll(title: &str, dates: &[&str]) -> Value {
    json!({
        "title": title,
        "slots": dates.iter().map(|date| json!({ "date": date })).collect::<Vec<_>>(),
    })
}

fn token_of(poll: &Value) -> String {
    poll["token"].as_str().expect("token").to_owned()
}

fn id_of(value: &Value) -> String {
    value["id"].as_str().expect("id").to_owned()
}

/// The public page of the poll with `token` (200 expected), as `user` when given.
async fn public(app: &TestApp, token: &str, user: Option<&TestUser>) -> Value {
    let (status, poll, text) = send(
        app,
        Method::GET,
        &format!("/api/v1/public/polls/{token}"),
        user,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(!text.contains("example.com"), "no address is shown: {text}");
    poll
}

/// The ids of the poll's slots, in order.
async fn slot_ids(app: &TestApp, token: &str) -> Vec<String> {
    public(app, token, None).await["slots"]
        .as_array()
        .expect("slots")
        .iter()
        .map(id_of)
        .collect()
}

/// Answers the poll with `token`.
async fn vote(
    app: &TestApp,
    token: &str,
    user: Option<&TestUser>,
    body: &Value,
) -> (StatusCode, Value, String) {
    send(
        app,
        Method::PUT,
        &format!("/api/v1/public/polls/{token}/votes"),
        user,
        Some(body),
    )
    .await
}

/// Answers the poll with `token` (200 expected): the poll as the voter sees it.
async fn voted(app: &TestApp, token: &str, user: Option<&TestUser>, body: &Value) -> Value {
    let (status, poll, text) = vote(app, token, user, body).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(!text.contains("example.com"), "no address is shown: {text}");
    poll
}

fn ballot(name: &str, email: &str, answers: &[(&str, &str)]) -> Value {
    json!({
        "name": name,
        "email": email,
        "votes": answers
            .iter()
            .map(|(slot, value)| json!({ "slotID": slot, "value": value }))
            .collect::<Vec<_>>(),
    })
}

fn answers_only(answers: &[(&str, &str)]) -> Value {
    json!({
        "votes": answers
            .iter()
            .map(|(slot, value)| json!({ "slotID": slot, "value": value }))
            .collect::<Vec<_>>(),
    })
}

/// The error body's message, after checking its shape.
fn error_of(status: StatusCode, body: &Value, text: &str) -> String {
    assert!(
        status.is_client_error(),
        "a client error, not {status}: {text}"
    );
    assert!(body["requestId"].is_string(), "{text}");
    body["error"].as_str().expect("error text").to_owned()
}

/// A password user whose address is verified (by the mailed link).
async fn verified(app: &TestApp, sink: &SmtpSink, email: &str) -> TestUser {
    let user = app.sign_up(email).await;
    let sent = app
        .as_user(Method::POST, "/api/auth/send-verification-email", &user)
        .json(&json!({ "email": email }))
        .send()
        .await
        .expect("request");
    assert_eq!(sent.status(), StatusCode::OK);
    let link = sink
        .next_mail()
        .await
        .link_starting_with(&format!("{}/api/auth/verify-email?token=", app.base));
    let hop = no_redirects().get(&link).send().await.expect("verify");
    assert!(hop.status().is_redirection(), "{}", hop.status());
    assert_eq!(
        app.session(&user.token).await["user"]["emailVerified"],
        true
    );
    user
}

/// Turns `user`'s `notificationEmails.pollDecided` off.
async fn no_poll_mails(app: &TestApp, user: &TestUser) {
    let (_, settings) = app
        .call(Method::GET, "/api/v1/users/settings", user, None)
        .await;
    let revision = settings["revision"].as_i64().expect("revision");
    let (status, _) = app
        .call(
            Method::PATCH,
            "/api/v1/users/me/settings",
            user,
            Some(&json!({
                "baseRevision": revision,
                "patch": { "notificationEmails": { "eventChanged": true, "pollDecided": false } },
            })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

/// `user`'s personal calendar.
async fn personal_calendar(app: &TestApp, user: &TestUser) -> String {
    let calendars = app.get_json_as(user, "/api/v1/calendars").await;
    id_of(
        calendars
            .as_array()
            .expect("calendars")
            .iter()
            .find(|calendar| calendar["isDefault"] == true)
            .expect("a personal calendar"),
    )
}

/// The events `user` reads with `title`.
async fn events_titled(app: &TestApp, user: &TestUser, title: &str) -> Vec<Value> {
    app.read_events(user, "").await["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|event| event["title"] == title)
        .cloned()
        .collect()
}

/// Decides the poll `poll_id` for `slot` as `user`.
async fn decide(
    app: &TestApp,
    user: &TestUser,
    poll_id: &str,
    body: &Value,
) -> (StatusCode, Value, String) {
    send(
        app,
        Method::POST,
        &format!("{POLLS}/{poll_id}/decide"),
        Some(user),
        Some(body),
    )
    .await
}

/// Mails from the sink until one is addressed to `marker`: those before it.
async fn mails_until(sink: &SmtpSink, marker: &str) -> Vec<ReceivedMail> {
    let mut before = Vec::new();
    loop {
        let mail = sink.next_mail().await;
        if mail.to == [marker] {
            return before;
        }
        before.push(mail);
    }
}

/// Asks for a sign-in code for `email`: a mail that marks a point in the sink.
async fn mail_marker(app: &TestApp, email: &str) {
    let asked = app
        .post_json(
            "/api/auth/email-otp/send-verification-otp",
            &json!({ "email": email, "type": "sign-in" }),
        )
        .await;
    assert_eq!(asked.status(), StatusCode::OK);
}

#[tokio::test]
async fn an_anonymous_poll_takes_answers_by_name_and_never_shows_an_address() {
    let app = spawn_app().await;
    let long = "Team lunch ".repeat(20);
    let poll = create(
        &app,
        None,
        &json!({
            "title": long,
            "name": "Olga",
            "email": " Olga@Example.com ",
            "slots": [
                { "date": "2026-07-02" },
                { "date": "2026-07-01", "start": "ignored" },
                { "start": "2026-07-03T08:00:00+02:00" },
                { "date": "2026-07-01" },
            ],
            "approximateStartTime": "12:30",
            "description": "  Somewhere nice  ",
            "someFutureField": true,
        }),
    )
    .await;
    let keys: BTreeSet<&str> = poll
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "approximateStartTime",
            "calendarID",
            "chosenSlotID",
            "closed",
            "closedAt",
            "createdAt",
            "deadline",
            "durationMinutes",
            "id",
            "title",
            "token",
            "url",
        ])
    );
    let title: String = long.chars().take(120).collect();
    assert_eq!(poll["title"], title.trim_end(), "cut to 120 characters");
    let token = token_of(&poll);
    assert_eq!(token.len(), 32);
    assert!(
        token
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert!(
        poll["url"]
            .as_str()
            .expect("url")
            .ends_with(&format!("/s/{token}"))
    );
    assert_eq!(poll["durationMinutes"], 1440);
    assert_eq!(poll["closed"], false);
    assert_eq!(poll["closedAt"], Value::Null);
    assert_eq!(poll["calendarID"], Value::Null);
    assert_eq!(poll["chosenSlotID"], Value::Null);
    assert_eq!(poll["approximateStartTime"], "12:30");
    assert!(
        poll["createdAt"]
            .as_str()
            .expect("createdAt")
            .ends_with('Z')
    );

    let page = public(&app, &token, None).await;
    assert_eq!(page["title"], title.trim_end());
    assert_eq!(page["description"], "Somewhere nice");
    assert_eq!(page["people"], json!([]));
    assert_eq!(page["mine"], json!({}));
    assert_eq!(page["mineID"], Value::Null);
    assert_eq!(page["viewerRole"], Value::Null);
    assert_eq!(page["respondents"], 0);
    assert_eq!(page["closed"], false);
    let slots = page["slots"].as_array().expect("slots");
    let starts: Vec<&str> = slots
        .iter()
        .map(|s| s["start"].as_str().expect("start"))
        .collect();
    let ends: Vec<&str> = slots
        .iter()
        .map(|s| s["end"].as_str().expect("end"))
        .collect();
    assert_eq!(
        starts,
        [
            "2026-07-01T12:00:00.000Z",
            "2026-07-02T12:00:00.000Z",
            "2026-07-03T06:00:00.000Z"
        ],
        "a date is noon UTC, the same day once"
    );
    assert_eq!(
        ends,
        [
            "2026-07-02T12:00:00.000Z",
            "2026-07-03T12:00:00.000Z",
            "2026-07-04T06:00:00.000Z"
        ],
        "every slot lasts a day"
    );
    let ids: Vec<String> = slots.iter().map(id_of).collect();

    let ann = voted(
        &app,
        &token,
        None,
        &ballot(
            "Ann",
            "ann@example.com",
            &[(&ids[0], "yes"), (&ids[1], "if-needed")],
        ),
    )
    .await;
    assert_eq!(ann["mineID"], "1");
    assert_eq!(
        ann["mine"],
        json!({ ids[0].as_str(): "yes", ids[1].as_str(): "if-needed" })
    );
    assert_eq!(ann["respondents"], 1);
    let bob = voted(
        &app,
        &token,
        None,
        &ballot("  Bob\r\n ", "BOB@example.com", &[(&ids[0], "no")]),
    )
    .await;
    assert_eq!(bob["mineID"], "2");
    assert_eq!(
        bob["people"],
        json!([
            { "id": "1", "name": "Ann", "answers": { ids[0].as_str(): "yes", ids[1].as_str(): "if-needed" } },
            { "id": "2", "name": "Bob", "answers": { ids[0].as_str(): "no" } },
        ])
    );
    assert_eq!(bob["slots"][0]["yes"], json!(["Ann"]));
    assert_eq!(bob["slots"][0]["no"], json!(["Bob"]));
    assert_eq!(bob["slots"][1]["ifNeeded"], json!(["Ann"]));
    assert_eq!(bob["slots"][2]["yes"], json!([]));

    // Ann's address answered already: nobody without a session that proved it replaces it.
    let (status, body, text) = vote(
        &app,
        &token,
        None,
        &ballot("Not Ann", "ann@example.com", &[(&ids[0], "no")]),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(error_of(status, &body, &text).contains("Sign in"));
    let page = public(&app, &token, None).await;
    assert_eq!(page["people"][0]["name"], "Ann");
    assert_eq!(page["slots"][0]["yes"], json!(["Ann"]));

    // An empty list is an answer too: a participant without answers.
    let zoe = voted(&app, &token, None, &ballot("Zoe", "zoe@example.com", &[])).await;
    assert_eq!(zoe["people"].as_array().expect("people").len(), 3);
    assert_eq!(zoe["respondents"], 2);
    assert_eq!(zoe["mine"], json!({}));
    assert_eq!(zoe["mineID"], "3");
}

#[tokio::test]
async fn only_a_session_that_proved_the_address_replaces_its_answers() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let poll = create(
        &app,
        None,
        &anonymous_poll("Dinner", "olga@example.com", &["2026-07-01", "2026-07-02"]),
    )
    .await;
    let token = token_of(&poll);
    let ids = slot_ids(&app, &token).await;
    voted(
        &app,
        &token,
        None,
        &ballot("Ann", "ann@example.com", &[(&ids[0], "yes")]),
    )
    .await;

    // A session whose address is not Ann's, or not proven, changes nothing of hers.
    let mallory = app.sign_up("mallory@example.com").await;
    let (status, _, _) = vote(
        &app,
        &token,
        Some(&mallory),
        &ballot("Ann", "ann@example.com", &[(&ids[0], "no")]),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Their own address (from the account) answers once; unproven, not twice.
    let first = voted(
        &app,
        &token,
        Some(&mallory),
        &answers_only(&[(&ids[1], "yes")]),
    )
    .await;
    assert_eq!(first["mineID"], "2");
    assert_eq!(first["people"][1]["name"], "Test User");
    assert_eq!(
        first["viewerRole"],
        Value::Null,
        "an unproven address has no role"
    );
    let (status, _, _) = vote(
        &app,
        &token,
        Some(&mallory),
        &answers_only(&[(&ids[1], "no")]),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Ann proves her address and replaces her answers.
    let ann = verified(&app, &sink, "ann@example.com").await;
    let replaced = voted(
        &app,
        &token,
        Some(&ann),
        &json!({ "name": "Ann B.", "votes": [{ "slotID": ids[0], "value": "no" }] }),
    )
    .await;
    assert_eq!(replaced["mineID"], "1");
    assert_eq!(replaced["mine"], json!({ ids[0].as_str(): "no" }));
    assert_eq!(replaced["people"][0]["name"], "Ann B.");
    assert_eq!(replaced["viewerRole"], "participant");
    let read = public(&app, &token, Some(&ann)).await;
    assert_eq!(read["mineID"], "1");
    assert_eq!(read["viewerRole"], "participant");

    // A proven reader of an open poll joins its grid, without answers.
    let carl = verified(&app, &sink, "carl@example.com").await;
    let read = public(&app, &token, Some(&carl)).await;
    assert_eq!(read["people"].as_array().expect("people").len(), 3);
    assert_eq!(read["mineID"], "3");
    assert_eq!(read["mine"], json!({}));
    assert_eq!(read["respondents"], 2);
    // The organizer, once proven, reads it as the organizer.
    let olga = verified(&app, &sink, "olga@example.com").await;
    assert_eq!(
        public(&app, &token, Some(&olga)).await["viewerRole"],
        "organizer"
    );
}

#[tokio::test]
async fn bad_polls_are_refused_with_a_clear_400() {
    let app = spawn_app().await;
    let base = anonymous_poll("Picnic", "olga@example.com", &["2026-07-01"]);
    let with = |field: &str, value: Value| {
        let mut body = base.clone();
        if value.is_null() {
            body.as_object_mut().expect("object").remove(field);
        } else {
            body[field] = value;
        }
        body
    };
    let sixty_one: Vec<Value> = (0..61)
        .map(|day| json!({ "date": format!("2026-{:02}-{:02}", 1 + day / 28, 1 + day % 28) }))
        .collect();
    let cases = [
        (with("title", json!("")), "A poll needs a title"),
        (with("title", json!(" \r\n ")), "A poll needs a title"),
        (with("title", Value::Null), "A poll needs a title"),
        (with("slots", json!([])), "at least one day"),
        (with("slots", Value::Null), "at least one day"),
        (with("slots", json!(sixty_one)), "at most 60 days"),
        (
            with("slots", json!([{ "date": "2026-02-30" }])),
            "valid start",
        ),
        (
            with("slots", json!([{ "start": "tomorrow" }])),
            "valid start",
        ),
        (with("slots", json!([{}])), "valid start"),
        (
            with("slots", json!([{ "date": "9999-12-31" }])),
            "valid start",
        ),
        (with("approximateStartTime", json!("24:00")), "HH:mm"),
        (with("approximateStartTime", json!("7:30")), "HH:mm"),
        (
            with("email", json!("olga@example.com\r\nBcc: all@example.com")),
            "valid email",
        ),
        (with("email", json!("olga@example.com\n")), "valid email"),
        (with("email", json!("not an address")), "valid email"),
        (with("email", Value::Null), "valid email"),
        (with("name", json!("  ")), "Enter your name"),
        (with("name", Value::Null), "Enter your name"),
        (with("deadline", json!("soon")), "deadline"),
        (with("calendarId", json!("nope")), "calendarId"),
    ];
    for (body, expected) in &cases {
        let (status, answer, text) = send(&app, Method::POST, POLLS, None, Some(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {text}");
        let message = error_of(status, &answer, &text);
        assert!(message.contains(expected), "{body}: {message}");
    }
    // Shapes that are not a poll at all.
    for body in [
        with("title", json!(5)),
        with("slots", json!(["2026-07-01"])),
        with("slots", json!({ "date": "2026-07-01" })),
    ] {
        let (status, answer, text) = send(&app, Method::POST, POLLS, None, Some(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {text}");
        error_of(status, &answer, &text);
    }
    let (status, answer, text) = {
        let response = app
            .client
            .post(app.url(POLLS))
            .header("content-type", "application/json")
            .body("{\"title\":")
            .send()
            .await
            .expect("request");
        let status = response.status();
        let text = response.text().await.expect("text");
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
            text,
        )
    };
    assert_eq!(status, StatusCode::BAD_REQUEST);
    error_of(status, &answer, &text);

    // A calendar needs a session, and one the caller may add events to.
    let anonymous = with("calendarId", json!(uuid::Uuid::new_v4().to_string()));
    let (status, _, text) = send(&app, Method::POST, POLLS, None, Some(&anonymous)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{text}");
    let owner = app.sign_up("owner@example.com").await;
    let stranger = app.sign_up("stranger@example.com").await;
    let theirs = id_of(&app.create_calendar(&owner, "Owner's").await);
    let (status, _, text) = send(
        &app,
        Method::POST,
        POLLS,
        Some(&stranger),
        Some(&with("calendarId", json!(theirs))),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");

    // What is fine: sixty days, no hint, unknown fields, a calendar of one's own.
    let sixty: Vec<Value> = sixty_one[..60].to_vec();
    let poll = create(
        &app,
        Some(&owner),
        &json!({
            "title": "Sixty", "slots": sixty, "approximateStartTime": "",
            "calendarId": theirs, "unknown": { "nested": [1, 2] },
        }),
    )
    .await;
    assert_eq!(poll["calendarID"], theirs.as_str());
    assert_eq!(poll["approximateStartTime"], Value::Null);
    assert_eq!(slot_ids(&app, &token_of(&poll)).await.len(), 60);
}

#[tokio::test]
async fn hostile_answers_are_refused_without_touching_the_poll() {
    let app = spawn_app().await;
    let a = create(
        &app,
        None,
        &anonymous_poll("A", "olga@example.com", &["2026-07-01", "2026-07-02"]),
    )
    .await;
    let b = create(
        &app,
        None,
        &anonymous_poll("B", "olga@example.com", &["2026-07-01"]),
    )
    .await;
    let (a_token, b_token) = (token_of(&a), token_of(&b));
    let a_slots = slot_ids(&app, &a_token).await;
    let b_slots = slot_ids(&app, &b_token).await;

    let refused = [
        ballot("Eve", "eve@example.com", &[(&b_slots[0], "yes")]),
        ballot(
            "Eve",
            "eve@example.com",
            &[(&a_slots[0], "yes"), (&b_slots[0], "yes")],
        ),
        ballot(
            "Eve",
            "eve@example.com",
            &[(&a_slots[0], "yes"), (&a_slots[0], "no")],
        ),
        ballot("Eve", "eve@example.com", &[(&a_slots[0], "maybe")]),
        ballot("Eve", "eve@example.com", &[("not-a-slot", "yes")]),
        ballot(
            "Eve",
            "eve@example.com\r\nBcc: all@example.com",
            &[(&a_slots[0], "yes")],
        ),
        ballot("Eve", "", &[(&a_slots[0], "yes")]),
        ballot(" ", "eve@example.com", &[(&a_slots[0], "yes")]),
        json!({ "name": "Eve", "email": "eve@example.com", "votes": { "a": "yes" } }),
        json!({ "name": "Eve", "email": "eve@example.com", "votes": [{ "slotID": a_slots[0], "value": 1 }] }),
    ];
    for body in &refused {
        let (status, answer, text) = vote(&app, &a_token, None, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {text}");
        error_of(status, &answer, &text);
    }

    // Ten thousand answers are refused quickly, whatever they say.
    for votes in [
        vec![json!({ "slotID": a_slots[0], "value": "yes" }); 10_000],
        (0..10_000)
            .map(|_| json!({ "slotID": uuid::Uuid::new_v4().to_string(), "value": "yes" }))
            .collect(),
    ] {
        let started = Instant::now();
        let (status, answer, text) = vote(
            &app,
            &a_token,
            None,
            &json!({ "name": "Eve", "email": "eve@example.com", "votes": votes }),
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(3), "quickly");
        assert!(status.is_client_error(), "{status}: {text}");
        error_of(status, &answer, &text);
    }
    let page = public(&app, &a_token, None).await;
    assert_eq!(page["people"], json!([]), "nothing was stored");

    // Tokens: only the exact one names a poll.
    for token in [
        "abc".to_owned(),
        a_token.to_uppercase(),
        "0".repeat(32),
        format!("{a_token}0"),
    ] {
        let (status, answer, text) = send(
            &app,
            Method::GET,
            &format!("/api/v1/public/polls/{token}"),
            None,
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{token}: {text}");
        error_of(status, &answer, &text);
        let (status, _, _) = vote(&app, &token, None, &ballot("Eve", "eve@example.com", &[])).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{token}");
    }
    assert_eq!(public(&app, &b_token, None).await["title"], "B");
}

#[tokio::test]
async fn deciding_makes_the_all_day_event_for_the_calendars_members_and_closes_the_poll() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let olga = verified(&app, &sink, "olga@example.com").await;
    let member = app.sign_up("member@example.com").await;
    let team = id_of(&app.create_calendar(&olga, "Team").await);
    app.join_with_invite(&olga, &team, &member).await;
    let mut body = own_poll("Offsite", &["2026-07-01", "2026-07-02"]);
    body["calendarId"] = json!(team);
    body["description"] = json!("Bring boots");
    let poll = create(&app, Some(&olga), &body).await;
    assert_eq!(poll["calendarID"], team.as_str());
    let (poll_id, token) = (id_of(&poll), token_of(&poll));
    let days = slot_ids(&app, &token).await;
    voted(
        &app,
        &token,
        None,
        &ballot("Ann", "ann@example.com", &[(&days[1], "yes")]),
    )
    .await;
    let ben = verified(&app, &sink, "ben@example.com").await;
    voted(
        &app,
        &token,
        Some(&ben),
        &json!({ "name": "Ben", "votes": [
            { "slotID": days[0], "value": "if-needed" },
            { "slotID": days[1], "value": "yes" },
        ] }),
    )
    .await;

    let mut stream = app.stream(&member).await;
    let (status, decision, text) = decide(
        &app,
        &olga,
        &poll_id,
        &json!({ "slotId": days[1], "calendarId": team }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let event_id = decision["eventId"].as_str().expect("eventId").to_owned();
    assert_eq!(decision, json!({ "eventId": event_id, "slotId": days[1] }));

    let frame = until_frame(&mut stream, "event_created").await;
    let event = &frame["payload"];
    assert_eq!(event["id"], event_id.as_str());
    assert_eq!(event["title"], "Offsite");
    assert_eq!(event["description"], "Bring boots");
    assert_eq!(event["isAllDay"], true);
    assert_eq!(event["start"], "2026-07-02T00:00:00.000Z");
    assert_eq!(event["end"], "2026-07-02T00:00:00.000Z");
    assert_eq!(event["calendars"], json!([team]));
    assert_eq!(event["color"], "#c8553d");
    let read = events_titled(&app, &member, "Offsite").await;
    assert_eq!(read.len(), 1);
    assert_eq!(read[0]["id"], event_id.as_str());

    let page = public(&app, &token, None).await;
    assert_eq!(page["chosenSlotID"], days[1].as_str());
    assert_eq!(page["closed"], true);
    let (status, mine, _) = send(&app, Method::GET, POLLS, Some(&olga), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(mine.as_array().expect("polls").len(), 1);
    assert_eq!(mine[0]["chosenSlotID"], days[1].as_str());
    assert_eq!(mine[0]["closed"], true);
    assert!(mine[0]["closedAt"].is_string());

    // Decided is decided: no second decision, no closing, no more answers.
    let (status, answer, text) = decide(&app, &olga, &poll_id, &json!({ "slotId": days[0] })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error_of(status, &answer, &text).contains("already decided"));
    let (status, _, _) = send(
        &app,
        Method::POST,
        &format!("{POLLS}/{poll_id}/close"),
        Some(&olga),
        Some(&json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _, _) = vote(
        &app,
        &token,
        None,
        &ballot("Late", "late@example.com", &[(&days[0], "yes")]),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // The organizer's layer leaves the decided poll out; a participant's keeps the day.
    let (_, layer, _) = send(&app, Method::GET, LAYER, Some(&olga), None).await;
    assert_eq!(layer, json!([]));
    let (_, layer, _) = send(&app, Method::GET, LAYER, Some(&ben), None).await;
    assert_eq!(layer.as_array().expect("layer").len(), 1);
    assert_eq!(layer[0]["role"], "participant");
    assert_eq!(layer[0]["respondents"], 2);
    assert_eq!(
        layer[0]["days"],
        json!([{
            "date": "2026-07-02", "id": days[1], "yes": 2, "ifNeeded": 0, "no": 0,
            "start": "2026-07-02T12:00:00.000Z", "end": "2026-07-03T12:00:00.000Z",
        }])
    );

    // Everyone who answered is told, with the day and the poll's page.
    let mut mails = vec![sink.next_mail().await, sink.next_mail().await];
    mails.sort_by(|a, b| a.to.cmp(&b.to));
    let to: Vec<&str> = mails.iter().map(|mail| mail.to[0].as_str()).collect();
    assert_eq!(to, ["ann@example.com", "ben@example.com"]);
    for mail in &mails {
        assert_eq!(mail.subject(), "Offsite has a time");
        let text = mail.text();
        assert!(text.contains("Thursday 2 July 2026 at 12:00 UTC"), "{text}");
        assert!(text.contains(&format!("/s/{token}")), "{text}");
    }

    // Deleting the poll leaves the event.
    let (status, _, text) = send(
        &app,
        Method::DELETE,
        &format!("{POLLS}/{poll_id}"),
        Some(&olga),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{text}");
    let (status, _, _) = send(
        &app,
        Method::GET,
        &format!("/api/v1/public/polls/{token}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(events_titled(&app, &member, "Offsite").await.len(), 1);
}

#[tokio::test]
async fn the_decided_mail_honours_each_accounts_poll_decided_setting() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let poll = create(
        &app,
        None,
        &anonymous_poll("Quiz night", "org@example.com", &["2026-09-10"]),
    )
    .await;
    let token = token_of(&poll);
    let day = slot_ids(&app, &token).await.remove(0);
    let quiet = verified(&app, &sink, "quiet@example.com").await;
    no_poll_mails(&app, &quiet).await;
    voted(
        &app,
        &token,
        Some(&quiet),
        &json!({ "name": "Quiet", "votes": [{ "slotID": day, "value": "yes" }] }),
    )
    .await;
    // Answered without signing in, but the address is a proven account's that said no.
    let unlinked = verified(&app, &sink, "unlinked@example.com").await;
    no_poll_mails(&app, &unlinked).await;
    voted(
        &app,
        &token,
        None,
        &ballot("Unlinked", "unlinked@example.com", &[(&day, "no")]),
    )
    .await;
    let loud = verified(&app, &sink, "loud@example.com").await;
    voted(
        &app,
        &token,
        Some(&loud),
        &json!({ "name": "Loud", "votes": [{ "slotID": day, "value": "yes" }] }),
    )
    .await;
    voted(
        &app,
        &token,
        None,
        &ballot("Guest", "guest@example.com", &[(&day, "yes")]),
    )
    .await;

    // The organizer proves the poll's address and decides into their own calendar.
    let org = verified(&app, &sink, "org@example.com").await;
    let (status, decision, text) =
        decide(&app, &org, &id_of(&poll), &json!({ "slotId": day })).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let events = events_titled(&app, &org, "Quiz night").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["id"], decision["eventId"]);
    assert_eq!(
        events[0]["calendars"],
        json!([personal_calendar(&app, &org).await])
    );

    // The decided mails were queued before the answer, and the mailer sends several at once,
    // in no set order: a marker sent now could overtake them. The two wanted come first; a
    // marker sent after them comes after any other mail queued with them.
    let mut mails = vec![sink.next_mail().await, sink.next_mail().await];
    mail_marker(&app, "marker@example.com").await;
    mails.extend(mails_until(&sink, "marker@example.com").await);
    let mut to: Vec<&str> = mails.iter().map(|mail| mail.to[0].as_str()).collect();
    to.sort_unstable();
    assert_eq!(to, ["guest@example.com", "loud@example.com"]);
    assert!(
        mails
            .iter()
            .all(|mail| mail.subject() == "Quiz night has a time")
    );
}

#[tokio::test]
async fn only_the_organizer_or_whoever_proves_its_address_decides_closes_or_deletes() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let poll = create(
        &app,
        None,
        &anonymous_poll("Hike", "owner@example.com", &["2026-08-01", "2026-08-02"]),
    )
    .await;
    let (poll_id, token) = (id_of(&poll), token_of(&poll));
    let days = slot_ids(&app, &token).await;
    let stranger = app.sign_up("stranger@example.com").await;
    let owner = app.sign_up("owner@example.com").await;
    let calendar = personal_calendar(&app, &owner).await;
    let attempts = [
        (
            Method::POST,
            format!("{POLLS}/{poll_id}/decide"),
            Some(json!({ "slotId": days[0], "calendarId": calendar })),
        ),
        (Method::POST, format!("{POLLS}/{poll_id}/close"), None),
        (Method::DELETE, format!("{POLLS}/{poll_id}"), None),
    ];
    // A stranger, and the poll's address not yet proven, may not.
    for user in [&stranger, &owner] {
        for (method, path, body) in &attempts {
            let (status, answer, text) =
                send(&app, method.clone(), path, Some(user), body.as_ref()).await;
            assert_eq!(
                status,
                StatusCode::FORBIDDEN,
                "{} {path}: {text}",
                user.email
            );
            assert!(error_of(status, &answer, &text).contains("Only the organizer"));
        }
    }
    // Without a session: 401; an unknown or malformed id: 404.
    for (method, path, body) in &attempts {
        let (status, _, _) = send(&app, method.clone(), path, None, body.as_ref()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
    }
    for id in [uuid::Uuid::new_v4().to_string(), "not-a-poll".to_owned()] {
        let (status, _, text) = send(
            &app,
            Method::POST,
            &format!("{POLLS}/{id}/close"),
            Some(&owner),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{text}");
    }
    for path in [POLLS, LAYER] {
        let (status, _, _) = send(&app, Method::GET, path, None, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
    }

    // Proven, the address's owner closes it, and it is theirs from then on.
    let (_, listed, _) = send(&app, Method::GET, POLLS, Some(&owner), None).await;
    assert_eq!(listed, json!([]), "an unproven address lists nothing");
    let sent = app
        .as_user(Method::POST, "/api/auth/send-verification-email", &owner)
        .json(&json!({ "email": "owner@example.com" }))
        .send()
        .await
        .expect("request");
    assert_eq!(sent.status(), StatusCode::OK);
    let link = sink
        .next_mail()
        .await
        .link_starting_with(&format!("{}/api/auth/verify-email?token=", app.base));
    no_redirects().get(&link).send().await.expect("verify");
    let (_, listed, _) = send(&app, Method::GET, POLLS, Some(&owner), None).await;
    assert_eq!(listed.as_array().expect("polls").len(), 1);
    let (status, closed, text) = send(
        &app,
        Method::POST,
        &format!("{POLLS}/{poll_id}/close"),
        Some(&owner),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(closed, json!({ "closed": true }));
    let (status, answer, text) = send(
        &app,
        Method::POST,
        &format!("{POLLS}/{poll_id}/close"),
        Some(&owner),
        Some(&json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error_of(status, &answer, &text).contains("already closed"));
    let page = public(&app, &token, Some(&owner)).await;
    assert_eq!(page["closed"], true);
    assert_eq!(page["chosenSlotID"], Value::Null);
    assert_eq!(page["viewerRole"], "organizer");
    let (status, _, _) = vote(
        &app,
        &token,
        None,
        &ballot("Late", "late@example.com", &[(&days[0], "yes")]),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _, _) = send(
        &app,
        Method::DELETE,
        &format!("{POLLS}/{poll_id}"),
        Some(&stranger),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = send(
        &app,
        Method::DELETE,
        &format!("{POLLS}/{poll_id}"),
        Some(&owner),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _, _) = send(
        &app,
        Method::DELETE,
        &format!("{POLLS}/{poll_id}"),
        Some(&owner),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_poll_whose_calendar_was_deleted_decides_into_the_organizers_own() {
    let app = spawn_app().await;
    let org = app.sign_up("org@example.com").await;
    let side = app.create_calendar(&org, "Side").await;
    let mut body = own_poll("Retro", &["2026-10-05"]);
    body["calendarId"] = side["id"].clone();
    let poll = create(&app, Some(&org), &body).await;
    let deleted = app
        .as_user(Method::DELETE, "/api/v1/calendars", &org)
        .json(&json!({ "id": side["id"], "name": "Side", "color": "#7A8BA3" }))
        .send()
        .await
        .expect("request");
    assert_eq!(deleted.status(), StatusCode::OK);
    let (_, listed, _) = send(&app, Method::GET, POLLS, Some(&org), None).await;
    assert_eq!(listed[0]["calendarID"], Value::Null);

    let day = slot_ids(&app, &token_of(&poll)).await.remove(0);
    // A calendar the organizer only views is refused, and the poll stays open.
    let other = app.sign_up("other@example.com").await;
    let theirs = id_of(&app.create_calendar(&other, "Theirs").await);
    app.join_with_invite(&other, &theirs, &org).await;
    let (status, answer, text) = decide(
        &app,
        &org,
        &id_of(&poll),
        &json!({ "slotId": day, "calendarId": theirs }),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    error_of(status, &answer, &text);
    assert_eq!(public(&app, &token_of(&poll), None).await["closed"], false);

    let (status, _, text) = decide(&app, &org, &id_of(&poll), &json!({ "slotId": day })).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let events = events_titled(&app, &org, "Retro").await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0]["calendars"],
        json!([personal_calendar(&app, &org).await])
    );
    assert_eq!(events[0]["start"], "2026-10-05T00:00:00.000Z");

    // A day of another poll is not this poll's.
    let other = create(&app, Some(&org), &own_poll("Other", &["2026-10-06"])).await;
    let (status, answer, text) =
        decide(&app, &org, &id_of(&other), &json!({ "slotId": day })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error_of(status, &answer, &text).contains("not on this poll"));
    let (status, _, _) = decide(&app, &org, &id_of(&other), &json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn decisions_racing_each_other_make_one_event() {
    let app = spawn_app().await;
    let org = app.sign_up("org@example.com").await;
    let poll = create(
        &app,
        Some(&org),
        &own_poll("Race", &["2026-11-01", "2026-11-02"]),
    )
    .await;
    let days = slot_ids(&app, &token_of(&poll)).await;
    let poll_id = id_of(&poll);
    let attempts = (0..6).map(|n| {
        let (app, org, poll_id) = (&app, &org, &poll_id);
        let day = days[n % 2].clone();
        async move { decide(app, org, poll_id, &json!({ "slotId": day })).await.0 }
    });
    let statuses = futures::future::join_all(attempts).await;
    assert_eq!(
        statuses
            .iter()
            .filter(|status| **status == StatusCode::OK)
            .count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses
            .iter()
            .all(|status| *status == StatusCode::OK || *status == StatusCode::BAD_REQUEST)
    );
    assert_eq!(events_titled(&app, &org, "Race").await.len(), 1);
}

#[tokio::test]
async fn the_calendar_layer_counts_each_day_for_organizers_and_participants_only() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let org = app.sign_up("org@example.com").await;
    let poll = create(
        &app,
        Some(&org),
        &own_poll("Layer", &["2026-12-01", "2026-12-02"]),
    )
    .await;
    let token = token_of(&poll);
    let days = slot_ids(&app, &token).await;
    let pat = verified(&app, &sink, "pat@example.com").await;
    voted(
        &app,
        &token,
        Some(&pat),
        &json!({ "name": "Pat", "votes": [{ "slotID": days[0], "value": "yes" }] }),
    )
    .await;
    voted(
        &app,
        &token,
        None,
        &ballot("X", "x@example.com", &[(&days[0], "yes")]),
    )
    .await;
    voted(
        &app,
        &token,
        None,
        &ballot("Y", "y@example.com", &[(&days[0], "no")]),
    )
    .await;
    voted(
        &app,
        &token,
        None,
        &ballot("Z", "z@example.com", &[(&days[1], "if-needed")]),
    )
    .await;

    // Past its deadline, or closed: out of the layer.
    let mut late = own_poll("Late", &["2026-12-03"]);
    late["deadline"] = json!("2020-01-01T00:00:00.000Z");
    let late = create(&app, Some(&org), &late).await;
    assert_eq!(late["closed"], true);
    let late_page = public(&app, &token_of(&late), None).await;
    assert_eq!(late_page["closed"], true);
    let late_day = late_page["slots"][0]["id"].as_str().expect("id").to_owned();
    let (status, answer, text) = vote(
        &app,
        &token_of(&late),
        None,
        &ballot("X", "x@example.com", &[(&late_day, "yes")]),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error_of(status, &answer, &text).contains("closed for answers"));
    let shut = create(&app, Some(&org), &own_poll("Shut", &["2026-12-04"])).await;
    let (status, _, _) = send(
        &app,
        Method::POST,
        &format!("{POLLS}/{}/close", id_of(&shut)),
        Some(&org),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let (status, layer, text) = send(&app, Method::GET, LAYER, Some(&org), None).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(!text.contains("example.com"));
    assert_eq!(layer.as_array().expect("layer").len(), 1, "{layer}");
    let entry = &layer[0];
    assert_eq!(entry["id"], poll["id"]);
    assert_eq!(entry["token"], token.as_str());
    assert_eq!(entry["role"], "organizer");
    assert_eq!(entry["respondents"], 4);
    assert_eq!(entry["closed"], false);
    let counts: Vec<(i64, i64, i64)> = entry["days"]
        .as_array()
        .expect("days")
        .iter()
        .map(|day| {
            (
                day["yes"].as_i64().expect("yes"),
                day["ifNeeded"].as_i64().expect("ifNeeded"),
                day["no"].as_i64().expect("no"),
            )
        })
        .collect();
    assert_eq!(counts, [(2, 0, 1), (0, 1, 0)]);
    assert_eq!(entry["days"][0]["date"], "2026-12-01");

    let (_, layer, _) = send(&app, Method::GET, LAYER, Some(&pat), None).await;
    assert_eq!(layer.as_array().expect("layer").len(), 1);
    assert_eq!(layer[0]["role"], "participant");
    let stranger = verified(&app, &sink, "stranger@example.com").await;
    let (_, layer, _) = send(&app, Method::GET, LAYER, Some(&stranger), None).await;
    assert_eq!(layer, json!([]));

    // The organizer's list has all three, newest first.
    let (_, listed, _) = send(&app, Method::GET, POLLS, Some(&org), None).await;
    let titles: Vec<&str> = listed
        .as_array()
        .expect("polls")
        .iter()
        .map(|poll| poll["title"].as_str().expect("title"))
        .collect();
    assert_eq!(titles, ["Shut", "Late", "Layer"]);
    let (_, listed, _) = send(&app, Method::GET, POLLS, Some(&pat), None).await;
    assert_eq!(listed, json!([]));
}

/// How many rows `table` holds.
async fn rows(app: &TestApp, table: &str) -> i64 {
    let db = app.db_connection().await;
    db.query_one_raw(Statement::from_string(
        db.get_database_backend(),
        format!("SELECT count(*) AS n FROM {table}"),
    ))
    .await
    .expect("count")
    .expect("row")
    .try_get::<i64>("", "n")
    .expect("n")
}

/// How many participants are linked to an account.
async fn linked_participants(app: &TestApp) -> i64 {
    let db = app.db_connection().await;
    db.query_one_raw(Statement::from_string(
        db.get_database_backend(),
        "SELECT count(*) AS n FROM scheduling_participants WHERE user_id IS NOT NULL",
    ))
    .await
    .expect("count")
    .expect("row")
    .try_get::<i64>("", "n")
    .expect("n")
}

async fn delete_account(app: &TestApp, user: &TestUser) {
    let deleted = app
        .as_user(Method::POST, "/api/auth/delete-user", user)
        .json(&json!({ "password": user.password }))
        .send()
        .await
        .expect("request");
    assert_eq!(deleted.status(), StatusCode::OK);
}

#[tokio::test]
async fn deleting_an_account_takes_its_polls_and_unlinks_its_answers() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let org = app.sign_up("org@example.com").await;
    let poll = create(&app, Some(&org), &own_poll("Farewell", &["2026-07-01"])).await;
    let token = token_of(&poll);
    let day = slot_ids(&app, &token).await.remove(0);
    let pat = verified(&app, &sink, "pat@example.com").await;
    voted(
        &app,
        &token,
        Some(&pat),
        &json!({ "name": "Pat", "votes": [{ "slotID": day, "value": "yes" }] }),
    )
    .await;
    voted(
        &app,
        &token,
        None,
        &ballot("Guest", "guest@example.com", &[(&day, "no")]),
    )
    .await;
    assert_eq!(linked_participants(&app).await, 1);

    delete_account(&app, &pat).await;
    assert_eq!(linked_participants(&app).await, 0, "the link is cleared");
    let page = public(&app, &token, None).await;
    assert_eq!(page["slots"][0]["yes"], json!(["Pat"]), "the answer stays");

    delete_account(&app, &org).await;
    let (status, _, _) = send(
        &app,
        Method::GET,
        &format!("/api/v1/public/polls/{token}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for table in [
        "scheduling_polls",
        "scheduling_slots",
        "scheduling_participants",
        "scheduling_votes",
    ] {
        assert_eq!(rows(&app, table).await, 0, "{table}");
    }
}

#[tokio::test]
async fn polls_are_rate_limited_per_client_address() {
    let app = spawn_app().await;
    let body = anonymous_poll("Many", "olga@example.com", &["2026-07-01"]);
    for _ in 0..30 {
        create(&app, None, &body).await;
    }
    let (status, answer, text) = send(&app, Method::POST, POLLS, None, Some(&body)).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{text}");
    error_of(status, &answer, &text);

    let unknown = "0".repeat(32);
    for _ in 0..60 {
        let (status, _, _) = send(
            &app,
            Method::GET,
            &format!("/api/v1/public/polls/{unknown}"),
            None,
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    let (status, _, _) = send(
        &app,
        Method::GET,
        &format!("/api/v1/public/polls/{unknown}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    // Answers are counted apart from reads.
    for _ in 0..60 {
        let (status, _, _) = vote(&app, &unknown, None, &json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    let (status, _, _) = vote(&app, &unknown, None, &json!({})).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn public_routes_treat_bad_credentials_as_nobody_and_refuse_foreign_cookie_changes() {
    let app = spawn_app().await;
    let poll = create(
        &app,
        None,
        &anonymous_poll("Cookies", "olga@example.com", &["2026-07-01"]),
    )
    .await;
    let token = token_of(&poll);
    let day = slot_ids(&app, &token).await.remove(0);
    let nobody = TestUser {
        id: String::new(),
        email: String::new(),
        password: String::new(),
        token: "no-such-session".to_owned(),
        signed: String::new(),
    };
    assert_eq!(
        public(&app, &token, Some(&nobody)).await["viewerRole"],
        Value::Null
    );
    voted(
        &app,
        &token,
        Some(&nobody),
        &ballot("Ann", "ann@example.com", &[(&day, "yes")]),
    )
    .await;
    // Made without a session, with a stale one: the poll is nobody's.
    let made = create(
        &app,
        Some(&nobody),
        &anonymous_poll("Stale", "olga@example.com", &["2026-07-01"]),
    )
    .await;
    assert_eq!(made["calendarID"], Value::Null);

    // A signed-in visitor's cookie sent by another site changes nothing.
    let user = app.sign_up("visitor@example.com").await;
    let cookie = format!("better-auth.session_token={}", user.signed);
    let foreign = app
        .client
        .put(app.url(&format!("/api/v1/public/polls/{token}/votes")))
        .header("cookie", &cookie)
        .header("origin", "https://elsewhere.example")
        .json(&ballot("Visitor", "visitor@example.com", &[(&day, "no")]))
        .send()
        .await
        .expect("request");
    assert_eq!(foreign.status(), StatusCode::FORBIDDEN);
    let own = app
        .client
        .put(app.url(&format!("/api/v1/public/polls/{token}/votes")))
        .header("cookie", &cookie)
        .header("origin", app.base.as_str())
        .json(&ballot("Visitor", "visitor@example.com", &[(&day, "no")]))
        .send()
        .await
        .expect("request");
    assert_eq!(own.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_decision_in_a_google_mirror_is_written_to_google() {
    let fake = GoogleApi::start().await;
    let ana_at_google = fake.add_user("ana.work@gmail.com", "Ana Work");
    let work = fake.add_calendar(&ana_at_google, "Work", "owner");
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;
    let mut body = own_poll("Launch", &["2026-08-01"]);
    body["calendarId"] = json!(mirror);
    let poll = create(&app, Some(&ana), &body).await;
    let day = slot_ids(&app, &token_of(&poll)).await.remove(0);
    let (status, decision, text) =
        decide(&app, &ana, &id_of(&poll), &json!({ "slotId": day })).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let at_google = google_id(decision["eventId"].as_str().expect("eventId"));
    fake.wait_for_request("the insert", |r| {
        r.method == "POST"
            && r.status == 200
            && r.body
                .as_ref()
                .is_some_and(|b| b["id"] == at_google.as_str())
    })
    .await;
    let stored = fake.event(&work, &at_google).expect("at Google");
    assert_eq!(stored["summary"], "Launch");
    assert_eq!(stored["start"], json!({ "date": "2026-08-01" }));
    assert_eq!(stored["end"], json!({ "date": "2026-08-02" }));
}
