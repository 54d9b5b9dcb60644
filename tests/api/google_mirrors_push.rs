//! Writing to Google: while Google answers `429` every local write still arrives exactly
//! once (each retry after the `Retry-After` Google asked), an insert that meets its own id
//! (`409`) is adopted or made anew, all-day and recurring events are written as Google
//! wants them, calendars are made, renamed and deleted at Google first, and access tokens
//! are refreshed ahead of expiry and after a `401` with Google's refresh token kept.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};

use crate::helpers::google::{
    google_app, google_id, google_mirrors, link, mirror_id, outbox_rows, stored_google_account,
    sync_now, titles_in, until_frame,
};
use crate::helpers::{event_body, eventually, sample};
use crate::support::google_api::{GoogleApi, GoogleUser, RateLimit, Recorded};

fn account(fake: &GoogleApi) -> (GoogleUser, String) {
    let user = fake.add_user("ana.work@gmail.com", "Ana Work");
    let work = fake.add_calendar(&user, "Work", "owner");
    (user, work)
}

/// Whether `request` is about Google event `event_id` of `calendar_id` (an insert naming it,
/// or a call on its path).
fn about(request: &Recorded, calendar_id: &str, event_id: &str) -> bool {
    let events = format!("/calendar/v3/calendars/{calendar_id}/events");
    (request.method == "POST"
        && request.path == events
        && request.body.as_ref().is_some_and(|b| b["id"] == event_id))
        || request.path == format!("{events}/{event_id}")
}

/// `(method, status)` of the requests about `event_id`.
fn calls_about(fake: &GoogleApi, calendar_id: &str, event_id: &str) -> Vec<(String, u16)> {
    fake.requests()
        .iter()
        .filter(|r| about(r, calendar_id, event_id))
        .map(|r| (r.method.clone(), r.status))
        .collect()
}

#[tokio::test]
async fn every_write_arrives_exactly_once_while_google_answers_429() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;

    fake.rate_limit(2, 1, RateLimit::TooManyRequests);
    let mut created = vec![
        app.create_event(&ana, &event_body(&[&mirror], "E1", 8))
            .await,
    ];
    // E1 is refused first; then it is renamed, and two more are made.
    let first = google_id(created[0]["id"].as_str().expect("id"));
    fake.wait_for_request("E1 refused", |r| about(r, &work, &first) && r.status == 429)
        .await;
    let mut renamed = created[0].clone();
    renamed["title"] = json!("E1 renamed");
    let response = app.event_request(Method::PUT, &ana, &renamed).await;
    assert_eq!(response.status(), StatusCode::OK);
    for (n, hour) in (2..=3).zip(9..) {
        created.push(
            app.create_event(&ana, &event_body(&[&mirror], &format!("E{n}"), hour))
                .await,
        );
    }

    eventually("every write delivered", || async {
        let mut titles: Vec<String> = fake
            .live_events(&work)
            .iter()
            .map(|e| e["summary"].as_str().unwrap_or_default().to_owned())
            .collect();
        titles.sort();
        outbox_rows(&app).await == 0 && titles == ["E1 renamed", "E2", "E3"]
    })
    .await;
    let requests = fake.requests();
    let limited: Vec<&Recorded> = requests.iter().filter(|r| r.status == 429).collect();
    assert_eq!(limited.len(), 2);
    let mut too_soon = Vec::new();
    for event in &created {
        let gid = google_id(event["id"].as_str().expect("id"));
        let inserts = requests
            .iter()
            .filter(|r| r.method == "POST" && about(r, &work, &gid) && r.status == 200)
            .count();
        assert_eq!(inserts, 1, "{gid} inserted once");
        assert!(
            !requests
                .iter()
                .any(|r| about(r, &work, &gid) && r.status == 409),
            "{gid} never inserted twice"
        );
        // After a 429, the next attempt at the same event waited for Retry-After (its later
        // rows too: an event's rows go out in order). Checked last, below.
        let mine: Vec<&Recorded> = requests.iter().filter(|r| about(r, &work, &gid)).collect();
        for pair in mine.windows(2) {
            let waited = pair[1].at.duration_since(pair[0].at);
            if pair[0].status == 429 && waited < Duration::from_millis(950) {
                too_soon.push(format!(
                    "{gid}: {} answered 429 (Retry-After: 1), then {} {} only {waited:?} later",
                    pair[0].method, pair[1].method, pair[1].path
                ));
            }
        }
    }
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        ["E1 renamed", "E2", "E3"]
    );
    let failures = sample(
        &app.metrics_text().await,
        r#"svc_external_sync_failures_total{provider="google",stage="push"}"#,
    );
    assert_eq!(failures, Some(2.0), "each refused attempt counted");
    eventually("the outbox gauge drains", || async {
        sample(
            &app.metrics_text().await,
            r#"svc_outbox_pending{provider="google"}"#,
        ) == Some(0.0)
    })
    .await;

    // A pull afterwards finds what Bowline wrote: nothing doubles.
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        ["E1 renamed", "E2", "E3"]
    );
    assert!(too_soon.is_empty(), "{too_soon:#?}");
}

