//! The CalDAV client against real Radicale and Xandikos servers (each scenario once per
//! server), and the outbound guard's rules against loopback test servers: refused schemes and
//! addresses, redirects and the Authorization header, timeouts and the body cap.

use std::time::{Duration, Instant};

use bowline::providers::caldav::{CaldavClient, CaldavError};
use bowline::providers::outbound::{GuardSettings, OutboundError, OutboundGuard, OutboundRequest};
use http::{HeaderValue, Method, header};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use url::Url;

use crate::support::caldav_servers::{CaldavKind, CaldavServer};

/// Around every await that talks to a server.
const WAIT: Duration = Duration::from_secs(20);

fn settings(allow_private_hosts: bool) -> GuardSettings {
    GuardSettings {
        allow_private_hosts,
        connect_timeout: Duration::from_secs(5),
        total_timeout: Duration::from_secs(15),
        max_redirects: 5,
        max_body_bytes: 4 * 1024 * 1024,
        extra_roots: Vec::new(),
    }
}

fn guard(allow_private_hosts: bool) -> OutboundGuard {
    OutboundGuard::new(settings(allow_private_hosts)).unwrap()
}

fn client(server: &CaldavServer) -> CaldavClient {
    CaldavClient::new(guard(true), &server.username, &server.password)
}

fn url(text: &str) -> Url {
    Url::parse(text).unwrap()
}

async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .expect("the call did not finish in time")
}

fn event(uid: &str, summary: &str) -> String {
    format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//bowline//tests//EN\r\nBEGIN:VEVENT\r\n\
         UID:{uid}\r\nDTSTAMP:20250101T000000Z\r\nDTSTART:20250310T090000Z\r\n\
         DTEND:20250310T100000Z\r\nSUMMARY:{summary}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
}

const RECURRING: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//example//sync-test//EN\r\n\
BEGIN:VEVENT\r\nUID:evt-3@example.test\r\nDTSTAMP:20250101T000000Z\r\nDTSTART:20250303T080000Z\r\n\
DTEND:20250303T083000Z\r\nRRULE:FREQ=WEEKLY;COUNT=4\r\nEXDATE:20250317T080000Z\r\n\
SUMMARY:Weekly 1:1\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:evt-3@example.test\r\n\
DTSTAMP:20250101T000000Z\r\nRECURRENCE-ID:20250310T080000Z\r\nDTSTART:20250311T080000Z\r\n\
DTEND:20250311T083000Z\r\nSUMMARY:Weekly 1:1 (moved to Tuesday)\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

// ---------------------------------------------------------------------------------------
// Scenarios, each run against both servers.

async fn discovery_finds_principal_and_home(kind: CaldavKind) {
    let server = CaldavServer::start(kind).await;
    let client = client(&server);
    let found = within(client.discover(&url(&server.base_url)))
        .await
        .unwrap();
    let principal = match kind {
        CaldavKind::Radicale => format!("{}alice/", server.base_url),
        CaldavKind::Xandikos => format!("{}user/", server.base_url),
    };
    assert_eq!(found.principal, url(&principal));
    assert_eq!(found.home, url(&server.calendar_home()));

    // A URL that is no DAV resource: found through /.well-known/caldav, whose redirect
    // (Radicale 301, Xandikos 302) the PROPFIND follows.
    let elsewhere = url(&format!("{}no/such/place/", server.base_url));
    let again = within(client.discover(&elsewhere)).await.unwrap();
    assert_eq!(again, found);

    // The principal URL itself works too.
    let direct = within(client.discover(&found.principal)).await.unwrap();
    assert_eq!(direct.home, found.home);
}

