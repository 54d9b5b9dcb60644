//! The guard's unit tests: address classes in every spelling a URL parser accepts, scheme
//! and credential rules, redirect-hop checks, per-request options.

#![allow(clippy::unwrap_used)]

use super::*;

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};

use futures::future::BoxFuture;
use tokio::net::{TcpListener, TcpStream};

/// Around every await on a socket.
const WAIT: Duration = Duration::from_secs(20);

const PUBLIC_V4: IpAddr = IpAddr::V4(Ipv4Addr::new(93, 184, 216, 34));
const LOOPBACK_V4: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// Answers names from a fixed table; other names do not exist.
#[derive(Debug)]
struct FixedNames(Vec<(&'static str, Vec<IpAddr>)>);

impl NameLookup for FixedNames {
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
        let answer = self
            .0
            .iter()
            .find(|(name, _)| *name == host)
            .map(|(_, ips)| ips.clone())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such name"));
        Box::pin(async move { answer })
    }
}

fn settings(allow_private_hosts: bool) -> GuardSettings {
    GuardSettings {
        allow_private_hosts,
        connect_timeout: Duration::from_secs(5),
        total_timeout: Duration::from_secs(10),
        max_redirects: 5,
        max_body_bytes: 1024,
        extra_roots: Vec::new(),
    }
}

fn guard(allow_private_hosts: bool, names: FixedNames) -> OutboundGuard {
    OutboundGuard::with_lookup(settings(allow_private_hosts), Arc::new(names)).unwrap()
}

fn url(text: &str) -> Url {
    Url::parse(text).unwrap()
}

/// `check()` and `send()` both refuse `url`; returns the reason `check()` gave.
async fn refused(guard: &OutboundGuard, url: &Url) -> String {
    let checked = guard.check(url).await;
    let sent = tokio::time::timeout(
        WAIT,
        guard.send(OutboundRequest::new(Method::GET, url.clone())),
    )
    .await
    .unwrap();
    let opened = tokio::time::timeout(
        WAIT,
        guard.open(OutboundRequest::new(Method::GET, url.clone())),
    )
    .await
    .unwrap();
    assert!(
        matches!(sent, Err(OutboundError::Refused(_))),
        "send {url}: {sent:?}"
    );
    assert!(
        matches!(opened, Err(OutboundError::Refused(_))),
        "open {url}: {opened:?}"
    );
    match checked {
        Err(OutboundError::Refused(reason)) => reason,
        other => panic!("check {url}: {other:?}"),
    }
}

/// How many connections `listener` accepted before one the test opens last (the
/// kernel queues them in order, so nothing opened earlier can come after it).
async fn connections_before_sentinel(listener: &TcpListener) -> usize {
    let sentinel = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let sentinel = sentinel.local_addr().unwrap();
    let mut earlier = 0;
    loop {
        let (_, peer) = tokio::time::timeout(WAIT, listener.accept())
            .await
            .unwrap()
            .unwrap();
        if peer == sentinel {
            return earlier;
        }
        earlier += 1;
    }
}

#[tokio::test]
async fn url_spellings_of_non_public_addresses_are_refused() {
    let guard = guard(false, FixedNames(Vec::new()));
    for (spelling, class) in [
        ("http://2130706433/", "loopback"),
        ("http://0177.0.0.1/", "loopback"),
        ("http://0x7f.1/", "loopback"),
        ("http://127.1/", "loopback"),
        ("http://0x7f000001/", "loopback"),
        ("http://017700000001/", "loopback"),
        ("http://%31%32%37.0.0.1/", "loopback"),
        (
            "http://\u{ff11}\u{ff12}\u{ff17}.\u{ff10}.\u{ff10}.\u{ff11}/",
            "loopback",
        ),
        ("http://0/", "unspecified"),
        ("http://3232235521/", "private"),
        ("http://0300.0250.0.1/", "private"),
        ("http://0xa.1/", "private"),
        ("http://2852039166/", "link-local"),
        ("http://[::ffff:7f00:1]/", "IPv4-mapped"),
        ("http://[::ffff:10.0.0.1]/", "IPv4-mapped"),
        ("http://[0:0:0:0:0:ffff:127.0.0.1]/", "IPv4-mapped"),
        ("http://[::127.0.0.1]/", "IPv4-compatible"),
        ("http://[64:ff9b::7f00:1]/", "NAT64"),
        ("http://[2002:7f00:1::]/", "6to4"),
        ("http://[::1]/", "loopback"),
        ("http://[0:0:0:0:0:0:0:1]/", "loopback"),
        ("http://[::]/", "unspecified"),
        ("http://[fe80::1]/", "link-local"),
        ("http://[fd00::1]/", "unique local"),
        ("http://[ff02::1]/", "multicast"),
        ("http://[2001:db8::1]/", "documentation"),
    ] {
        let plain = url(spelling);
        assert!(
            matches!(plain.host(), Some(Host::Ipv4(_) | Host::Ipv6(_))),
            "{spelling} parsed as a name: {plain}"
        );
        // Over http it is refused already for the scheme; over https for the address.
        let reason = refused(&guard, &plain).await;
        assert!(reason.contains("http"), "{spelling}: {reason}");
        let secure = url(&spelling.replacen("http:", "https:", 1));
        let reason = refused(&guard, &secure).await;
        assert!(
            reason.contains(class),
            "{secure}: {reason}, expected {class}"
        );
    }
}

#[tokio::test]
async fn names_with_a_non_public_address_are_refused() {
    let guard = guard(
        false,
        FixedNames(vec![
            ("loopback.test", vec![LOOPBACK_V4]),
            ("private.test", vec![IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3))]),
            (
                "metadata.test",
                vec![IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254))],
            ),
            ("mixed.test", vec![PUBLIC_V4, LOOPBACK_V4]),
            (
                "mapped.test",
                vec![IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped())],
            ),
            ("local6.test", vec![IpAddr::V6(Ipv6Addr::LOCALHOST)]),
            ("ula.test", vec!["fd00::1".parse().unwrap()]),
            (
                "public.test",
                vec![PUBLIC_V4, "2606:4700::1111".parse().unwrap()],
            ),
        ]),
    );
    for (name, class) in [
        ("loopback.test", "loopback"),
        ("private.test", "private"),
        ("metadata.test", "link-local"),
        ("mixed.test", "loopback"),
        ("mapped.test", "IPv4-mapped"),
        ("local6.test", "loopback"),
        ("ula.test", "unique local"),
    ] {
        let target = url(&format!("https://{name}/"));
        let reason = refused(&guard, &target).await;
        assert!(
            reason.contains(name) && reason.contains(class),
            "{name}: {reason}"
        );
    }
    guard.check(&url("https://public.test/")).await.unwrap();
    let unknown = guard.check(&url("https://unknown.test/")).await;
    assert!(
        matches!(unknown, Err(OutboundError::Connect(_))),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn public_addresses_pass_the_check() {
    let guard = guard(false, FixedNames(vec![("public.test", vec![PUBLIC_V4])]));
    for target in [
        "https://93.184.216.34/",
        "https://1.1.1.1:8443/path?query",
        "https://[2606:4700::1111]/",
        "https://[2001:4860:4860::8888]/",
        "https://public.test/",
        "HTTPS://PUBLIC.TEST/",
    ] {
        let checked = guard.check(&url(target)).await;
        assert!(checked.is_ok(), "{target}: {checked:?}");
    }
}

#[tokio::test]
async fn only_http_and_https_without_credentials_are_sent() {
    let strict = guard(false, FixedNames(vec![("public.test", vec![PUBLIC_V4])]));
    let open = guard(true, FixedNames(vec![("public.test", vec![PUBLIC_V4])]));
    for target in [
        "ftp://public.test/",
        "file:///etc/passwd",
        "ws://public.test/",
        "wss://public.test/",
        "gopher://public.test/",
        "data:text/plain,hello",
        "https://user:pw@public.test/",
        "https://user@public.test/",
        "https://:pw@public.test/",
        "http://user:pw@127.0.0.1/",
    ] {
        for guard in [&strict, &open] {
            let reason = refused(guard, &url(target)).await;
            assert!(!reason.contains("pw"), "{target}: {reason}");
        }
    }
    // Plain http only where private hosts are allowed.
    for target in ["http://public.test/", "http://93.184.216.34/"] {
        let reason = refused(&strict, &url(target)).await;
        assert!(reason.contains("http"), "{target}: {reason}");
        open.check(&url(target)).await.unwrap();
    }
    open.check(&url("http://127.0.0.1:9/")).await.unwrap();
    open.check(&url("http://localhost/")).await.unwrap();
}

/// A redirect (302 to `location`) as a public server would answer it.
fn redirect_to(location: &str) -> reqwest::Response {
    reqwest::Response::from(
        http::Response::builder()
            .status(StatusCode::FOUND)
            .header(header::LOCATION, location)
            .body(String::new())
            .unwrap(),
    )
}

#[tokio::test]
async fn redirects_to_non_public_hosts_are_never_connected() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let guard = guard(
        false,
        FixedNames(vec![
            ("public.test", vec![PUBLIC_V4]),
            ("loopback.test", vec![LOOPBACK_V4]),
            ("mixed.test", vec![PUBLIC_V4, LOOPBACK_V4]),
        ]),
    );
    let guard = &guard;
    // (Location, hops sent: IP literals are refused before their hop, names when the
    // connection resolves them.)
    for (location, hops_sent) in [
        (format!("http://127.0.0.1:{port}/"), 1),
        (format!("https://127.0.0.1:{port}/"), 1),
        (format!("https://2130706433:{port}/"), 1),
        (format!("https://127.1:{port}/"), 1),
        (format!("https://[::ffff:127.0.0.1]:{port}/"), 1),
        (format!("https://[::1]:{port}/"), 1),
        (format!("https://loopback.test:{port}/"), 2),
        (format!("//loopback.test:{port}/relative"), 2),
        (format!("https://mixed.test:{port}/"), 2),
    ] {
        let sent = std::sync::Mutex::new(Vec::new());
        let start = OutboundRequest::new(Method::GET, url("https://public.test/start"));
        let exchange = guard.exchange_through(start, |hop| {
            sent.lock().unwrap().push(hop.url().clone());
            let location = location.clone();
            async move {
                if hop.url().host_str() == Some("public.test") {
                    Ok(redirect_to(&location))
                } else {
                    guard.send_hop(hop).await
                }
            }
        });
        let result = tokio::time::timeout(WAIT, exchange).await.unwrap();
        assert!(
            matches!(result, Err(OutboundError::Refused(_))),
            "{location}: {result:?}"
        );
        assert_eq!(sent.lock().unwrap().len(), hops_sent, "{location}");
    }
    assert_eq!(connections_before_sentinel(&listener).await, 0);
}

#[test]
fn redirect_method_rules() {
    let propfind = Method::from_bytes(b"PROPFIND").unwrap();
    assert!(!changes_to_get(StatusCode::MOVED_PERMANENTLY, &propfind));
    assert!(!changes_to_get(StatusCode::FOUND, &propfind));
    assert!(!changes_to_get(
        StatusCode::TEMPORARY_REDIRECT,
        &Method::POST
    ));
    assert!(!changes_to_get(
        StatusCode::PERMANENT_REDIRECT,
        &Method::PUT
    ));
    assert!(changes_to_get(StatusCode::FOUND, &Method::POST));
    assert!(changes_to_get(StatusCode::SEE_OTHER, &propfind));
}

#[test]
fn origins_compare_scheme_host_and_port() {
    let a = Url::parse("https://Example.com/a").unwrap();
    let b = Url::parse("https://example.com:443/b").unwrap();
    let c = Url::parse("https://example.com:8443/").unwrap();
    let d = Url::parse("http://example.com/").unwrap();
    assert_eq!(origin(&a), origin(&b));
    assert_ne!(origin(&a), origin(&c));
    assert_ne!(origin(&a), origin(&d));
}
