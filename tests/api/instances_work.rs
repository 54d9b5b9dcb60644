//! Work that runs on one instance when several share one database: each connected
//! account's sync runs where its lease is held, moves to a survivor within
//! `PROVIDER_LEASE_MS` when that instance dies (no outbox row delivered twice), a "sync now"
//! asked of another instance is run by the holder, and a change-mail batch claimed by an
//! instance that died is sent by another once the claim ends, once.
//!
//! Leases mean something on PostgreSQL (several processes); on SQLite one process serves
//! the file and holds every account itself, which is what these tests check there.

use std::time::{Duration, Instant};

use chrono::Utc;
use reqwest::StatusCode;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};
use serde_json::json;

use crate::change_mails::{attended, move_to};
use crate::helpers::google::{google_id, link, mirror_id, outbox_rows, sync_now, titles_in};
use crate::helpers::{
    TestApp, TestUser, event_body, eventually, sample, spawn_app_sharing_database, spawn_app_with,
    spawn_app_with_mail_and,
};
use crate::support::google_api::{GoogleApi, GoogleUser};
use crate::support::smtp::SmtpSink;

/// Slack on top of `PROVIDER_LEASE_MS` for a takeover: noticing the new holder's turn and
/// the deliveries themselves, on a busy test machine.
const TAKEOVER_MARGIN: Duration = Duration::from_secs(3);

fn account(fake: &GoogleApi) -> (GoogleUser, String) {
    let user = fake.add_user("lea.lease@gmail.com", "Lea Lease");
    let work = fake.add_calendar(&user, "Work", "owner");
    (user, work)
}

async fn is_postgres(app: &TestApp) -> bool {
    app.db_connection().await.get_database_backend() == DbBackend::Postgres
}

fn instance_id(app: &TestApp) -> String {
    app.ctx().instance_id.clone()
}

/// The instance named on the Google account's lease row, if it has one.
async fn lease_owner(conn: &DatabaseConnection) -> Option<String> {
    conn.query_one_raw(Statement::from_string(
        conn.get_database_backend(),
        "SELECT lease_owner FROM provider_leases WHERE provider = 'google'",
    ))
    .await
    .expect("query")
    .and_then(|row| row.try_get::<Option<String>>("", "lease_owner").ok())
    .flatten()
}

/// Waits until one of `apps` holds the account's lease; its index.
async fn holder(conn: &DatabaseConnection, apps: &[&TestApp]) -> usize {
    let ids: Vec<String> = apps.iter().map(|app| instance_id(app)).collect();
    eventually("one of the live instances holds the account", || async {
        lease_owner(conn)
            .await
            .is_some_and(|owner| ids.contains(&owner))
    })
    .await;
    let owner = lease_owner(conn).await.expect("an owner");
    ids.iter()
        .position(|id| *id == owner)
        .expect("a live owner")
}

/// `svc_provider_leases_held` of `app`.
async fn leases_held(app: &TestApp) -> f64 {
    sample(&app.metrics_text().await, "svc_provider_leases_held ").unwrap_or(-1.0)
}

/// Creates events titled `titles` in `mirror` through `app`; their Google ids.
async fn write(app: &TestApp, user: &TestUser, mirror: &str, titles: &[String]) -> Vec<String> {
    let mut ids = Vec::new();
    for (title, hour) in titles.iter().zip(8..) {
        let created = app
            .create_event(user, &event_body(&[mirror], title, hour))
            .await;
        ids.push(google_id(created["id"].as_str().expect("id")));
    }
    ids
}

/// Waits until Google holds exactly `titles` in `work` and the outbox is empty, then checks
/// that each of `written` was inserted exactly once.
async fn delivered_once(
    app: &TestApp,
    fake: &GoogleApi,
    work: &str,
    titles: &[String],
    written: &[String],
) {
    let mut expected = titles.to_vec();
    expected.sort();
    eventually("every write delivered", || async {
        let mut live: Vec<String> = fake
            .live_events(work)
            .iter()
            .map(|event| event["summary"].as_str().unwrap_or_default().to_owned())
            .collect();
        live.sort();
        live == expected && outbox_rows(app).await == 0
    })
    .await;
    let events = format!("/calendar/v3/calendars/{work}/events");
    let requests = fake.requests();
    for gid in written {
        let inserts: Vec<u16> = requests
            .iter()
            .filter(|r| {
                r.method == "POST"
                    && r.path == events
                    && r.body
                        .as_ref()
                        .is_some_and(|body| body["id"] == gid.as_str())
            })
            .map(|r| r.status)
            .collect();
        assert_eq!(inserts, [200], "{gid} reached Google exactly once");
    }
}