async fn calendars_are_listed_made_renamed_and_deleted(kind: CaldavKind) {
    let server = CaldavServer::start(kind).await;
    let client = client(&server);
    let home = url(&server.calendar_home());
    let work = url(&server.make_calendar("work", "Work").await);

    let calendars = within(client.calendars(&home)).await.unwrap();
    let listed = calendars
        .iter()
        .find(|calendar| calendar.url == work)
        .unwrap_or_else(|| panic!("{work} not in {calendars:?}"));
    assert_eq!(listed.name.as_deref(), Some("Work"));
    assert_eq!(listed.color.as_deref(), Some("#FF5733FF"));
    assert!(listed.ctag.is_some(), "{listed:?}");
    assert!(listed.sync_token.is_some(), "{listed:?}");
    assert!(!listed.read_only);
    assert!(listed.has_events);
    assert!(calendars.iter().all(|calendar| calendar.url != home));

    let team = within(client.make_calendar(&home, "Team & Co", "#00AA00FF"))
        .await
        .unwrap();
    assert!(team.as_str().starts_with(home.as_str()) && team.path().ends_with('/'));
    let made = within(client.calendars(&home)).await.unwrap();
    let made = made.iter().find(|calendar| calendar.url == team).unwrap();
    assert_eq!(made.name.as_deref(), Some("Team & Co"));
    assert_eq!(made.color.as_deref(), Some("#00AA00FF"));
    assert!(made.has_events);

    within(client.update_calendar(&team, "Renamed", "#123456FF"))
        .await
        .unwrap();
    let renamed = within(client.calendars(&home)).await.unwrap();
    let renamed = renamed
        .iter()
        .find(|calendar| calendar.url == team)
        .unwrap();
    assert_eq!(renamed.name.as_deref(), Some("Renamed"));
    assert_eq!(renamed.color.as_deref(), Some("#123456FF"));

    within(client.delete_calendar(&team)).await.unwrap();
    let left = within(client.calendars(&home)).await.unwrap();
    assert!(left.iter().all(|calendar| calendar.url != team));
    // Already gone: still fine.
    within(client.delete_calendar(&team)).await.unwrap();
}

async fn writes_are_conditional(kind: CaldavKind) {
    let server = CaldavServer::start(kind).await;
    let client = client(&server);
    let calendar = server.make_calendar("work", "Work").await;
    let resource = url(&format!("{calendar}evt-1.ics"));

    let created = within(client.create(&resource, &event("evt-1@test", "Standup")))
        .await
        .unwrap()
        .expect("an ETag on 201");
    assert!(
        created.starts_with('"') && created.ends_with('"'),
        "{created}"
    );
    let again = within(client.create(&resource, &event("evt-1@test", "Standup"))).await;
    assert!(
        matches!(again, Err(CaldavError::PreconditionFailed)),
        "{again:?}"
    );

    let got = within(client.get(&resource)).await.unwrap().unwrap();
    assert_eq!(got.etag.as_deref(), Some(created.as_str()));
    assert!(got.data.contains("UID:evt-1@test"));

    let updated = within(client.update(&resource, &event("evt-1@test", "Moved"), &created))
        .await
        .unwrap()
        .expect("an ETag after the update");
    assert_ne!(updated, created);
    let stale = within(client.update(&resource, &event("evt-1@test", "Lost"), &created)).await;
    assert!(
        matches!(stale, Err(CaldavError::PreconditionFailed)),
        "{stale:?}"
    );
    assert!(
        server
            .get(resource.as_str())
            .await
            .unwrap()
            .1
            .contains("Moved")
    );

    let stale = within(client.delete(&resource, Some(&created))).await;
    assert!(
        matches!(stale, Err(CaldavError::PreconditionFailed)),
        "{stale:?}"
    );
    within(client.delete(&resource, Some(&updated)))
        .await
        .unwrap();
    let gone = within(client.delete(&resource, None)).await;
    assert!(matches!(gone, Err(CaldavError::NotFound)), "{gone:?}");
    assert!(within(client.get(&resource)).await.unwrap().is_none());
}

