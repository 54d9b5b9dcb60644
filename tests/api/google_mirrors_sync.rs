//! Pulling Google calendars: cancelled events leave the mirror, a cancelled instance
//! becomes an EXDATE of its series and an edited one an override, a `410` in the middle of
//! an incremental listing throws the pages read away and lists everything again, a
//! `403 userRateLimitExceeded` quiets the account for the `Retry-After` Google asked (its
//! pulls and its writes wait, then go on), calendars added or removed at Google come and go
//! (the calendarList read page by page; a mirror disconnected here stays away), and
//! calendar ids holding `#` travel percent-encoded; times are read with their offsets and
//! zones, all-day events as days; a failed sync says why in words.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::google::{
    event_titled, google_app, google_mirrors, link, mirror_id, sync_now, titles_in,
};
use crate::helpers::{TestApp, TestUser, event_body, eventually, sample};
use crate::support::google_api::{GoogleApi, GoogleUser, RateLimit, Recorded};
use crate::support::sse::SseClient;

/// A Google account with a secondary calendar "Work"; its id.
fn account(fake: &GoogleApi) -> (GoogleUser, String) {
    let user = fake.add_user("ana.work@gmail.com", "Ana Work");
    let work = fake.add_calendar(&user, "Work", "owner");
    (user, work)
}

/// A timed event at `hour` UTC on 4 December 2026, an hour long.
fn timed(summary: &str, hour: u32) -> Value {
    json!({
        "summary": summary,
        "start": {"dateTime": format!("2026-12-04T{hour:02}:00:00Z")},
        "end": {"dateTime": format!("2026-12-04T{:02}:00:00Z", hour + 1)},
    })
}

/// Syncs now and expects the one `external_sync` frame naming `calendars`.
async fn pulled_with_frame(
    app: &TestApp,
    user: &TestUser,
    stream: &mut SseClient,
    calendars: &[&str],
) {
    assert_eq!(sync_now(app, user).await, (StatusCode::OK, json!("OK")));
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "external_sync", "{frame}");
    assert_eq!(frame["payload"]["calendars"], json!(calendars));
}

#[tokio::test]
async fn cancelled_events_and_instances_leave_the_mirror() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let berlin = |day: u32, time: &str| json!({"dateTime": format!("2026-12-{day:02}T{time}:00+01:00"), "timeZone": "Europe/Berlin"});
    let series = fake.insert_event(
        &work,
        json!({"summary": "Standup", "start": berlin(1, "09:00"), "end": berlin(1, "09:30"),
               "recurrence": ["RRULE:FREQ=DAILY;COUNT=5"]}),
    );
    let series_id = series["id"].as_str().expect("id").to_owned();
    let one_off = fake.insert_event(&work, timed("One-off", 14));
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;
    assert_eq!(titles_in(&app, &ana, &mirror).await, ["One-off", "Standup"]);
    let standup = event_titled(&app, &ana, "Standup").await;
    assert_eq!(standup["start"], "2026-12-01T08:00:00.000Z");
    assert_eq!(standup["recurrence"], "FREQ=DAILY;COUNT=5");
    let mut stream = app.stream(&ana).await;

    // "Delete this event only" on the third occurrence: the series excludes it.
    fake.cancel_instance(&work, &series_id, berlin(3, "09:00"));
    pulled_with_frame(&app, &ana, &mut stream, &[&mirror]).await;
    let standup = event_titled(&app, &ana, "Standup").await;
    assert_eq!(
        standup["recurrence"],
        "RRULE:FREQ=DAILY;COUNT=5\nEXDATE:20261203T080000Z"
    );

    // "Change this event only" on the fourth: an override of the series.
    fake.edit_instance(
        &work,
        &series_id,
        berlin(4, "09:00"),
        json!({"summary": "Standup (moved)", "start": berlin(4, "11:00"), "end": berlin(4, "11:30")}),
    );
    pulled_with_frame(&app, &ana, &mut stream, &[&mirror]).await;
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        ["One-off", "Standup", "Standup (moved)"]
    );
    let moved = event_titled(&app, &ana, "Standup (moved)").await;
    assert_eq!(moved["start"], "2026-12-04T10:00:00.000Z");
    let standup = event_titled(&app, &ana, "Standup").await;
    assert_eq!(
        standup["recurrence"],
        "RRULE:FREQ=DAILY;COUNT=5\nEXDATE:20261203T080000Z,20261204T080000Z"
    );

    // A deleted event becomes a tombstone at Google and leaves the mirror.
    fake.delete_event(&work, one_off["id"].as_str().expect("id"));
    pulled_with_frame(&app, &ana, &mut stream, &[&mirror]).await;
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        ["Standup", "Standup (moved)"]
    );

    // A deleted series takes its overrides with it.
    fake.delete_event(&work, &series_id);
    pulled_with_frame(&app, &ana, &mut stream, &[&mirror]).await;
    assert!(titles_in(&app, &ana, &mirror).await.is_empty());
}