#[tokio::test]
async fn an_insert_that_meets_its_own_id_is_adopted_or_made_anew() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;
    let slot = json!({"dateTime": "2026-07-23T09:00:00Z"});
    let slot_end = json!({"dateTime": "2026-07-23T10:00:00Z"});

    // An earlier attempt got through unrecorded: the event is at Google under its id.
    let body = event_body(&[&mirror], "Made in Bowline", 9);
    let gid = google_id(body["id"].as_str().expect("id"));
    let earlier = fake.insert_event(
        &work,
        json!({"id": gid, "summary": "Earlier attempt", "start": slot, "end": slot_end}),
    );
    let created = app.create_event(&ana, &body).await;
    let adopted = fake
        .wait_for_request("the adopted event written over", |r| {
            r.method == "PUT" && about(r, &work, &gid) && r.status == 200
        })
        .await;
    assert_eq!(
        adopted.if_match,
        earlier["etag"].as_str().map(str::to_owned)
    );
    assert_eq!(
        calls_about(&fake, &work, &gid),
        [
            ("POST".to_owned(), 409),
            ("GET".to_owned(), 200),
            ("PUT".to_owned(), 200)
        ]
    );
    let there = fake.event(&work, &gid).expect("at Google");
    assert_eq!(there["summary"], "Made in Bowline");
    // Later writes go to it, conditionally on the adopted version.
    let mut renamed = created.clone();
    renamed["title"] = json!("Renamed in Bowline");
    let response = app.event_request(Method::PUT, &ana, &renamed).await;
    assert_eq!(response.status(), StatusCode::OK);
    let replaced = fake
        .wait_for_request("the rename", |r| {
            r.method == "PUT"
                && about(r, &work, &gid)
                && r.status == 200
                && r.if_match != adopted.if_match
        })
        .await;
    assert_eq!(replaced.if_match, there["etag"].as_str().map(str::to_owned));

    // The id belongs to an event deleted at Google: inserted anew under an id Google picks.
    let body = event_body(&[&mirror], "Second life", 11);
    let gone = google_id(body["id"].as_str().expect("id"));
    fake.insert_event(
        &work,
        json!({"id": gone, "summary": "Deleted earlier", "start": slot, "end": slot_end}),
    );
    fake.delete_event(&work, &gone);
    let before = fake.requests().len();
    let second = app.create_event(&ana, &body).await;
    let anew = fake
        .wait_for_request("inserted under a new id", |r| {
            r.method == "POST"
                && r.path == format!("/calendar/v3/calendars/{work}/events")
                && r.status == 200
                && r.body
                    .as_ref()
                    .is_some_and(|b| b["summary"] == "Second life" && b.get("id").is_none())
        })
        .await;
    let calls: Vec<(String, u16)> = fake.requests()[before..]
        .iter()
        .map(|r| (r.method.clone(), r.status))
        .collect();
    assert_eq!(
        calls,
        [
            ("POST".to_owned(), 409),
            ("GET".to_owned(), 200),
            ("POST".to_owned(), 200)
        ]
    );
    let _ = anew;
    let live: Vec<Value> = fake
        .live_events(&work)
        .into_iter()
        .filter(|e| e["summary"] == "Second life")
        .collect();
    assert_eq!(live.len(), 1);
    let new_id = live[0]["id"].as_str().expect("id").to_owned();
    assert_ne!(new_id, gone);
    assert_eq!(
        fake.event(&work, &gone).expect("tombstone")["status"],
        "cancelled"
    );
    let mut renamed = second.clone();
    renamed["title"] = json!("Second life renamed");
    let response = app.event_request(Method::PUT, &ana, &renamed).await;
    assert_eq!(response.status(), StatusCode::OK);
    fake.wait_for_request("the rename of the re-inserted event", |r| {
        r.method == "PUT"
            && r.path == format!("/calendar/v3/calendars/{work}/events/{new_id}")
            && r.status == 200
    })
    .await;
    eventually("the outbox empties", || async {
        outbox_rows(&app).await == 0
    })
    .await;

    // A pull finds both where Bowline put them: nothing doubles.
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        ["Renamed in Bowline", "Second life renamed"]
    );
}