async fn sync_collection_reports_changes_and_removals(kind: CaldavKind) {
    let server = CaldavServer::start(kind).await;
    let client = client(&server);
    let calendar_text = server.make_calendar("work", "Work").await;
    let calendar = url(&calendar_text);
    let a_etag = server
        .put_event(&calendar_text, "a.ics", &event("a@test", "A"))
        .await;
    let b_etag = server
        .put_event(&calendar_text, "b.ics", &event("b@test", "B"))
        .await;
    let a = url(&format!("{calendar_text}a.ics"));
    let b = url(&format!("{calendar_text}b.ics"));

    let initial = within(client.sync_collection(&calendar, None))
        .await
        .unwrap();
    let mut changed: Vec<_> = initial
        .changed
        .iter()
        .map(|member| (member.url.clone(), member.etag.clone()))
        .collect();
    changed.sort();
    assert_eq!(
        changed,
        [(a.clone(), Some(a_etag)), (b.clone(), Some(b_etag))]
    );
    assert!(initial.removed.is_empty(), "{initial:?}");

    // Nothing changed: nothing listed.
    let quiet = within(client.sync_collection(&calendar, Some(&initial.token)))
        .await
        .unwrap();
    assert!(
        quiet.changed.is_empty() && quiet.removed.is_empty(),
        "{quiet:?}"
    );

    let b_new = server
        .put_event(&calendar_text, "b.ics", &event("b@test", "B2"))
        .await;
    let after_change = within(client.sync_collection(&calendar, Some(&quiet.token)))
        .await
        .unwrap();
    assert_eq!(after_change.changed.len(), 1, "{after_change:?}");
    assert_eq!(after_change.changed[0].url, b);
    assert_eq!(
        after_change.changed[0].etag.as_deref(),
        Some(b_new.as_str())
    );
    assert!(after_change.removed.is_empty());

    server.delete(a.as_str()).await;
    let after_delete = within(client.sync_collection(&calendar, Some(&after_change.token)))
        .await
        .unwrap();
    assert_eq!(after_delete.removed, vec![a], "{after_delete:?}");
    assert!(after_delete.changed.is_empty());

    let bogus = "http://radicale.org/ns/sync/0000000000000000000000000000000000000000000000000000000000000000";
    let invalid = within(client.sync_collection(&calendar, Some(bogus))).await;
    assert!(
        matches!(invalid, Err(CaldavError::InvalidSyncToken)),
        "{invalid:?}"
    );
    let invalid = within(client.sync_collection(&calendar, Some("not-a-token"))).await;
    assert!(
        matches!(invalid, Err(CaldavError::InvalidSyncToken)),
        "{invalid:?}"
    );

    // The members PROPFIND agrees with the server's own listing.
    let mut members: Vec<_> = within(client.members(&calendar))
        .await
        .unwrap()
        .into_iter()
        .map(|member| (member.url.to_string(), member.etag.unwrap()))
        .collect();
    members.sort();
    assert_eq!(members, server.list(&calendar_text).await);
}

async fn multiget_fetches_and_skips_missing(kind: CaldavKind) {
    let server = CaldavServer::start(kind).await;
    let client = client(&server);
    let calendar_text = server.make_calendar("work", "Work").await;
    let calendar = url(&calendar_text);
    let one = server
        .put_event(&calendar_text, "one.ics", &event("one@test", "One"))
        .await;
    let two = server
        .put_event(&calendar_text, "two.ics", &event("two@test", "Two"))
        .await;
    let hrefs = [
        url(&format!("{calendar_text}one.ics")),
        url(&format!("{calendar_text}missing.ics")),
        url(&format!("{calendar_text}two.ics")),
    ];
    let mut objects = within(client.fetch(&calendar, &hrefs)).await.unwrap();
    objects.sort_by(|x, y| x.url.cmp(&y.url));
    assert_eq!(objects.len(), 2, "{objects:?}");
    assert_eq!(objects[0].url, hrefs[0]);
    assert_eq!(objects[0].etag.as_deref(), Some(one.as_str()));
    assert!(objects[0].data.contains("UID:one@test"));
    assert_eq!(objects[1].url, hrefs[2]);
    assert_eq!(objects[1].etag.as_deref(), Some(two.as_str()));
    assert!(objects[1].data.contains("SUMMARY:Two"));
    assert!(
        within(client.fetch(&calendar, &[]))
            .await
            .unwrap()
            .is_empty()
    );
}

