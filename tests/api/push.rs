//! Reminders as web push, against a real push service (web-push-testing over TLS with a test
//! CA) that checks each request's VAPID token and decrypts its payload: the advertised key,
//! subscriptions and their rules, each due reminder arriving once per browser by the
//! clients' rules, nothing after unsubscribing, gone endpoints dropped, the catch-up bound
//! after an outage, and several instances sending each reminder once.

use std::time::Duration;

use bowline::config::Settings;
use bowline::domain::events::EventInput;
use bowline::domain::ids::UserId;
use bowline::http::event_bodies::EventBody;
use bowline::metrics::PUSH_DISPATCH_LAST_PASS;
use bowline::push::vapid::{VapidKeyPair, generate_key_pair};
use bowline::store::events::inserts::{NewEvent, insert_many};
use chrono::{DateTime, TimeDelta, Utc};
use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, DbBackend, EntityTrait, PaginatorTrait, Statement};
use serde_json::{Value, json};

use crate::helpers::{
    TestApp, TestUser, eventually, sample, spawn_app, spawn_app_sharing_database_with,
    spawn_app_with,
};
use crate::support::push_service::{PushService, Subscription};

const SUBSCRIPTIONS: &str = "/api/v1/push/subscriptions";
/// Long enough for a push to cross a loaded machine; the tests wait for states, never for
/// this long unless something is wrong.
const ARRIVAL: Duration = Duration::from_secs(20);

/// Push settings for a server using `service` and `keys`, ticking every 100 ms.
fn push_settings(s: &mut Settings, service: &PushService, keys: &VapidKeyPair) {
    s.push.vapid_public_key = Some(keys.public_key.clone());
    s.push.vapid_private_key = Some(bowline::config::Secret::new(keys.private_key.clone()));
    s.push.vapid_subject = Some("mailto:ops@example.com".into());
    s.push.tick_ms = 100;
    s.push.lease_ms = 1_000;
    s.outbound.ca_file = Some(service.ca_file().display().to_string());
}

/// Subscribes `user`'s browser `browser` with the server.
async fn subscribe(app: &TestApp, user: &TestUser, browser: &Subscription) -> StatusCode {
    let body = json!({
        "endpoint": browser.endpoint,
        "keys": { "p256dh": browser.p256dh, "auth": browser.auth },
    });
    app.call(Method::POST, SUBSCRIPTIONS, user, Some(&body))
        .await
        .0
}