#[tokio::test]
async fn all_day_and_recurring_events_are_written_as_google_wants_them() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;

    // Two days, 1 and 2 August: Google's end date is the day after the last.
    let mut holiday = event_body(&[&mirror], "Holiday", 0);
    holiday["start"] = json!("2026-08-01T00:00:00.000Z");
    holiday["end"] = json!("2026-08-02T00:00:00.000Z");
    holiday["isAllDay"] = json!(true);
    let holiday_id = google_id(holiday["id"].as_str().expect("id"));
    app.create_event(&ana, &holiday).await;
    let mut weekly = event_body(&[&mirror], "Weekly", 9);
    weekly["recurrence"] = json!("FREQ=WEEKLY;COUNT=3");
    let weekly_id = google_id(weekly["id"].as_str().expect("id"));
    app.create_event(&ana, &weekly).await;

    for id in [&holiday_id, &weekly_id] {
        fake.wait_for_request("the insert", |r| {
            r.method == "POST" && about(r, &work, id) && r.status == 200
        })
        .await;
    }
    let stored = fake.event(&work, &holiday_id).expect("at Google");
    assert_eq!(stored["start"], json!({"date": "2026-08-01"}));
    assert_eq!(stored["end"], json!({"date": "2026-08-03"}));
    let stored = fake.event(&work, &weekly_id).expect("at Google");
    assert_eq!(stored["recurrence"], json!(["RRULE:FREQ=WEEKLY;COUNT=3"]));
    assert_eq!(
        stored["start"],
        json!({"dateTime": "2026-07-23T09:00:00Z", "timeZone": "UTC"})
    );

    // Read back by a pull, they are what was written.
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    let read = app.read_events(&ana, "").await;
    let events: HashMap<String, Value> = read["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            (
                e["title"].as_str().unwrap_or_default().to_owned(),
                e.clone(),
            )
        })
        .collect();
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(events["Holiday"]["isAllDay"], true);
    assert_eq!(events["Holiday"]["start"], "2026-08-01T00:00:00.000Z");
    assert_eq!(events["Holiday"]["end"], "2026-08-02T00:00:00.000Z");
    assert_eq!(events["Weekly"]["recurrence"], "FREQ=WEEKLY;COUNT=3");
    assert_eq!(events["Weekly"]["start"], "2026-07-23T09:00:00.000Z");
}