async fn recurring_event_round_trips(kind: CaldavKind) {
    let server = CaldavServer::start(kind).await;
    let client = client(&server);
    let calendar = server.make_calendar("work", "Work").await;
    let resource = url(&format!("{calendar}evt-3.ics"));
    let etag = within(client.create(&resource, RECURRING)).await.unwrap();
    let got = within(client.get(&resource)).await.unwrap().unwrap();
    if let Some(etag) = etag {
        assert_eq!(got.etag.as_deref(), Some(etag.as_str()));
    }
    // Servers re-serialise (Radicale through vobject): compare properties, not bytes.
    for line in [
        "UID:evt-3@example.test",
        "RRULE:FREQ=WEEKLY;COUNT=4",
        "EXDATE:20250317T080000Z",
        "RECURRENCE-ID:20250310T080000Z",
        "SUMMARY:Weekly 1:1 (moved to Tuesday)",
    ] {
        assert!(
            got.data.contains(line),
            "{line} missing from:\n{}",
            got.data
        );
    }
    assert_eq!(got.data.matches("BEGIN:VEVENT").count(), 2);
}

macro_rules! both_servers {
    ($($scenario:ident),* $(,)?) => {
        mod radicale {
            $(
                #[tokio::test]
                async fn $scenario() {
                    super::$scenario(super::CaldavKind::Radicale).await;
                }
            )*
        }
        mod xandikos {
            $(
                #[tokio::test]
                async fn $scenario() {
                    super::$scenario(super::CaldavKind::Xandikos).await;
                }
            )*
        }
    };
}

both_servers!(
    discovery_finds_principal_and_home,
    calendars_are_listed_made_renamed_and_deleted,
    writes_are_conditional,
    sync_collection_reports_changes_and_removals,
    multiget_fetches_and_skips_missing,
    recurring_event_round_trips,
);

// ---------------------------------------------------------------------------------------
// Radicale only.

#[tokio::test]
async fn radicale_wrong_password_is_unauthorized() {
    let server = CaldavServer::start(CaldavKind::Radicale).await;
    let client = CaldavClient::new(guard(true), &server.username, "wrong-password");
    let result = within(client.discover(&url(&server.base_url))).await;
    assert!(
        matches!(result, Err(CaldavError::Unauthorized)),
        "{result:?}"
    );
    let result = within(client.calendars(&url(&server.calendar_home()))).await;
    assert!(
        matches!(result, Err(CaldavError::Unauthorized)),
        "{result:?}"
    );
}

#[tokio::test]
async fn radicale_strict_preconditions_still_take_conditional_writes() {
    let server = CaldavServer::start_radicale_strict().await;
    let client = client(&server);
    let calendar = server.make_calendar("work", "Work").await;
    let resource = url(&format!("{calendar}e.ics"));
    let etag = within(client.create(&resource, &event("e@test", "E")))
        .await
        .unwrap()
        .unwrap();
    within(client.update(&resource, &event("e@test", "E2"), &etag))
        .await
        .unwrap();
    let again = within(client.create(&resource, &event("e@test", "E3"))).await;
    assert!(
        matches!(again, Err(CaldavError::PreconditionFailed)),
        "{again:?}"
    );
}

#[tokio::test]
async fn a_killed_server_is_a_transient_error_until_it_is_back() {
    let mut server = CaldavServer::start(CaldavKind::Radicale).await;
    let client = client(&server);
    let calendar = server.make_calendar("work", "Work").await;
    let etag = server
        .put_event(&calendar, "kept.ics", &event("kept@test", "Kept"))
        .await;
    server.kill();
    let down = within(client.members(&url(&calendar))).await;
    let err = down.unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    server.restart().await;
    let members = within(client.members(&url(&calendar))).await.unwrap();
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].etag.as_deref(), Some(etag.as_str()));
}

// ---------------------------------------------------------------------------------------
// The outbound guard.