/// `(has syncToken, has pageToken, status)` of the event listings of `calendar_id` after the
/// first `from` requests.
fn listings(requests: &[Recorded], from: usize, calendar_id: &str) -> Vec<(bool, bool, u16)> {
    let path = format!("/calendar/v3/calendars/{calendar_id}/events");
    requests[from..]
        .iter()
        .filter(|r| r.method == "GET" && r.path == path && r.query_param("iCalUID").is_none())
        .map(|r| {
            (
                r.query_param("syncToken").is_some(),
                r.query_param("pageToken").is_some(),
                r.status,
            )
        })
        .collect()
}

#[tokio::test]
async fn a_410_in_the_middle_of_paging_restarts_a_full_sync() {
    let fake = GoogleApi::start().await;
    // The primary calendar is the first one listed: the armed 410 meets its listing.
    let (ana_at_google, work) = account(&fake);
    let primary = ana_at_google.email.clone();
    fake.set_page_size(2);
    let mut ids = Vec::new();
    for (n, hour) in (1..=5).zip(8..) {
        ids.push(fake.insert_event(&primary, timed(&format!("E{n}"), hour))["id"].clone());
    }
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, &primary).await;
    let work_mirror = mirror_id(&app, &ana, "Work").await;
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        ["E1", "E2", "E3", "E4", "E5"]
    );
    let mut stream = app.stream(&ana).await;

    for (n, hour) in (1..=3).zip(14..) {
        fake.insert_event(&primary, timed(&format!("N{n}"), hour));
    }
    fake.delete_event(&primary, ids[1].as_str().expect("id"));
    fake.update_event(
        &primary,
        ids[3].as_str().expect("id"),
        json!({"summary": "E4 renamed"}),
    );
    // The incremental listing answers its first page, then 410 for the second.
    fake.expire_sync_tokens_after_pages(1);
    let before = fake.requests().len();
    pulled_with_frame(&app, &ana, &mut stream, &[&mirror]).await;
    let seen = listings(&fake.requests(), before, &primary);
    assert_eq!(
        seen,
        [
            (true, false, 200),
            (true, true, 410),
            (false, false, 200),
            (false, true, 200),
            (false, true, 200),
            (false, true, 200),
        ],
        "two incremental pages (the second refused), then the four pages of a full listing"
    );
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        ["E1", "E3", "E4 renamed", "E5", "N1", "N2", "N3"],
        "what Google holds, nothing twice, the deleted one swept"
    );

    // The next pull is incremental again, from the full listing's token, and the pull
    // above sent exactly one frame: the next one is this change's, of the other calendar.
    fake.insert_event(&work, timed("Elsewhere", 9));
    let before = fake.requests().len();
    pulled_with_frame(&app, &ana, &mut stream, &[&work_mirror]).await;
    assert_eq!(
        listings(&fake.requests(), before, &primary),
        [(true, false, 200)]
    );
}