/// A calendar of `user`; its id.
async fn calendar_of(app: &TestApp, user: &TestUser) -> String {
    app.create_calendar(user, "Reminders").await["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

/// Creates a timed event in `calendar` starting at `start` (the default rule reminds 10
/// minutes before); its id.
async fn event_at(
    app: &TestApp,
    user: &TestUser,
    calendar: &str,
    title: &str,
    start: DateTime<Utc>,
) -> String {
    let body = timed_event(calendar, title, start);
    app.create_event(user, &body).await;
    body["id"].as_str().expect("id").to_owned()
}

/// The body of a timed event in `calendar`, 30 minutes from `start`, with a new id.
fn timed_event(calendar: &str, title: &str, start: DateTime<Utc>) -> Value {
    json!({
        "id": uuid::Uuid::new_v4().to_string(),
        "organizer": "me",
        "title": title,
        "color": "#C8553D",
        "start": start.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "end": (start + TimeDelta::minutes(30)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "calendars": [calendar],
        "isCanceled": false,
        "isAllDay": false,
    })
}

/// A start whose default reminder (10 minutes before) falls due `in_` from now.
fn due_in(in_: TimeDelta) -> DateTime<Utc> {
    Utc::now() + TimeDelta::minutes(10) + in_
}

/// The decrypted payloads, parsed.
fn parsed(messages: &[String]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| serde_json::from_str(m).unwrap_or_else(|_| panic!("JSON payload: {m}")))
        .collect()
}

/// The payloads' titles.
fn titles(messages: &[String]) -> Vec<String> {
    parsed(messages)
        .iter()
        .map(|m| m["title"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn subscription_count(app: &TestApp) -> u64 {
    entities::push_subscriptions::Entity::find()
        .count(&app.db_connection().await)
        .await
        .expect("count")
}

#[tokio::test]
async fn without_vapid_keys_nothing_is_advertised_or_stored() {
    let app = spawn_app().await;
    let info: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
    assert_eq!(info["pushPublicKey"], Value::Null);
    let user = app.sign_up("no-push@example.com").await;
    let body = json!({
        "endpoint": "https://push.example/abc",
        "keys": { "p256dh": "x", "auth": "y" },
    });
    let (status, answer) = app
        .call(Method::POST, SUBSCRIPTIONS, &user, Some(&body))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(subscription_count(&app).await, 0);
}

#[tokio::test]
async fn a_due_reminder_arrives_decrypted_once_per_browser_by_the_clients_rules() {
    let service = PushService::start().await;
    let keys = generate_key_pair();
    let app = spawn_app_with(|s| push_settings(s, &service, &keys)).await;
    let info: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
    assert_eq!(info["pushPublicKey"], keys.public_key.as_str());

    let user = app.sign_up("pushed@example.com").await;
    let calendar = calendar_of(&app, &user).await;
    let laptop = service.subscribe(&keys.public_key).await;
    let phone = service.subscribe(&keys.public_key).await;
    for browser in [&laptop, &phone, &laptop] {
        assert_eq!(
            subscribe(&app, &user, browser).await,
            StatusCode::NO_CONTENT
        );
    }
    assert_eq!(
        subscription_count(&app).await,
        2,
        "subscribing again renews"
    );

    let start = due_in(TimeDelta::seconds(1));
    let standup = event_at(&app, &user, &calendar, "Standup", start).await;
    let declined = event_at(&app, &user, &calendar, "Declined", start).await;
    let (status, _) = app
        .call(
            Method::PUT,
            &format!("/api/v1/events/{declined}/attendance"),
            &user,
            Some(&json!({ "status": "declined" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let silenced = event_at(&app, &user, &calendar, "Silenced", start).await;
    let (status, _) = app
        .call(
            Method::PUT,
            &format!("/api/v1/reminders/events/{silenced}"),
            &user,
            Some(&json!({ "rule": { "minutesBefore": null, "allDay": null } })),
        )
        .await;
    assert!(status.is_success(), "{status}");

    for browser in [&laptop, &phone] {
        let messages = service.wait_for_messages(browser, 1, ARRIVAL).await;
        let payload = &parsed(&messages)[0];
        assert_eq!(payload["title"], "Standup");
        assert_eq!(payload["eventID"], standup.as_str());
        assert_eq!(
            payload["tag"],
            format!("{standup}_{}", start.timestamp_millis()),
            "the occurrence id, so a repeat replaces the banner"
        );
        assert!(payload["body"].as_str().is_some_and(|b| !b.is_empty()));
    }

    // A later reminder proves passes ran after the first: nothing was sent twice, and the
    // declined and silenced events stayed silent.
    assert_eq!(
        app.call(
            Method::DELETE,
            SUBSCRIPTIONS,
            &user,
            Some(&json!({ "endpoint": phone.endpoint }))
        )
        .await
        .0,
        StatusCode::NO_CONTENT
    );
    event_at(
        &app,
        &user,
        &calendar,
        "Retro",
        due_in(TimeDelta::seconds(1)),
    )
    .await;
    let laptop_got = service.wait_for_messages(&laptop, 2, ARRIVAL).await;
    assert_eq!(titles(&laptop_got), ["Standup", "Retro"]);
    // The phone unsubscribed before Retro fell due; a third reminder to the laptop shows
    // the dispatcher has moved past Retro's due time.
    event_at(
        &app,
        &user,
        &calendar,
        "Review",
        due_in(TimeDelta::seconds(1)),
    )
    .await;
    let laptop_got = service.wait_for_messages(&laptop, 3, ARRIVAL).await;
    assert_eq!(titles(&laptop_got), ["Standup", "Retro", "Review"]);
    assert_eq!(titles(&service.messages(&phone).await), ["Standup"]);

    // The pass that sent Review records it once its other sends are done.
    eventually("the sends are counted", || async {
        let metrics = app.metrics_text().await;
        sample(&metrics, "svc_push_sent_total").is_some_and(|n| n >= 4.0)
            && sample(&metrics, "svc_push_dispatch_last_pass_timestamp_seconds")
                .is_some_and(|t| t > 0.0)
    })
    .await;
}

#[tokio::test]
async fn subscriptions_are_checked_owned_and_end_with_their_session() {
    let service = PushService::start().await;
    let keys = generate_key_pair();
    let app = spawn_app_with(|s| push_settings(s, &service, &keys)).await;
    let user = app.sign_up("subscriber@example.com").await;
    let other = app.sign_up("other-subscriber@example.com").await;
    let browser = service.subscribe(&keys.public_key).await;
    let keys_of = |endpoint: &str| json!({ "endpoint": endpoint, "keys": { "p256dh": browser.p256dh, "auth": browser.auth } });
    let plain_http = browser.endpoint.replacen("https://", "http://", 1);
    for refused in [
        keys_of(&plain_http),
        keys_of("not a url"),
        keys_of(&format!("https://127.0.0.1/{}", "x".repeat(2100))),
        keys_of("https://user:pw@127.0.0.1/notify/x"),
        json!({ "endpoint": browser.endpoint, "keys": { "p256dh": "AAAA", "auth": browser.auth } }),
        json!({ "endpoint": browser.endpoint, "keys": { "p256dh": browser.p256dh, "auth": "x".repeat(300) } }),
        json!({ "endpoint": browser.endpoint, "keys": { "p256dh": browser.p256dh, "auth": browser.auth, "extra": 1 } }),
        json!({ "endpoint": browser.endpoint, "keys": { "p256dh": browser.p256dh, "auth": browser.auth }, "expirationTime": null, "more": true }),
        json!({ "endpoint": browser.endpoint }),
    ] {
        let (status, body) = app
            .call(Method::POST, SUBSCRIPTIONS, &user, Some(&refused))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}: {body}");
        assert!(body["error"].is_string() && body["requestId"].is_string());
    }
    assert_eq!(subscription_count(&app).await, 0);

    assert_eq!(
        subscribe(&app, &user, &browser).await,
        StatusCode::NO_CONTENT
    );
    // Another account cannot drop it.
    let (status, _) = app
        .call(
            Method::DELETE,
            SUBSCRIPTIONS,
            &other,
            Some(&json!({ "endpoint": browser.endpoint })),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(subscription_count(&app).await, 1);
    let anonymous = app
        .client
        .post(app.url(SUBSCRIPTIONS))
        .json(&keys_of(&browser.endpoint))
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    // Signing the session out removes what it subscribed.
    let (status, _) = app
        .call(Method::POST, "/api/auth/sign-out", &user, Some(&json!({})))
        .await;
    assert_eq!(status, StatusCode::OK);
    eventually("the signed-out session's subscription is gone", || async {
        subscription_count(&app).await == 0
    })
    .await;
}

#[tokio::test]
async fn an_endpoint_its_push_service_calls_gone_is_dropped() {
    let service = PushService::start().await;
    let keys = generate_key_pair();
    let app = spawn_app_with(|s| push_settings(s, &service, &keys)).await;
    let user = app.sign_up("gone@example.com").await;
    let calendar = calendar_of(&app, &user).await;
    let browser = service.subscribe(&keys.public_key).await;
    assert_eq!(
        subscribe(&app, &user, &browser).await,
        StatusCode::NO_CONTENT
    );
    service.expire(&browser).await;
    event_at(
        &app,
        &user,
        &calendar,
        "Nobody hears",
        due_in(TimeDelta::seconds(1)),
    )
    .await;
    eventually("the gone subscription is dropped", || async {
        subscription_count(&app).await == 0
    })
    .await;
    let metrics = app.metrics_text().await;
    assert_eq!(
        sample(&metrics, "svc_push_failures_total{reason=\"gone\"}"),
        Some(1.0),
        "{metrics}"
    );
}

#[tokio::test]
async fn after_an_outage_only_reminders_within_the_catch_up_are_sent() {
    let service = PushService::start().await;
    let keys = generate_key_pair();
    // The first instance only arranges: its one pass runs at start, before anything is due.
    let mut first = spawn_app_with(|s| {
        push_settings(s, &service, &keys);
        s.push.tick_ms = 3_600_000;
        s.push.lease_ms = 7_200_000;
    })
    .await;
    let user = first.sign_up("outage@example.com").await;
    let calendar = calendar_of(&first, &user).await;
    let browser = service.subscribe(&keys.public_key).await;
    assert_eq!(
        subscribe(&first, &user, &browser).await,
        StatusCode::NO_CONTENT
    );
    // Due an hour ago (too old), five minutes ago (within 15 minutes), and in a second.
    event_at(
        &first,
        &user,
        &calendar,
        "Too late",
        due_in(-TimeDelta::hours(1)),
    )
    .await;
    event_at(
        &first,
        &user,
        &calendar,
        "Still worth it",
        due_in(-TimeDelta::minutes(5)),
    )
    .await;
    event_at(
        &first,
        &user,
        &calendar,
        "On time",
        due_in(TimeDelta::seconds(1)),
    )
    .await;
    first.stop_in_place().await.expect("stops");
    // The server was down for two hours.
    let conn = first.db_connection().await;
    let two_hours_ago = Utc::now() - TimeDelta::hours(2);
    let backend = conn.get_database_backend();
    conn.execute_raw(Statement::from_sql_and_values(
        backend,
        match backend {
            sea_orm::DbBackend::Postgres => "UPDATE push_dispatch SET cursor = $1",
            _ => "UPDATE push_dispatch SET cursor = ?",
        },
        [two_hours_ago.into()],
    ))
    .await
    .expect("move the cursor back");

    let second = spawn_app_sharing_database_with(&first, |s| {
        s.push.tick_ms = 100;
        s.push.lease_ms = 1_000;
    })
    .await;
    let messages = service.wait_for_messages(&browser, 2, ARRIVAL).await;
    let mut got = titles(&messages);
    got.sort();
    assert_eq!(
        got,
        ["On time", "Still worth it"],
        "never the one an hour late"
    );
    eventually("the late reminder is counted as skipped", || async {
        sample(&second.metrics_text().await, "svc_push_skipped_total") == Some(1.0)
    })
    .await;
    // A later reminder shows the passes went on without sending the old one after all.
    event_at(
        &second,
        &user,
        &calendar,
        "Later",
        due_in(TimeDelta::seconds(1)),
    )
    .await;
    let messages = service.wait_for_messages(&browser, 3, ARRIVAL).await;
    assert!(!titles(&messages).contains(&"Too late".to_owned()));
    assert_eq!(
        sample(&second.metrics_text().await, "svc_push_skipped_total"),
        Some(1.0)
    );
}

#[tokio::test]
async fn several_instances_send_each_reminder_once_and_take_over_a_killed_one() {
    let service = PushService::start().await;
    let keys = generate_key_pair();
    let mut a = spawn_app_with(|s| push_settings(s, &service, &keys)).await;
    let b = spawn_app_sharing_database_with(&a, |_| {}).await;
    let user = a.sign_up("instances-push@example.com").await;
    let calendar = calendar_of(&a, &user).await;
    let browser = service.subscribe(&keys.public_key).await;
    assert_eq!(subscribe(&b, &user, &browser).await, StatusCode::NO_CONTENT);
    for title in ["One", "Two", "Three"] {
        event_at(
            &a,
            &user,
            &calendar,
            title,
            due_in(TimeDelta::milliseconds(500)),
        )
        .await;
    }
    let messages = service.wait_for_messages(&browser, 3, ARRIVAL).await;
    let mut got = titles(&messages);
    got.sort();
    assert_eq!(got, ["One", "Three", "Two"]);

    // Whoever held the dispatch dies without letting go; the other takes over after the
    // lease, without a gap (a reminder due meanwhile) or a repeat.
    a.kill_in_place().await;
    event_at(
        &b,
        &user,
        &calendar,
        "After",
        due_in(TimeDelta::milliseconds(200)),
    )
    .await;
    let messages = service.wait_for_messages(&browser, 4, ARRIVAL).await;
    assert_eq!(titles(&messages)[3], "After");
    event_at(
        &b,
        &user,
        &calendar,
        "Sentinel",
        due_in(TimeDelta::seconds(1)),
    )
    .await;
    let messages = service.wait_for_messages(&browser, 5, ARRIVAL).await;
    let mut got = titles(&messages);
    got.sort();
    assert_eq!(
        got,
        ["After", "One", "Sentinel", "Three", "Two"],
        "each once"
    );
}

/// A reminder that falls due while the write holding it is still open is not passed over:
/// a pass never dispatches past the start of a write in flight, and the reminder comes
/// once the write commits. On PostgreSQL passes run meanwhile (the test waits for one that
/// ran after the reminder fell due); on SQLite, where writes take turns, the pass's claim
/// waits for the write.
#[tokio::test]
async fn a_reminder_whose_write_is_still_open_when_it_falls_due_comes_once_it_commits() {
    let service = PushService::start().await;
    let keys = generate_key_pair();
    let app = spawn_app_with(|s| push_settings(s, &service, &keys)).await;
    let user = app.sign_up("in-flight-push@example.com").await;
    let calendar = calendar_of(&app, &user).await;
    let browser = service.subscribe(&keys.public_key).await;
    assert_eq!(
        subscribe(&app, &user, &browser).await,
        StatusCode::NO_CONTENT
    );
    let postgres = app.db_connection().await.get_database_backend() == DbBackend::Postgres;

    let start = due_in(TimeDelta::milliseconds(300));
    let body: EventBody =
        serde_json::from_value(timed_event(&calendar, "In flight", start)).expect("an event body");
    let input = EventInput::try_from(body).expect("a valid event");
    let home = input.home_for_create().expect("a home calendar");
    let creator = UserId::from(user.id.as_str());
    let txn = app
        .ctx()
        .shared
        .services
        .db
        .begin_write()
        .await
        .expect("begin");
    let new = [NewEvent {
        input: &input,
        creator: &creator,
        home,
    }];
    insert_many(&txn, &new, Utc::now()).await.expect("insert");
    if postgres {
        let due = (start - TimeDelta::minutes(10)).timestamp() as f64;
        eventually("a pass runs after the reminder fell due", || async {
            sample(&app.metrics_text().await, PUSH_DISPATCH_LAST_PASS)
                .is_some_and(|at| at >= due + 2.0)
        })
        .await;
    }
    txn.commit().await.expect("commit");
    let messages = service.wait_for_messages(&browser, 1, ARRIVAL).await;
    assert_eq!(titles(&messages), ["In flight"]);
}

/// A push service that is not well: `/hang` never answers, `/flaky` answers 429 (with a
/// `Retry-After` of 0) before it accepts. Counts the hits of each.
struct UnwellPushService {
    base: String,
    hits: std::sync::Arc<parking_lot::Mutex<std::collections::HashMap<String, usize>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for UnwellPushService {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl UnwellPushService {
    async fn start() -> Self {
        use warp::Filter;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let hits = std::sync::Arc::new(parking_lot::Mutex::new(std::collections::HashMap::<
            String,
            usize,
        >::new()));
        let counted = hits.clone();
        let route =
            warp::post()
                .and(warp::path::param::<String>())
                .and_then(move |which: String| {
                    let counted = counted.clone();
                    async move {
                        let hit = {
                            let mut hits = counted.lock();
                            let hit = hits.entry(which.clone()).or_default();
                            *hit += 1;
                            *hit
                        };
                        if which == "hang" {
                            std::future::pending::<()>().await;
                        }
                        let status = if hit == 1 {
                            warp::http::StatusCode::TOO_MANY_REQUESTS
                        } else {
                            warp::http::StatusCode::CREATED
                        };
                        Ok::<_, std::convert::Infallible>(warp::reply::with_header(
                            warp::reply::with_status("", status),
                            "retry-after",
                            "0",
                        ))
                    }
                });
        let server = tokio::spawn(warp::serve(route).incoming(listener).run());
        Self { base, hits, server }
    }

    fn hits(&self, which: &str) -> usize {
        self.hits.lock().get(which).copied().unwrap_or_default()
    }
}

#[tokio::test]
async fn a_throttled_push_service_is_retried_and_a_hanging_one_delays_nobody() {
    let service = PushService::start().await;
    let unwell = UnwellPushService::start().await;
    let keys = generate_key_pair();
    let app = spawn_app_with(|s| {
        push_settings(s, &service, &keys);
        // Longer than the arrival wait: a pass that waited for the hanging service before
        // sending the rest would fail this test.
        s.push.request_timeout_ms = 60_000;
        s.push.lease_ms = 120_000;
    })
    .await;
    let user = app.sign_up("unwell-push@example.com").await;
    let calendar = calendar_of(&app, &user).await;
    let browser = service.subscribe(&keys.public_key).await;
    assert_eq!(
        subscribe(&app, &user, &browser).await,
        StatusCode::NO_CONTENT
    );
    // Two more browsers of the same user at the unwell service (plain http on loopback, which
    // only the store takes: the API admits https endpoints only). They sort before the real
    // one, so their sends start first.
    let conn = app.db_connection().await;
    let session = entities::sessions::Entity::find()
        .one(&conn)
        .await
        .expect("read")
        .expect("a session");
    for which in ["hang", "flaky"] {
        let now = Utc::now();
        let row = entities::push_subscriptions::ActiveModel {
            id: sea_orm::ActiveValue::Set(uuid::Uuid::new_v4()),
            user_id: sea_orm::ActiveValue::Set(user.id.as_str().into()),
            session_id: sea_orm::ActiveValue::Set(session.id.clone()),
            endpoint: sea_orm::ActiveValue::Set(format!("{}/{which}", unwell.base)),
            p256dh: sea_orm::ActiveValue::Set(browser.p256dh.clone()),
            auth: sea_orm::ActiveValue::Set(browser.auth.clone()),
            created_at: sea_orm::ActiveValue::Set(now),
            last_seen_at: sea_orm::ActiveValue::Set(now),
        };
        entities::push_subscriptions::Entity::insert(row)
            .exec(&conn)
            .await
            .expect("store an unwell browser");
    }

    event_at(
        &app,
        &user,
        &calendar,
        "Prompt",
        due_in(TimeDelta::seconds(1)),
    )
    .await;
    let messages = service.wait_for_messages(&browser, 1, ARRIVAL).await;
    assert_eq!(titles(&messages), ["Prompt"]);
    eventually("the throttled push is retried and accepted", || async {
        unwell.hits("flaky") == 2
    })
    .await;
    assert_eq!(unwell.hits("hang"), 1);
}