#[tokio::test]
async fn guard_refuses_non_public_targets_without_connecting() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let guard = guard(false);
    assert!(!guard.allows_private_hosts());
    for target in [
        format!("http://127.0.0.1:{port}/"),
        format!("https://127.0.0.1:{port}/"),
        format!("https://[::ffff:127.0.0.1]:{port}/"),
        format!("https://[::1]:{port}/"),
        format!("https://localhost:{port}/"),
        "https://10.0.0.1/".to_owned(),
        "https://192.168.1.10/".to_owned(),
        "https://169.254.169.254/latest/meta-data/".to_owned(),
        "https://100.64.1.1/".to_owned(),
        "https://[fd00::1]/".to_owned(),
        "https://[fe80::1]/".to_owned(),
        "https://0.0.0.0/".to_owned(),
        "https://2130706433/".to_owned(),
        "ftp://example.com/".to_owned(),
        "file:///etc/passwd".to_owned(),
    ] {
        let target = url(&target);
        let started = Instant::now();
        let checked = within(guard.check(&target)).await;
        assert!(
            matches!(checked, Err(OutboundError::Refused(_))),
            "{target}: {checked:?}"
        );
        let sent = within(guard.send(OutboundRequest::new(Method::GET, target.clone()))).await;
        assert!(
            matches!(sent, Err(OutboundError::Refused(_))),
            "{target}: {sent:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{target} took long"
        );
    }
    // Nothing reached the loopback listener.
    let accepted = tokio::time::timeout(Duration::from_millis(300), listener.accept()).await;
    assert!(
        accepted.is_err(),
        "the guard connected to a refused address"
    );

    // The reason is named; credentials in a URL are refused outright.
    let Err(OutboundError::Refused(reason)) = guard.check(&url("https://10.0.0.1/")).await else {
        panic!("10.0.0.1 allowed");
    };
    assert!(reason.contains("private"), "{reason}");
    let with_userinfo = guard.check(&url("https://alice:secret@example.com/")).await;
    match with_userinfo {
        Err(err) => assert!(!err.to_string().contains("secret"), "{err}"),
        Ok(()) => panic!("credentials in the URL accepted"),
    }
}

#[tokio::test]
async fn guard_with_private_hosts_allows_http_to_loopback() {
    let (port, mut seen) = spawn_http(|_| reply(200, &[], "hello")).await;
    let guard = guard(true);
    assert!(guard.allows_private_hosts());
    let target = url(&format!("http://localhost:{port}/x"));
    within(guard.check(&target)).await.unwrap();
    let response = within(guard.send(OutboundRequest::new(Method::GET, target.clone())))
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(&response.body[..], b"hello");
    assert_eq!(response.url, target);
    assert_eq!(seen.recv().await.unwrap().path, "/x");
    let ftp = guard.check(&url("ftp://127.0.0.1/")).await;
    assert!(matches!(ftp, Err(OutboundError::Refused(_))), "{ftp:?}");
}

#[tokio::test]
async fn redirects_keep_authorization_on_the_origin_and_drop_it_elsewhere() {
    let (other_port, mut other_seen) = spawn_http(|_| reply(200, &[], "arrived")).await;
    let (port, mut seen) = spawn_http(move |request| match request.path.as_str() {
        "/start" => reply(301, &[("Location", "/same")], ""),
        "/same" => reply(
            307,
            &[("Location", &format!("http://127.0.0.1:{other_port}/other"))],
            "",
        ),
        _ => reply(404, &[], ""),
    })
    .await;
    let guard = guard(true);
    let request = OutboundRequest::new(
        Method::from_bytes(b"PROPFIND").unwrap(),
        url(&format!("http://127.0.0.1:{port}/start")),
    )
    .header(
        header::AUTHORIZATION,
        HeaderValue::from_static("Basic c2VjcmV0"),
    )
    .header(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    )
    .body("<propfind/>");
    let response = within(guard.send(request)).await.unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(&response.body[..], b"arrived");
    assert_eq!(
        response.url,
        url(&format!("http://127.0.0.1:{other_port}/other"))
    );

    let first = seen.recv().await.unwrap();
    assert_eq!(first.path, "/start");
    assert_eq!(first.header("authorization"), Some("Basic c2VjcmV0"));
    // 301 kept the PROPFIND and its body; the same origin kept the credentials.
    let second = seen.recv().await.unwrap();
    assert_eq!(second.path, "/same");
    assert_eq!(second.method, "PROPFIND");
    assert_eq!(second.body, b"<propfind/>");
    assert_eq!(second.header("authorization"), Some("Basic c2VjcmV0"));
    // Another port is another origin: no credentials there.
    let third = other_seen.recv().await.unwrap();
    assert_eq!(third.path, "/other");
    assert_eq!(third.method, "PROPFIND");
    assert_eq!(third.body, b"<propfind/>");
    assert_eq!(third.header("authorization"), None);
}