#[tokio::test]
async fn a_user_rate_limit_quiets_the_account_for_its_retry_after() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;

    fake.rate_limit(1, 2, RateLimit::UserRateLimitExceeded);
    let limited_at = Instant::now();
    let (status, body) = sync_now(&app, &ana).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = body["error"].as_str().expect("error");
    assert!(
        message.starts_with("The calendar server could not be synced: ") && message.contains("403"),
        "{message}"
    );
    let limited = fake.requests().iter().filter(|r| r.status == 403).count();
    assert_eq!(limited, 1);
    let failures = sample(
        &app.metrics_text().await,
        r#"svc_external_sync_failures_total{provider="google",stage="account"}"#,
    );
    assert_eq!(failures, Some(1.0));

    // Until Retry-After has passed, asking to sync does not call Google at all.
    fake.insert_event(&work, timed("During the pause", 10));
    let before = fake.requests().len();
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    assert_eq!(
        fake.requests().len(),
        before,
        "no call while Google asked to wait"
    );
    assert!(titles_in(&app, &ana, &mirror).await.is_empty());

    // A write made meanwhile waits too (Google's quota is the user's, whatever the call),
    // and is delivered once the wait is over, exactly once.
    let written = app
        .create_event(
            &ana,
            &event_body(&[&mirror], "Written during the pause", 12),
        )
        .await;
    let gid = written["id"].as_str().expect("id").replace('-', "");
    let insert = fake
        .wait_for_request("the write delivered", |r| {
            r.method == "POST"
                && r.status == 200
                && r.body.as_ref().is_some_and(|b| b["id"] == gid.as_str())
        })
        .await;
    assert!(
        insert.at.duration_since(limited_at) >= Duration::from_millis(1900),
        "the write went to Google before its Retry-After had passed"
    );
    let inserts = fake
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.body.as_ref().is_some_and(|b| b["id"] == gid.as_str()))
        .count();
    assert_eq!(inserts, 1, "delivered once");

    // Then the pull goes through.
    eventually("the pull resumes", || async {
        sync_now(&app, &ana).await.0 == StatusCode::OK
            && titles_in(&app, &ana, &mirror).await
                == ["During the pause", "Written during the pause"]
    })
    .await;
    assert!(
        limited_at.elapsed() >= Duration::from_millis(1900),
        "resumed after {:?}",
        limited_at.elapsed()
    );
}

#[tokio::test]
async fn calendars_added_and_removed_at_google_come_and_go() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let holidays = "en.usa#holiday@group.v.calendar.google.com";
    fake.add_calendar_with_id(&ana_at_google, holidays, "Holidays", "reader");
    fake.insert_event(
        holidays,
        json!({"summary": "New Year", "start": {"date": "2027-01-01"}, "end": {"date": "2027-01-02"}}),
    );
    // One calendar per calendarList page.
    fake.set_page_size(1);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let list_pages = fake
        .requests()
        .iter()
        .filter(|r| r.path == "/calendar/v3/users/me/calendarList")
        .count();
    assert_eq!(list_pages, 6, "three pages in each of two pulls");
    let names: Vec<Value> = google_mirrors(&app, &ana)
        .await
        .iter()
        .map(|m| m["name"].clone())
        .collect();
    assert_eq!(
        names,
        json!(["Holidays", "Work", ana_at_google.email])
            .as_array()
            .unwrap()
            .clone()
    );
    let holiday_mirror = mirror_id(&app, &ana, "Holidays").await;
    assert_eq!(titles_in(&app, &ana, &holiday_mirror).await, ["New Year"]);
    // Its `#` went out percent-encoded (`@` may stay as it is in a path segment).
    let listing = fake
        .requests()
        .into_iter()
        .find(|r| r.path == format!("/calendar/v3/calendars/{holidays}/events"))
        .expect("its events were listed");
    assert_eq!(
        listing.raw_path,
        "/calendar/v3/calendars/en.usa%23holiday@group.v.calendar.google.com/events"
    );

    let mut stream = app.stream(&ana).await;
    let work_mirror = mirror_id(&app, &ana, "Work").await;
    fake.remove_calendar(&work);
    let added = fake.add_calendar(&ana_at_google, "Trips", "owner");
    fake.insert_event(&added, timed("Flight", 6));
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    let mut frames = [stream.next_frame().await, stream.next_frame().await];
    frames.sort_by_key(|f| f["type"].as_str().unwrap_or_default().to_owned());
    assert_eq!(frames[0]["type"], "calendar_removed");
    assert_eq!(frames[0]["payload"]["id"], json!(work_mirror));
    let trips = mirror_id(&app, &ana, "Trips").await;
    assert_eq!(frames[1]["type"], "external_sync");
    assert_eq!(frames[1]["payload"]["calendars"], json!([trips]));
    assert_eq!(titles_in(&app, &ana, &trips).await, ["Flight"]);
    let names: Vec<Value> = google_mirrors(&app, &ana)
        .await
        .iter()
        .map(|m| m["name"].clone())
        .collect();
    assert_eq!(
        names,
        json!(["Holidays", "Trips", ana_at_google.email])
            .as_array()
            .unwrap()
            .clone()
    );

    // A mirror disconnected here stays away, and Google keeps the calendar.
    let (status, body) = app
        .call(
            reqwest::Method::POST,
            "/api/v1/users/connections/calendars/disconnect",
            &ana,
            Some(&json!({"calendarId": trips})),
        )
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"id": trips})));
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "calendar_removed");
    assert_eq!(frame["payload"]["id"], json!(trips));
    fake.insert_event(&added, timed("Return", 18));
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    let names: Vec<Value> = google_mirrors(&app, &ana)
        .await
        .iter()
        .map(|m| m["name"].clone())
        .collect();
    assert_eq!(names, [json!("Holidays"), json!(ana_at_google.email)]);
    assert_eq!(
        fake.live_events(&added).len(),
        2,
        "nothing deleted at Google"
    );
}