/// The lease of these tests: short, so a dead holder's accounts move within the wait. Other
/// tests keep the default (30 s), so a busy machine's pauses never let a single instance's
/// lease lapse.
const SHORT_LEASE_MS: u64 = 1_500;

/// [`crate::helpers::google::google_app`] with [`SHORT_LEASE_MS`]; instances started beside
/// it share its settings.
async fn leasing_google_app(fake: &GoogleApi) -> TestApp {
    spawn_app_with(|s| {
        crate::helpers::caldav::with_caldav(s);
        fake.configure(s);
        s.caldav.outbox_retry_base_ms = 50;
        s.caldav.outbox_retry_max_ms = 200;
        s.caldav.provider_lease_ms = SHORT_LEASE_MS;
    })
    .await
}

#[tokio::test]
async fn an_account_moves_to_a_survivor_within_the_lease_when_its_holder_dies() {
    let fake = GoogleApi::start().await;
    let (lea_at_google, work) = account(&fake);
    let first = leasing_google_app(&fake).await;
    let conn = first.db_connection().await;
    let lease = Duration::from_millis(first.ctx().settings.caldav.provider_lease_ms);

    if !is_postgres(&first).await {
        // One process serves an SQLite file: it holds every account, writes no lease, and
        // delivers each write once.
        let lea = first.sign_up("lea@example.com").await;
        link(&first, &lea, &fake, &lea_at_google).await;
        let mirror = mirror_id(&first, &lea, "Work").await;
        let titles = ["S1".to_owned(), "S2".to_owned()];
        let written = write(&first, &lea, &mirror, &titles).await;
        delivered_once(&first, &fake, &work, &titles, &written).await;
        assert_eq!(lease_owner(&conn).await, None, "no lease on SQLite");
        assert_eq!(leases_held(&first).await, 1.0);
        return;
    }

    let second = spawn_app_sharing_database(&first).await;
    let third = spawn_app_sharing_database(&first).await;
    let mut apps = vec![first, second, third];
    let lea = apps[0].sign_up("lea@example.com").await;
    link(&apps[0], &lea, &fake, &lea_at_google).await;
    let mirror = mirror_id(&apps[0], &lea, "Work").await;
    let mut titles = vec!["Before".to_owned()];
    let mut written = write(&apps[0], &lea, &mirror, &titles).await;
    delivered_once(&apps[0], &fake, &work, &titles, &written).await;

    let mut dead = Vec::new();
    for round in ["First", "Second"] {
        // Every live instance runs an actor for the account (the ones it was not connected
        // through found it), exactly one of them holds it.
        let live: Vec<&TestApp> = apps.iter().collect();
        let held = holder(&conn, &live).await;
        for (n, app) in apps.iter().enumerate() {
            let expected = if n == held { 1.0 } else { 0.0 };
            eventually("the gauge says who holds the account", || async {
                leases_held(app).await == expected
            })
            .await;
        }

        let mut victim = apps.remove(held);
        victim.kill_in_place().await;
        let killed = Instant::now();
        dead.push(victim);

        let survivor = &apps[0];
        let new_titles = [
            format!("{round} 1"),
            format!("{round} 2"),
            format!("{round} 3"),
        ];
        written.extend(write(survivor, &lea, &mirror, &new_titles).await);
        titles.extend(new_titles);
        delivered_once(survivor, &fake, &work, &titles, &written).await;
        let took = killed.elapsed();
        assert!(
            took <= lease + TAKEOVER_MARGIN,
            "{round} takeover took {took:?} (lease {lease:?})"
        );
        let live: Vec<&TestApp> = apps.iter().collect();
        holder(&conn, &live).await;
    }
}