#[tokio::test]
async fn redirects_are_checked_and_counted() {
    let allowing = guard(true);
    let (port, _seen) = spawn_http(|_| reply(302, &[("Location", "/again")], "")).await;
    let looping = url(&format!("http://127.0.0.1:{port}/"));
    let mut no_redirects = settings(true);
    no_redirects.max_redirects = 0;
    let counted = OutboundGuard::new(no_redirects).unwrap();
    let result = within(counted.send(OutboundRequest::new(Method::GET, looping.clone()))).await;
    assert!(
        matches!(result, Err(OutboundError::TooManyRedirects)),
        "{result:?}"
    );

    let result = within(allowing.send(OutboundRequest::new(Method::GET, looping))).await;
    assert!(
        matches!(result, Err(OutboundError::TooManyRedirects)),
        "{result:?}"
    );

    // A redirect to a non-http scheme is refused even with private hosts allowed.
    let (ftp_port, _ftp_seen) =
        spawn_http(|_| reply(301, &[("Location", "ftp://127.0.0.1/x")], "")).await;
    let result = within(allowing.send(OutboundRequest::new(
        Method::GET,
        url(&format!("http://127.0.0.1:{ftp_port}/")),
    )))
    .await;
    assert!(
        matches!(result, Err(OutboundError::Refused(_))),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_silent_server_hits_the_total_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let holder = tokio::spawn(async move {
        let mut open = Vec::new();
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            open.push(socket);
        }
    });
    let mut quick = settings(true);
    quick.total_timeout = Duration::from_millis(500);
    let guard = OutboundGuard::new(quick).unwrap();
    let started = Instant::now();
    let result = within(guard.send(OutboundRequest::new(
        Method::GET,
        url(&format!("http://127.0.0.1:{port}/")),
    )))
    .await;
    assert!(matches!(result, Err(OutboundError::Timeout)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    holder.abort();
}

#[tokio::test]
async fn bodies_over_the_cap_are_too_large() {
    let big = "x".repeat(5000);
    let (port, _seen) = spawn_http(move |request| {
        if request.path == "/chunked" {
            // No Content-Length: the cap applies while reading.
            let mut response =
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                    .to_owned();
            for _ in 0..5 {
                response.push_str(&format!("3e8\r\n{}\r\n", "y".repeat(1000)));
            }
            response.push_str("0\r\n\r\n");
            response
        } else {
            reply(200, &[], &big)
        }
    })
    .await;
    let mut small = settings(true);
    small.max_body_bytes = 1000;
    let guard = OutboundGuard::new(small).unwrap();
    for path in ["/sized", "/chunked"] {
        let result = within(guard.send(OutboundRequest::new(
            Method::GET,
            url(&format!("http://127.0.0.1:{port}{path}")),
        )))
        .await;
        assert!(
            matches!(result, Err(OutboundError::TooLarge)),
            "{path}: {result:?}"
        );
    }
}

#[tokio::test]
async fn caldav_statuses_map_to_errors() {
    let (port, _seen) = spawn_http(|request| match request.path.as_str() {
        "/busy/" => reply(503, &[("Retry-After", "7")], "try later"),
        "/conflict.ics" => reply(
            409,
            &[("Content-Type", "text/xml")],
            "<error xmlns=\"DAV:\" xmlns:C=\"urn:ietf:params:xml:ns:caldav\"><C:no-uid-conflict/></error>",
        ),
        "/nosync/" => reply(501, &[], "Not Implemented"),
        "/bad-request/" => reply(400, &[], "Bad Request"),
        // RFC 6578's Depth 0 only.
        "/strict/" if request.header("depth") == Some("0") => reply(
            207,
            &[("Content-Type", "text/xml")],
            "<D:multistatus xmlns:D=\"DAV:\"><D:response><D:href>/strict/a.ics</D:href>\
             <D:propstat><D:prop><D:getetag>W/\"1\"</D:getetag></D:prop>\
             <D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>\
             <D:sync-token>urn:t:1</D:sync-token></D:multistatus>",
        ),
        "/strict/" => reply(400, &[], "Depth must be 0"),
        "/limited/" => reply(429, &[], ""),
        _ => reply(404, &[], ""),
    })
    .await;
    let client = CaldavClient::new(guard(true), "alice", "pw");
    let base = format!("http://127.0.0.1:{port}");

    let busy = within(client.members(&url(&format!("{base}/busy/"))))
        .await
        .unwrap_err();
    assert!(busy.is_transient(), "{busy:?}");
    assert_eq!(busy.retry_after(), Some(Duration::from_secs(7)));
    assert!(matches!(
        busy,
        CaldavError::Unavailable {
            status: Some(503),
            ..
        }
    ));

    let conflict = within(client.create(&url(&format!("{base}/conflict.ics")), "BEGIN:VCALENDAR"))
        .await
        .unwrap_err();
    match conflict {
        CaldavError::Rejected { status, message } => {
            assert_eq!(status, 409);
            assert!(message.contains("no-uid-conflict"), "{message}");
        }
        other => panic!("{other:?}"),
    }

    let unsupported = within(client.sync_collection(&url(&format!("{base}/nosync/")), None)).await;
    assert!(
        matches!(unsupported, Err(CaldavError::SyncUnsupported)),
        "{unsupported:?}"
    );

    let unsupported =
        within(client.sync_collection(&url(&format!("{base}/bad-request/")), None)).await;
    assert!(
        matches!(unsupported, Err(CaldavError::SyncUnsupported)),
        "{unsupported:?}"
    );
    let strict = within(client.sync_collection(&url(&format!("{base}/strict/")), None))
        .await
        .unwrap();
    assert_eq!(strict.token, "urn:t:1");
    assert_eq!(strict.changed.len(), 1);
    assert_eq!(strict.changed[0].etag.as_deref(), Some("W/\"1\""));

    let limited = within(client.calendars(&url(&format!("{base}/limited/"))))
        .await
        .unwrap_err();
    assert!(matches!(
        limited,
        CaldavError::Unavailable {
            status: Some(429),
            retry_after: None
        }
    ));

    let missing = within(client.get(&url(&format!("{base}/nothing.ics"))))
        .await
        .unwrap();
    assert!(missing.is_none());
    let refused = within(CaldavClient::new(guard(false), "a", "b").discover(&url(&base))).await;
    assert!(
        matches!(
            refused,
            Err(CaldavError::Outbound(OutboundError::Refused(_)))
        ),
        "{refused:?}"
    );
}

// ---------------------------------------------------------------------------------------
// A tiny loopback HTTP/1.1 server: records each request, answers with `respond`, closes.

struct Recorded {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Recorded {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

fn reply(status: u16, headers: &[(&str, &str)], body: &str) -> String {
    let mut response = format!("HTTP/1.1 {status} Status\r\n");
    for (name, value) in headers {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    response
}

async fn spawn_http(
    respond: impl Fn(&Recorded) -> String + Send + Sync + 'static,
) -> (u16, mpsc::UnboundedReceiver<Recorded>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sender, receiver) = mpsc::unbounded_channel();
    let respond = std::sync::Arc::new(respond);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let sender = sender.clone();
            let respond = respond.clone();
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else {
                    return;
                };
                let response = respond(&request);
                let _ = sender.send(request);
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (port, receiver)
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break at;
        }
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split_whitespace();
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..read]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}