#[tokio::test]
async fn a_failed_sync_says_why_in_words() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, _work) = account(&fake);
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    fake.fail_next(1, 503);
    let (status, body) = sync_now(&app, &ana).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = body["error"].as_str().expect("error");
    assert!(
        message.starts_with("The calendar server could not be synced: ") && message.contains("503"),
        "{message}"
    );
    assert!(
        !message.contains("Some("),
        "a Rust debug form in a message for people: {message}"
    );
}

#[tokio::test]
async fn event_times_are_read_with_their_offsets_and_zones() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    // A calendar in New York, renamed at Google before Bowline sees it.
    fake.set_time_zone(&work, "America/New_York");
    fake.rename_calendar(&work, "Work (NY)");
    let offset_only = fake.insert_event(&work, timed("Offset only", 15));
    assert_eq!(
        offset_only["start"]["dateTime"], "2026-12-04T10:00:00-05:00",
        "Google writes it in the calendar's zone"
    );
    fake.insert_event(
        &work,
        json!({"summary": "Tokyo wall clock",
               "start": {"dateTime": "2026-12-05T09:00:00", "timeZone": "Asia/Tokyo"},
               "end": {"dateTime": "2026-12-05T10:30:00", "timeZone": "Asia/Tokyo"}}),
    );
    fake.insert_event(
        &work,
        json!({"summary": "Three days", "start": {"date": "2026-12-24"}, "end": {"date": "2026-12-27"}}),
    );
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work (NY)").await;
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        ["Offset only", "Three days", "Tokyo wall clock"]
    );
    let at = |event: &Value| {
        (
            event["start"].clone(),
            event["end"].clone(),
            event["isAllDay"].clone(),
        )
    };
    assert_eq!(
        at(&event_titled(&app, &ana, "Offset only").await),
        (
            json!("2026-12-04T15:00:00.000Z"),
            json!("2026-12-04T16:00:00.000Z"),
            json!(false)
        )
    );
    assert_eq!(
        at(&event_titled(&app, &ana, "Tokyo wall clock").await),
        (
            json!("2026-12-05T00:00:00.000Z"),
            json!("2026-12-05T01:30:00.000Z"),
            json!(false)
        )
    );
    assert_eq!(
        at(&event_titled(&app, &ana, "Three days").await),
        (
            json!("2026-12-24T00:00:00.000Z"),
            json!("2026-12-26T00:00:00.000Z"),
            json!(true)
        )
    );
}

#[tokio::test]
async fn the_timer_pulls_without_being_asked() {
    let fake = GoogleApi::start().await;
    let (ana_at_google, work) = account(&fake);
    let app = crate::helpers::spawn_app_with(|s| {
        crate::helpers::caldav::with_caldav(s);
        fake.configure(s);
        s.caldav.sync_interval_ms = 100;
    })
    .await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, "Work").await;
    let mut stream = app.stream(&ana).await;

    fake.insert_event(&work, timed("Seen by the timer", 10));
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "external_sync");
    assert_eq!(frame["payload"]["calendars"], json!([mirror]));
    assert_eq!(titles_in(&app, &ana, &mirror).await, ["Seen by the timer"]);
}