#[tokio::test]
async fn sync_now_on_an_instance_not_holding_the_account_is_run_by_the_holder() {
    let fake = GoogleApi::start().await;
    let (lea_at_google, work) = account(&fake);
    let first = leasing_google_app(&fake).await;
    let conn = first.db_connection().await;
    let postgres = is_postgres(&first).await;
    let second = if postgres {
        Some(spawn_app_sharing_database(&first).await)
    } else {
        None
    };
    let lea = first.sign_up("lea@example.com").await;
    link(&first, &lea, &fake, &lea_at_google).await;
    let mirror = mirror_id(&first, &lea, "Work").await;

    // On SQLite the one instance holds the account; on PostgreSQL ask the other one.
    let (asked, holder_app) = match &second {
        Some(second) => {
            let apps = [&first, second];
            let held = holder(&conn, &apps).await;
            (apps[1 - held], apps[held])
        }
        None => (&first, &first),
    };
    fake.insert_event(
        &work,
        json!({
            "summary": "Made at Google",
            "start": {"dateTime": "2026-12-04T10:00:00Z"},
            "end": {"dateTime": "2026-12-04T11:00:00Z"},
        }),
    );
    assert_eq!(sync_now(asked, &lea).await, (StatusCode::OK, json!("OK")));
    assert_eq!(
        titles_in(asked, &lea, &mirror).await,
        ["Made at Google"],
        "pulled before the answer"
    );
    if !postgres {
        return;
    }
    assert_eq!(
        lease_owner(&conn).await,
        Some(instance_id(holder_app)),
        "the holder kept the account"
    );

    // A graceful stop releases the lease at once: the other instance takes it long before
    // the lease would have expired.
    let holder_id = instance_id(holder_app);
    let asked_id = instance_id(asked);
    let (mut stopping, staying) = if holder_id == instance_id(&first) {
        (first, second.expect("second"))
    } else {
        (second.expect("second"), first)
    };
    stopping.stop_in_place().await.expect("graceful stop");
    let stopped = Instant::now();
    assert_ne!(lease_owner(&conn).await, Some(holder_id), "released");
    eventually("the other instance took the account", || async {
        lease_owner(&conn).await == Some(asked_id.clone())
    })
    .await;
    let lease = Duration::from_millis(staying.ctx().settings.caldav.provider_lease_ms);
    assert!(
        stopped.elapsed() < lease,
        "taken before the lease would expire"
    );
}

#[tokio::test]
async fn a_batch_claimed_by_an_instance_that_died_is_sent_by_another_once_the_claim_ends() {
    let sink = SmtpSink::start().await;
    let mut first = spawn_app_with_mail_and(&sink, |s| {
        s.mail.batch_delay_ms = 1_000;
    })
    .await;
    let conn = first.db_connection().await;
    // On PostgreSQL the second instance runs all along and hears of the batch when it is
    // queued; on SQLite it is the next process on the file.
    let postgres = is_postgres(&first).await;
    let mut second = if postgres {
        Some(spawn_app_sharing_database(&first).await)
    } else {
        None
    };
    let s = crate::calendars::shared(&first, "claimed-and-died").await;
    let mut standup = attended(&first, &s, "Standup", &[&s.viewer]).await;
    move_to(&first, &s, &mut standup, 10).await;

    // The first instance claims the batch as its mailer does when it is due, and dies
    // before sending: the claim ends after the batch's due time.
    let claim_ends = Utc::now() + chrono::Duration::milliseconds(2_500);
    let claimed = conn
        .execute_raw(Statement::from_sql_and_values(
            conn.get_database_backend(),
            match conn.get_database_backend() {
                DbBackend::Postgres => {
                    "UPDATE pending_notifications SET claimed_until = $1 WHERE user_id = $2"
                }
                _ => "UPDATE pending_notifications SET claimed_until = ? WHERE user_id = ?",
            },
            [claim_ends.into(), s.viewer.id.clone().into()],
        ))
        .await
        .expect("claim");
    assert_eq!(claimed.rows_affected(), 1);
    first.kill_in_place().await;
    if second.is_none() {
        second = Some(spawn_app_sharing_database(&first).await);
    }
    let _second = second;

    let mail = sink.next_mail().await;
    let sent = Utc::now();
    assert_eq!(mail.to, std::slice::from_ref(&s.viewer.email));
    assert!(
        sent >= claim_ends,
        "not sent before the claim ended ({sent} < {claim_ends})"
    );
    eventually("the batch is done", || async {
        conn.query_one_raw(Statement::from_string(
            conn.get_database_backend(),
            "SELECT count(*) AS n FROM pending_notifications",
        ))
        .await
        .expect("count")
        .and_then(|row| row.try_get::<i64>("", "n").ok())
            == Some(0)
    })
    .await;
    assert!(sink.try_next_mail().await.is_none(), "sent once");
}