#[tokio::test]
async fn calendars_are_made_renamed_and_deleted_at_google_first() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, _work) = account(&fake);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;

    let (status, made) = app
        .call(
            Method::POST,
            "/api/v1/calendars",
            &ana,
            Some(&json!({"id": "new", "name": "Trips", "color": "#C8553D",
                         "provider": "google", "accountId": ana_at_google.sub})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    assert_eq!(made["provider"], "google");
    assert_eq!(made["accountId"], json!(ana_at_google.sub));
    assert_eq!(made["name"], "Trips");
    let local = made["id"].as_str().expect("id").to_owned();
    let entry = fake
        .calendar_list(&ana_at_google)
        .into_iter()
        .find(|e| e["summary"] == "Trips")
        .expect("made at Google");
    assert_eq!(entry["backgroundColor"], "#c8553d");
    assert_eq!(entry["accessRole"], "owner");
    let remote = entry["id"].as_str().expect("id").to_owned();
    // The next pull knows it: no second mirror.
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    let names: Vec<Value> = google_mirrors(&app, &ana)
        .await
        .iter()
        .map(|m| m["name"].clone())
        .collect();
    assert_eq!(
        names,
        [json!("Trips"), json!("Work"), json!(ana_at_google.email)]
    );

    let (status, renamed) = app
        .call(
            Method::PUT,
            "/api/v1/calendars",
            &ana,
            Some(&json!({"id": local, "name": "Journeys", "color": "#3D8BC8"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{renamed}");
    assert_eq!(
        fake.calendar(&remote).expect("calendar")["summary"],
        "Journeys"
    );
    let entry = fake
        .calendar_list(&ana_at_google)
        .into_iter()
        .find(|e| e["id"] == json!(remote))
        .expect("listed");
    assert_eq!(entry["backgroundColor"], "#3d8bc8");

    let (status, _) = app
        .call(
            Method::DELETE,
            "/api/v1/calendars",
            &ana,
            Some(&json!({"id": local})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        fake.calendar_list(&ana_at_google)
            .iter()
            .all(|e| e["id"] != json!(remote)),
        "deleted at Google"
    );
    assert_eq!(google_mirrors(&app, &ana).await.len(), 2);

    // Google refuses to delete a primary calendar: nothing changes here either.
    let primary = mirror_id(&app, &ana, &ana_at_google.email).await;
    let (status, body) = app
        .call(
            Method::DELETE,
            "/api/v1/calendars",
            &ana,
            Some(&json!({"id": primary})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(google_mirrors(&app, &ana).await.len(), 2);
    assert!(
        fake.calendar_list(&ana_at_google)
            .iter()
            .any(|e| e["primary"] == true)
    );

    // A calendar Google only lets the account read can be neither renamed nor deleted
    // there: refused, and nothing changes here.
    let holidays = fake.add_calendar(&ana_at_google, "Holidays", "reader");
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    let subscribed = mirror_id(&app, &ana, "Holidays").await;
    let (status, body) = app
        .call(
            Method::PUT,
            "/api/v1/calendars",
            &ana,
            Some(&json!({"id": subscribed, "name": "My holidays", "color": "#3D8BC8"})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = app
        .call(
            Method::DELETE,
            "/api/v1/calendars",
            &ana,
            Some(&json!({"id": subscribed})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        fake.calendar(&holidays).expect("calendar")["summary"],
        "Holidays"
    );
    let names: Vec<Value> = google_mirrors(&app, &ana)
        .await
        .iter()
        .map(|m| m["name"].clone())
        .collect();
    assert_eq!(
        names,
        [json!("Holidays"), json!("Work"), json!(ana_at_google.email)]
    );
}

#[tokio::test]
async fn access_tokens_are_refreshed_ahead_of_expiry_and_after_a_401() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, _work) = account(&fake);
    // Tokens that live less than the minute Bowline refreshes ahead.
    fake.set_access_token_lifetime(30);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let refresh = fake.refresh_tokens(&ana_at_google);
    assert_eq!(
        refresh.len(),
        1,
        "Google sends no new refresh token on refresh"
    );
    let grants = fake.token_requests();
    assert_eq!(grants[0]["grant_type"], "authorization_code");
    let refreshes: Vec<&Value> = grants[1..].iter().collect();
    assert!(!refreshes.is_empty(), "refreshed before the first call");
    for grant in &refreshes {
        assert_eq!(grant["grant_type"], "refresh_token");
        assert_eq!(
            grant["refresh_token"],
            json!(refresh[0]),
            "the refresh token is kept"
        );
    }
    assert!(
        fake.requests().iter().all(|r| r.status == 200),
        "no call went out with an expired token"
    );
    let stored = stored_google_account(&app).await.expect("row");
    assert!(
        stored["refreshToken"].is_string(),
        "kept when none came back"
    );
    let sealed = stored["accessToken"].as_str().expect("an access token");
    let issued = fake.access_tokens(&ana_at_google);
    assert!(issued.len() >= 2);
    assert!(
        issued.iter().all(|token| !sealed.contains(token.as_str())),
        "refreshed access tokens are stored sealed"
    );

    // A token Google stops accepting early: 401, one refresh, the call again.
    fake.set_access_token_lifetime(3599);
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    fake.expire_access_tokens();
    let (before_grants, before_calls) = (fake.token_requests().len(), fake.requests().len());
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    let grants = fake.token_requests();
    assert_eq!(grants.len(), before_grants + 1, "one refresh");
    assert_eq!(grants[before_grants]["refresh_token"], json!(refresh[0]));
    let calls: Vec<u16> = fake.requests()[before_calls..]
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(calls.first(), Some(&401));
    assert!(calls[1..].iter().all(|s| *s == 200), "{calls:?}");
    assert_eq!(
        stored_google_account(&app).await.expect("row")["syncStatus"],
        Value::Null
    );
}

#[tokio::test]
async fn local_deletes_reach_google_and_a_racing_edit_brings_the_event_back() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;
    let primary = mirror_id(&app, &ana, &ana_at_google.email).await;
    let mut stream = app.stream(&ana).await;

    // Deleted here: deleted there, conditionally on the version Bowline wrote.
    let doomed = app
        .create_event(&ana, &event_body(&[&mirror], "Doomed", 9))
        .await;
    let gid = google_id(doomed["id"].as_str().expect("id"));
    fake.wait_for_request("the insert", |r| {
        r.method == "POST" && about(r, &work, &gid) && r.status == 200
    })
    .await;
    // Bowline has recorded where the event lives (the row is done) before it changes.
    eventually("the insert recorded", || async {
        outbox_rows(&app).await == 0
    })
    .await;
    let written = fake.event(&work, &gid).expect("at Google");
    let response = app.event_request(Method::DELETE, &ana, &doomed).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.expect("JSON");
    assert_eq!(
        answer["providerDelivery"],
        json!([{"calendarID": mirror, "provider": "google", "action": "delete", "state": "pending"}])
    );
    let deleted = fake
        .wait_for_request("the delete", |r| {
            r.method == "DELETE" && about(r, &work, &gid) && r.status == 204
        })
        .await;
    assert_eq!(
        deleted.if_match,
        written["etag"].as_str().map(str::to_owned)
    );
    assert_eq!(
        fake.event(&work, &gid).expect("tombstone")["status"],
        "cancelled"
    );
    // The tombstone the next pull meets changes nothing here: no frame for it (the next
    // one is the other calendar's change).
    assert_eq!(sync_now(&app, &ana).await.0, StatusCode::OK);
    fake.insert_event(
        &ana_at_google.email,
        json!({"summary": "Elsewhere", "start": {"date": "2026-12-01"}, "end": {"date": "2026-12-02"}}),
    );
    assert_eq!(sync_now(&app, &ana).await.0, StatusCode::OK);
    let frame = until_frame(&mut stream, "external_sync").await;
    assert_eq!(frame["payload"]["calendars"], json!([primary]));

    // Deleted here while someone edits it at Google: the edit wins and the event is back.
    let contested = app
        .create_event(&ana, &event_body(&[&mirror], "Contested", 11))
        .await;
    let gid = google_id(contested["id"].as_str().expect("id"));
    fake.wait_for_request("the insert", |r| {
        r.method == "POST" && about(r, &work, &gid) && r.status == 200
    })
    .await;
    // Bowline has recorded where the event lives (the row is done) before it changes.
    eventually("the insert recorded", || async {
        outbox_rows(&app).await == 0
    })
    .await;
    fake.update_event(&work, &gid, json!({"summary": "Kept at Google"}));
    let response = app.event_request(Method::DELETE, &ana, &contested).await;
    assert_eq!(response.status(), StatusCode::OK);
    fake.wait_for_request("the refused delete", |r| {
        r.method == "DELETE" && about(r, &work, &gid) && r.status == 412
    })
    .await;
    let frame = until_frame(&mut stream, "provider_delivery").await;
    assert_eq!(frame["payload"]["state"], "conflict");
    assert_eq!(frame["payload"]["calendarID"], json!(mirror));
    assert_eq!(frame["payload"]["eventID"], contested["id"]);
    // The version brought back is announced like a pull's change.
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "external_sync");
    assert_eq!(frame["payload"]["calendars"], json!([mirror]));
    eventually("Google's version is back", || async {
        titles_in(&app, &ana, &mirror).await == ["Kept at Google"]
    })
    .await;
    assert_eq!(
        fake.event(&work, &gid).expect("at Google")["status"],
        "confirmed"
    );
    eventually("the outbox empties", || async {
        outbox_rows(&app).await == 0
    })
    .await;
    // Pulling again finds it as it is (one event, nothing doubles) and announces nothing:
    // the next frame is the other calendar's change.
    assert_eq!(sync_now(&app, &ana).await.0, StatusCode::OK);
    assert_eq!(titles_in(&app, &ana, &mirror).await, ["Kept at Google"]);
    fake.insert_event(
        &ana_at_google.email,
        json!({"summary": "Elsewhere again", "start": {"date": "2026-12-02"}, "end": {"date": "2026-12-03"}}),
    );
    assert_eq!(sync_now(&app, &ana).await.0, StatusCode::OK);
    let frame = until_frame(&mut stream, "external_sync").await;
    assert_eq!(frame["payload"]["calendars"], json!([primary]));

    // Edited here after it was deleted at Google: the deletion wins.
    let kept = crate::helpers::google::event_titled(&app, &ana, "Kept at Google").await;
    fake.delete_event(&work, &gid);
    let mut edit = kept.clone();
    edit["title"] = json!("Edited too late");
    let response = app.event_request(Method::PUT, &ana, &edit).await;
    assert_eq!(response.status(), StatusCode::OK);
    let frame = until_frame(&mut stream, "provider_delivery").await;
    assert_eq!(
        frame["payload"],
        json!({"calendarID": mirror, "eventID": kept["id"], "state": "conflict", "error": null})
    );
    eventually("the event is gone here too", || async {
        titles_in(&app, &ana, &mirror).await.is_empty()
    })
    .await;
    assert_eq!(
        fake.event(&work, &gid).expect("tombstone")["status"],
        "cancelled"
    );
}

#[tokio::test]
async fn events_linked_into_and_out_of_a_mirror_are_written_and_removed() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;
    let personal = crate::helpers::caldav::calendars(&app, &ana)
        .await
        .into_iter()
        .find(|c| c["isDefault"] == true)
        .expect("personal")["id"]
        .as_str()
        .expect("id")
        .to_owned();

    let event = app
        .create_event(&ana, &event_body(&[&personal], "Shared later", 9))
        .await;
    assert!(event.get("providerDelivery").is_none(), "{event}");
    let id = event["id"].as_str().expect("id").to_owned();
    let gid = google_id(&id);
    let (status, linked) = app
        .call(
            Method::POST,
            &format!("/api/v1/events/{id}/link"),
            &ana,
            Some(&json!({"calendarID": mirror})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{linked}");
    fake.wait_for_request("the linked event inserted", |r| {
        r.method == "POST" && about(r, &work, &gid) && r.status == 200
    })
    .await;
    // Bowline has recorded where the event lives (the row is done) before it changes.
    eventually("the insert recorded", || async {
        outbox_rows(&app).await == 0
    })
    .await;
    assert_eq!(
        fake.event(&work, &gid).expect("at Google")["summary"],
        "Shared later"
    );

    // Taken out of the mirror (it stays at home): deleted at Google.
    let mut unlinked = linked.clone();
    unlinked["calendars"] = json!([personal]);
    let response = app.event_request(Method::PUT, &ana, &unlinked).await;
    assert_eq!(response.status(), StatusCode::OK);
    fake.wait_for_request("the delete", |r| {
        r.method == "DELETE" && about(r, &work, &gid) && r.status == 204
    })
    .await;
    assert_eq!(
        fake.event(&work, &gid).expect("tombstone")["status"],
        "cancelled"
    );
    assert_eq!(sync_now(&app, &ana).await.0, StatusCode::OK);
    assert!(titles_in(&app, &ana, &mirror).await.is_empty());
    assert_eq!(titles_in(&app, &ana, &personal).await, ["Shared later"]);
}

/// A daily series in Europe/Berlin from 1 December 2026, five times.
fn standup(start: &str, end: &str) -> Value {
    json!({"summary": "Standup",
           "start": {"dateTime": format!("2026-12-01T{start}:00+01:00"), "timeZone": "Europe/Berlin"},
           "end": {"dateTime": format!("2026-12-01T{end}:00+01:00"), "timeZone": "Europe/Berlin"},
           "recurrence": ["RRULE:FREQ=DAILY;COUNT=5"]})
}

#[tokio::test]
async fn a_series_with_a_removed_instance_is_written_back_whole() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let series = fake.insert_event(&work, standup("09:00", "09:30"));
    let series_id = series["id"].as_str().expect("id").to_owned();
    let removed = fake.cancel_instance(
        &work,
        &series_id,
        json!({"dateTime": "2026-12-03T09:00:00+01:00", "timeZone": "Europe/Berlin"}),
    );
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;
    let primary = mirror_id(&app, &ana, &ana_at_google.email).await;
    let local = crate::helpers::google::event_titled(&app, &ana, "Standup").await;
    let mut stream = app.stream(&ana).await;

    let mut renamed = local.clone();
    renamed["title"] = json!("Daily standup");
    let response = app.event_request(Method::PUT, &ana, &renamed).await;
    assert_eq!(response.status(), StatusCode::OK);
    let put = fake
        .wait_for_request("the series replaced", |r| {
            r.method == "PUT" && about(r, &work, &series_id) && r.status == 200
        })
        .await;
    assert_eq!(
        put.if_match,
        series["etag"].as_str().map(str::to_owned),
        "the master's own etag"
    );
    let there = fake.event(&work, &series_id).expect("at Google");
    assert_eq!(there["summary"], "Daily standup");
    assert_eq!(
        fake.event(&work, &removed).expect("instance")["status"],
        "cancelled",
        "the removed instance stays removed"
    );
    let instances = fake
        .live_events(&work)
        .iter()
        .filter(|e| e["recurringEventId"] == json!(series_id))
        .count();
    assert_eq!(instances, 0);
    eventually("the outbox empties", || async {
        outbox_rows(&app).await == 0
    })
    .await;

    // Pulling it back changes nothing: the next frame is the other calendar's change.
    assert_eq!(sync_now(&app, &ana).await.0, StatusCode::OK);
    fake.insert_event(
        &ana_at_google.email,
        json!({"summary": "Elsewhere", "start": {"date": "2026-12-01"}, "end": {"date": "2026-12-02"}}),
    );
    assert_eq!(sync_now(&app, &ana).await.0, StatusCode::OK);
    let frame = until_frame(&mut stream, "external_sync").await;
    assert_eq!(frame["payload"]["calendars"], json!([primary]));
    let local = crate::helpers::google::event_titled(&app, &ana, "Daily standup").await;
    assert_eq!(
        local["recurrence"],
        "RRULE:FREQ=DAILY;COUNT=5\nEXDATE:20261203T080000Z"
    );
    assert_eq!(titles_in(&app, &ana, &mirror).await, ["Daily standup"]);

    // Deleted here: deleted there, conditionally on the master's own etag.
    let current = fake.event(&work, &series_id).expect("at Google");
    let response = app.event_request(Method::DELETE, &ana, &local).await;
    assert_eq!(response.status(), StatusCode::OK);
    let deleted = fake
        .wait_for_request("the series deleted", |r| {
            r.method == "DELETE" && about(r, &work, &series_id)
        })
        .await;
    assert_eq!(deleted.status, 204);
    assert_eq!(
        deleted.if_match,
        current["etag"].as_str().map(str::to_owned)
    );
    assert_eq!(
        fake.event(&work, &series_id).expect("tombstone")["status"],
        "cancelled"
    );
}

#[tokio::test]
async fn a_series_with_an_edited_instance_is_not_written_back_and_says_so() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let series = fake.insert_event(&work, standup("09:00", "09:30"));
    let series_id = series["id"].as_str().expect("id").to_owned();
    fake.edit_instance(
        &work,
        &series_id,
        json!({"dateTime": "2026-12-03T09:00:00+01:00", "timeZone": "Europe/Berlin"}),
        json!({"summary": "Standup (moved)",
               "start": {"dateTime": "2026-12-03T11:00:00+01:00", "timeZone": "Europe/Berlin"},
               "end": {"dateTime": "2026-12-03T11:30:00+01:00", "timeZone": "Europe/Berlin"}}),
    );
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;
    let local = crate::helpers::google::event_titled(&app, &ana, "Standup").await;
    let mut stream = app.stream(&ana).await;
    let before = fake.requests().len();

    let mut renamed = local.clone();
    renamed["title"] = json!("Daily standup");
    let response = app.event_request(Method::PUT, &ana, &renamed).await;
    assert_eq!(response.status(), StatusCode::OK);
    let frame = until_frame(&mut stream, "provider_delivery").await;
    assert_eq!(
        frame["payload"],
        json!({"calendarID": mirror, "eventID": local["id"], "state": "failed",
               "error": "a recurring event with edited occurrences can't be written back to this provider yet"})
    );
    assert_eq!(fake.requests().len(), before, "nothing sent to Google");
    assert_eq!(
        fake.event(&work, &series_id).expect("at Google")["summary"],
        "Standup"
    );
    eventually("the outbox empties", || async {
        outbox_rows(&app).await == 0
    })
    .await;
}

#[tokio::test]
async fn a_calendar_shared_read_only_is_mirrored_for_viewing_only() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, _work) = account(&fake);
    let holidays = fake.add_calendar(&ana_at_google, "Holidays", "reader");
    fake.insert_event(
        &holidays,
        json!({"summary": "New Year", "start": {"date": "2027-01-01"}, "end": {"date": "2027-01-02"}}),
    );
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let roles: Vec<(Value, Value)> = google_mirrors(&app, &ana)
        .await
        .iter()
        .map(|m| (m["name"].clone(), m["role"].clone()))
        .collect();
    assert_eq!(
        roles,
        [
            (json!("Holidays"), json!("viewer")),
            (json!("Work"), json!("owner")),
            (json!(ana_at_google.email), json!("owner")),
        ],
        "a calendar Google lets the account only read is mirrored for viewing"
    );
    let mirror = mirror_id(&app, &ana, "Holidays").await;
    let before = fake.requests().len();

    // Nothing can be written into it that Google would never take.
    let response = app
        .event_request(Method::POST, &ana, &event_body(&[&mirror], "Mine", 9))
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let new_year = crate::helpers::google::event_titled(&app, &ana, "New Year").await;
    let mut renamed = new_year.clone();
    renamed["title"] = json!("Renamed");
    let response = app.event_request(Method::PUT, &ana, &renamed).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(titles_in(&app, &ana, &mirror).await, ["New Year"]);
    assert_eq!(outbox_rows(&app).await, 0);
    assert_eq!(fake.requests().len(), before, "nothing sent to Google");
    assert_eq!(fake.live_events(&holidays).len(), 1);
}

#[tokio::test]
async fn a_write_google_keeps_failing_is_given_up_and_reported() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let app = crate::helpers::spawn_app_with(|s| {
        crate::helpers::caldav::with_caldav(s);
        fake.configure(s);
        s.caldav.outbox_retry_base_ms = 50;
        s.caldav.outbox_retry_max_ms = 100;
        s.caldav.outbox_give_up_ms = 600;
    })
    .await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;
    let mut stream = app.stream(&ana).await;

    fake.fail_next(1000, 503);
    let created = app
        .create_event(&ana, &event_body(&[&mirror], "Never arrives", 9))
        .await;
    let frame = until_frame(&mut stream, "provider_delivery").await;
    assert_eq!(frame["payload"]["state"], "failed");
    assert_eq!(frame["payload"]["eventID"], created["id"]);
    let error = frame["payload"]["error"].as_str().expect("a reason");
    assert!(error.starts_with("gave up after "), "{error}");
    eventually("the outbox empties", || async {
        outbox_rows(&app).await == 0
    })
    .await;
    fake.fail_next(0, 503);
    let attempts = fake
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.status == 503)
        .count();
    assert!(attempts >= 2, "retried before giving up ({attempts})");
    assert!(fake.live_events(&work).is_empty());
}

#[tokio::test]
async fn two_processes_deliver_each_write_once() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;

    // Google holds back the first attempts, so rows wait in the outbox while a second
    // process on the same database starts and delivers too.
    fake.rate_limit(3, 1, RateLimit::TooManyRequests);
    let mut ids = Vec::new();
    for (n, hour) in (1..=4).zip(8..) {
        let created = app
            .create_event(&ana, &event_body(&[&mirror], &format!("P{n}"), hour))
            .await;
        ids.push(google_id(created["id"].as_str().expect("id")));
    }
    // The second process's actor for the account delivers what is due from its start.
    let _other = crate::helpers::spawn_app_sharing_database(&app).await;
    eventually("every write delivered", || async {
        outbox_rows(&app).await == 0 && fake.live_events(&work).len() == 4
    })
    .await;
    let requests = fake.requests();
    for gid in &ids {
        let inserts = requests
            .iter()
            .filter(|r| r.method == "POST" && about(r, &work, gid) && r.status == 200)
            .count();
        assert_eq!(inserts, 1, "{gid} inserted once");
        assert!(
            !requests
                .iter()
                .any(|r| about(r, &work, gid) && r.status == 409),
            "{gid} never inserted twice"
        );
    }
}

#[tokio::test]
async fn members_write_through_the_owners_account_but_only_the_owner_changes_the_calendar() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    let bob = app.sign_up("bob@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;
    app.join_with_invite(&ana, &mirror, &bob).await;
    let response = app.set_role(&ana, &mirror, &bob.id, "editor").await;
    assert_eq!(response.status(), StatusCode::OK);

    // An editor's event goes out with the owner's account.
    let made = app
        .create_event(&bob, &event_body(&[&mirror], "Bob's slot", 9))
        .await;
    assert_eq!(made["providerDelivery"][0]["state"], "pending");
    let gid = google_id(made["id"].as_str().expect("id"));
    fake.wait_for_request("the editor's event", |r| {
        r.method == "POST" && about(r, &work, &gid) && r.status == 200
    })
    .await;
    assert_eq!(
        fake.event(&work, &gid).expect("at Google")["summary"],
        "Bob's slot"
    );

    // The calendar itself is the account owner's to change.
    let (status, body) = app
        .call(
            Method::PUT,
            "/api/v1/calendars",
            &bob,
            Some(&json!({"id": mirror, "name": "Bob's now", "color": "#3D8BC8"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(fake.calendar(&work).expect("calendar")["summary"], "Work");
    // And nobody else makes calendars in it.
    let (status, _) = app
        .call(
            Method::POST,
            "/api/v1/calendars",
            &bob,
            Some(&json!({"id": "new", "name": "Bob's", "color": "#C8553D",
                         "provider": "google", "accountId": ana_at_google.sub})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(fake.calendar_list(&ana_at_google).len(), 2);
}

#[tokio::test]
async fn a_403_rate_limit_delays_the_write_by_its_retry_after() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;

    fake.rate_limit(1, 1, RateLimit::RateLimitExceeded);
    let created = app
        .create_event(&ana, &event_body(&[&mirror], "Patient", 9))
        .await;
    let gid = google_id(created["id"].as_str().expect("id"));
    let inserted = fake
        .wait_for_request("the insert", |r| {
            r.method == "POST" && about(r, &work, &gid) && r.status == 200
        })
        .await;
    let calls: Vec<&Recorded> = fake
        .requests()
        .iter()
        .filter(|r| about(r, &work, &gid))
        .cloned()
        .collect::<Vec<_>>()
        .leak()
        .iter()
        .collect();
    assert_eq!(
        calls.iter().map(|r| r.status).collect::<Vec<_>>(),
        [403, 200]
    );
    let waited = inserted.at.duration_since(calls[0].at);
    assert!(
        waited >= Duration::from_millis(950),
        "retried {waited:?} after Google asked for a second"
    );
    eventually("the outbox empties", || async {
        outbox_rows(&app).await == 0
    })
    .await;
    assert_eq!(fake.live_events(&work).len(), 1);
}

#[tokio::test]
async fn deletes_made_right_after_the_insert_still_reach_google() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;

    // Each event is deleted here the moment Google has its insert, while Bowline is
    // recording where it put it: whichever commits first, the delete must go out.
    let mut gids = Vec::new();
    for n in 1..=20 {
        let created = app
            .create_event(
                &ana,
                &event_body(&[&mirror], &format!("Brief {n:02}"), 2 + n % 20),
            )
            .await;
        let gid = google_id(created["id"].as_str().expect("id"));
        fake.wait_for_request("the insert", |r| {
            r.method == "POST" && about(r, &work, &gid)
        })
        .await;
        let response = app.event_request(Method::DELETE, &ana, &created).await;
        assert_eq!(response.status(), StatusCode::OK);
        gids.push(gid);
    }
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    let delivered = tokio::time::timeout(crate::helpers::WAIT, async {
        while !(outbox_rows(&app).await == 0 && fake.live_events(&work).is_empty()) {
            tick.tick().await;
        }
    })
    .await
    .is_ok();
    let left: Vec<Value> = fake
        .live_events(&work)
        .iter()
        .map(|e| e["summary"].clone())
        .collect();
    // What Bowline kept of them: deleted events whose item at Google is still recorded.
    let db = app.db_connection().await;
    let stranded: Vec<String> = db
        .query_all_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT e.title FROM events e JOIN external_events x ON x.event_id = e.id \
             WHERE e.deleted_at IS NOT NULL ORDER BY e.title",
        ))
        .await
        .expect("rows")
        .iter()
        .map(|row| row.try_get::<String>("", "title").expect("title"))
        .collect();
    assert!(
        delivered,
        "deleted here, still at Google: {left:?} ({} outbox rows left; deleted here but \
         still mapped to their Google item: {stranded:?})",
        outbox_rows(&app).await
    );
    for gid in &gids {
        assert_eq!(
            fake.event(&work, gid).expect("tombstone")["status"],
            "cancelled",
            "{gid}"
        );
    }
    assert!(titles_in(&app, &ana, &mirror).await.is_empty());
}
