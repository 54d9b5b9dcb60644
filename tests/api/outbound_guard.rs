//! The outbound guard against loopback servers and injected name lookups: a name that
//! rebinds to loopback after the check is never connected to, streams (`open`) deliver
//! chunks as they are written and outlive the total timeout, and the per-request options
//! (`without_redirects`, `timeout`, `max_body_bytes`) do what they say. That a redirect hop
//! to loopback is never connected to is shown by the guard's unit tests
//! (`redirects_to_non_public_hosts_are_never_connected`): with private hosts refused, no
//! loopback server could answer the first hop.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bowline::providers::outbound::{
    GuardSettings, NameLookup, OutboundError, OutboundGuard, OutboundRequest,
};
use futures::future::BoxFuture;
use http::{Method, StatusCode, header};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use url::Url;

use crate::helpers::WAIT;

const PUBLIC: IpAddr = IpAddr::V4(Ipv4Addr::new(93, 184, 216, 34));
const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn settings(allow_private_hosts: bool) -> GuardSettings {
    GuardSettings {
        allow_private_hosts,
        connect_timeout: Duration::from_secs(5),
        total_timeout: Duration::from_secs(8),
        max_redirects: 5,
        max_body_bytes: 1024,
        extra_roots: Vec::new(),
    }
}

/// A guard that allows loopback, with its total timeout set to `total`.
fn loopback_guard(total: Duration) -> OutboundGuard {
    OutboundGuard::new(GuardSettings {
        total_timeout: total,
        ..settings(true)
    })
    .unwrap()
}

async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .expect("the call did not finish in time")
}

/// Answers each call with the next of its answers, the last one again once they run out,
/// and counts the calls.
struct ScriptedLookup {
    answers: Vec<Vec<IpAddr>>,
    calls: AtomicUsize,
}

impl ScriptedLookup {
    fn new(answers: Vec<Vec<IpAddr>>) -> Arc<Self> {
        Arc::new(Self {
            answers,
            calls: AtomicUsize::new(0),
        })
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl fmt::Debug for ScriptedLookup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedLookup")
            .field("calls", &self.calls())
            .finish()
    }
}

impl NameLookup for ScriptedLookup {
    fn lookup(&self, _host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        let answer = self.answers[call.min(self.answers.len() - 1)].clone();
        Box::pin(async move { Ok(answer) })
    }
}

/// How many connections `listener` accepted before one the test opens last (the kernel
/// queues them in order, so none opened earlier can come after it).
async fn connections_before_sentinel(listener: &TcpListener) -> usize {
    let sentinel = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let sentinel = sentinel.local_addr().unwrap();
    let mut earlier = 0;
    loop {
        let (_, peer) = within(listener.accept()).await.unwrap();
        if peer == sentinel {
            return earlier;
        }
        earlier += 1;
    }
}

#[tokio::test]
async fn a_name_rebinding_to_loopback_after_the_check_is_never_connected() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let target = Url::parse(&format!("https://rebind.test:{port}/")).unwrap();

    // Public for the check, loopback for every lookup after it.
    let rebinding = ScriptedLookup::new(vec![vec![PUBLIC], vec![LOOPBACK]]);
    let guard = OutboundGuard::with_lookup(settings(false), rebinding.clone()).unwrap();
    within(guard.check(&target)).await.unwrap();
    let sent = within(guard.send(OutboundRequest::new(Method::GET, target.clone()))).await;
    assert!(matches!(sent, Err(OutboundError::Refused(_))), "{sent:?}");
    let opened = within(guard.open(OutboundRequest::new(Method::GET, target.clone()))).await;
    assert!(
        matches!(opened, Err(OutboundError::Refused(_))),
        "{opened:?}"
    );
    // One lookup for the check, one for each connection: none reused the checked answer.
    assert_eq!(rebinding.calls(), 3);

    // A public and a loopback address in one answer, in either order.
    for answer in [vec![PUBLIC, LOOPBACK], vec![LOOPBACK, PUBLIC]] {
        let both = ScriptedLookup::new(vec![answer]);
        let guard = OutboundGuard::with_lookup(settings(false), both.clone()).unwrap();
        let checked = within(guard.check(&target)).await;
        assert!(
            matches!(checked, Err(OutboundError::Refused(_))),
            "{checked:?}"
        );
        let sent = within(guard.send(OutboundRequest::new(Method::GET, target.clone()))).await;
        match sent {
            Err(OutboundError::Refused(reason)) => {
                assert!(reason.contains("127.0.0.1"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(both.calls(), 2);
    }

    assert_eq!(connections_before_sentinel(&listener).await, 0);
}

/// A loopback HTTP/1.1 server whose connections the test answers by hand, when it chooses.
struct HandServer {
    listener: TcpListener,
    port: u16,
}

/// One connection to a [`HandServer`], its request head read.
struct Exchange {
    /// The request line, e.g. `GET /events HTTP/1.1`.
    request_line: String,
    socket: TcpStream,
}

impl HandServer {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        Self { listener, port }
    }

    fn url(&self, path: &str) -> Url {
        Url::parse(&format!("http://127.0.0.1:{}{path}", self.port)).unwrap()
    }

    /// The next connection, once its request head has arrived.
    async fn next(&self) -> Exchange {
        let (mut socket, _) = within(self.listener.accept()).await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            let read = within(socket.read(&mut byte)).await.unwrap();
            assert_eq!(read, 1, "the request head ended early");
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap();
        let request_line = head.lines().next().unwrap().to_owned();
        Exchange {
            request_line,
            socket,
        }
    }
}

impl Exchange {
    async fn write(&mut self, bytes: &str) {
        within(self.socket.write_all(bytes.as_bytes()))
            .await
            .unwrap();
    }

    /// A whole response with a `Content-Length`; the connection closes after it.
    async fn reply(&mut self, status: &str, headers: &[(&str, &str)], body: &str) {
        let mut response = format!("HTTP/1.1 {status}\r\n");
        for (name, value) in headers {
            response.push_str(&format!("{name}: {value}\r\n"));
        }
        response.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ));
        self.write(&response).await;
    }

    /// The head of an event stream with a chunked body.
    async fn start_events(&mut self) {
        self.write(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
             Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        )
        .await;
    }

    /// One chunk of a chunked body.
    async fn send_chunk(&mut self, text: &str) {
        self.write(&format!("{:x}\r\n{text}\r\n", text.len())).await;
    }

    /// The last chunk of a chunked body.
    async fn end_chunks(&mut self) {
        self.write("0\r\n\r\n").await;
    }
}

/// Reads `stream` until its body so far ends with `expected`; fails on anything else.
async fn read_stream_until(
    stream: &mut bowline::providers::outbound::OutboundStream,
    expected: &str,
) {
    let mut seen = String::new();
    while !seen.ends_with(expected) {
        let chunk = within(stream.chunk())
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("the stream ended after {seen:?}"));
        seen.push_str(std::str::from_utf8(&chunk).unwrap());
        assert!(
            expected.starts_with(&seen),
            "{seen:?}, expected {expected:?}"
        );
    }
}

#[tokio::test]
async fn streams_deliver_chunks_as_written_and_outlive_the_total_timeout() {
    let server = HandServer::start().await;
    let total = Duration::from_millis(300);
    let guard = loopback_guard(total);

    let request = OutboundRequest::new(Method::GET, server.url("/events"))
        .header(header::ACCEPT, "text/event-stream".parse().unwrap());
    let (opened, mut events) = tokio::join!(within(guard.open(request)), async {
        let mut events = server.next().await;
        assert_eq!(events.request_line, "GET /events HTTP/1.1");
        events.start_events().await;
        events.send_chunk("data: one\n\n").await;
        events
    });
    let opened_at = Instant::now();
    let mut stream = opened.unwrap();
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(stream.headers[header::CONTENT_TYPE], "text/event-stream");
    assert_eq!(stream.url, server.url("/events"));
    // The first event arrives while the server has written nothing more.
    read_stream_until(&mut stream, "data: one\n\n").await;

    // The same guard's total timeout passes: a plain request to a silent server hits it.
    let (silent, _held) = tokio::join!(
        within(guard.send(OutboundRequest::new(Method::GET, server.url("/silent")))),
        server.next()
    );
    assert!(matches!(silent, Err(OutboundError::Timeout)), "{silent:?}");
    assert!(opened_at.elapsed() > total);

    // The stream is still open and delivers the next events, then its end.
    events.send_chunk("data: two\n\n").await;
    read_stream_until(&mut stream, "data: two\n\n").await;
    events.send_chunk("data: three\n\n").await;
    events.end_chunks().await;
    read_stream_until(&mut stream, "data: three\n\n").await;
    assert_eq!(within(stream.chunk()).await.unwrap(), None);
}

#[tokio::test]
async fn streams_return_redirects_without_following_them() {
    let server = HandServer::start().await;
    let guard = loopback_guard(Duration::from_secs(8));
    let (opened, ()) = tokio::join!(
        within(guard.open(OutboundRequest::new(Method::GET, server.url("/events")))),
        async {
            let mut first = server.next().await;
            first
                .reply("302 Found", &[("Location", "/elsewhere")], "moved")
                .await;
        }
    );
    let mut stream = opened.unwrap();
    assert_eq!(stream.status, StatusCode::FOUND);
    assert_eq!(stream.headers[header::LOCATION], "/elsewhere");
    assert_eq!(stream.url, server.url("/events"));
    read_stream_until(&mut stream, "moved").await;
    assert_eq!(within(stream.chunk()).await.unwrap(), None);
    // Nobody asked for /elsewhere.
    assert_eq!(connections_before_sentinel(&server.listener).await, 0);
}

#[tokio::test]
async fn a_stream_times_out_until_its_head_arrives() {
    let server = HandServer::start().await;
    let guard = loopback_guard(Duration::from_millis(300));
    for request in [
        OutboundRequest::new(Method::GET, server.url("/events")),
        OutboundRequest::new(Method::GET, server.url("/events"))
            .timeout(Duration::from_millis(300)),
    ] {
        let started = Instant::now();
        let (opened, _held) = tokio::join!(within(guard.open(request)), server.next());
        assert!(matches!(opened, Err(OutboundError::Timeout)), "{opened:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
    // The request's own timeout bounds the head too, even below a long guard timeout.
    let patient = loopback_guard(Duration::from_secs(60));
    let started = Instant::now();
    let request = OutboundRequest::new(Method::GET, server.url("/events"))
        .timeout(Duration::from_millis(300));
    let (opened, _held) = tokio::join!(within(patient.open(request)), server.next());
    assert!(matches!(opened, Err(OutboundError::Timeout)), "{opened:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Answers `GET /moved` with a 307 to `/elsewhere`.
async fn answer_moved(server: &HandServer) {
    let mut first = server.next().await;
    assert_eq!(first.request_line, "GET /moved HTTP/1.1");
    first
        .reply(
            "307 Temporary Redirect",
            &[("Location", "/elsewhere"), ("X-Hop", "first")],
            "see elsewhere",
        )
        .await;
}

#[tokio::test]
async fn a_request_without_redirects_gets_the_redirect_as_it_is() {
    let server = HandServer::start().await;
    let guard = loopback_guard(Duration::from_secs(8));

    let request = OutboundRequest::new(Method::GET, server.url("/moved")).without_redirects();
    let (response, ()) = tokio::join!(within(guard.send(request)), answer_moved(&server));
    let response = response.unwrap();
    assert_eq!(response.status, StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(response.headers[header::LOCATION], "/elsewhere");
    assert_eq!(response.headers["x-hop"], "first");
    assert_eq!(&response.body[..], b"see elsewhere");
    assert_eq!(response.url, server.url("/moved"));
    assert_eq!(connections_before_sentinel(&server.listener).await, 0);

    // By default the guard follows it.
    let request = OutboundRequest::new(Method::GET, server.url("/moved"));
    let (response, ()) = tokio::join!(within(guard.send(request)), async {
        answer_moved(&server).await;
        let mut second = server.next().await;
        assert_eq!(second.request_line, "GET /elsewhere HTTP/1.1");
        second.reply("200 OK", &[], "arrived").await;
    });
    let response = response.unwrap();
    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(&response.body[..], b"arrived");
    assert_eq!(response.url, server.url("/elsewhere"));
}

#[tokio::test]
async fn a_request_timeout_replaces_the_guards_in_both_directions() {
    let server = HandServer::start().await;

    // Shorter than the guard's: a silent server fails the request early.
    let patient = loopback_guard(Duration::from_secs(60));
    let started = Instant::now();
    let request = OutboundRequest::new(Method::GET, server.url("/silent"))
        .timeout(Duration::from_millis(300));
    let (sent, _held) = tokio::join!(within(patient.send(request)), server.next());
    assert!(matches!(sent, Err(OutboundError::Timeout)), "{sent:?}");
    assert!(started.elapsed() < Duration::from_secs(5));

    // Longer than the guard's: the answer may come after the guard's timeout has passed
    // (shown by a request without its own timeout failing meanwhile).
    let total = Duration::from_millis(300);
    let hasty = loopback_guard(total);
    let started = Instant::now();
    let request =
        OutboundRequest::new(Method::GET, server.url("/slow")).timeout(Duration::from_secs(8));
    let (response, ()) = tokio::join!(within(hasty.send(request)), async {
        let mut slow = server.next().await;
        assert_eq!(slow.request_line, "GET /slow HTTP/1.1");
        let (silent, _held) = tokio::join!(
            hasty.send(OutboundRequest::new(Method::GET, server.url("/silent"))),
            server.next()
        );
        assert!(matches!(silent, Err(OutboundError::Timeout)), "{silent:?}");
        // The body comes in two parts, the second after the guard's timeout as well.
        slow.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nfirst")
            .await;
        let (silent, _held) = tokio::join!(
            hasty.send(OutboundRequest::new(Method::GET, server.url("/silent"))),
            server.next()
        );
        assert!(matches!(silent, Err(OutboundError::Timeout)), "{silent:?}");
        slow.write("-last").await;
    });
    let response = response.unwrap();
    assert!(started.elapsed() > total * 2);
    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(&response.body[..], b"first-last");
}

#[tokio::test]
async fn a_request_body_cap_replaces_the_guards() {
    let server = HandServer::start().await;
    let guard = loopback_guard(Duration::from_secs(8));
    let large = "x".repeat(2000);

    // Over the guard's 1024 bytes: refused by default, read whole with a larger cap.
    for (request, fits) in [
        (
            OutboundRequest::new(Method::GET, server.url("/large")),
            false,
        ),
        (
            OutboundRequest::new(Method::GET, server.url("/large")).max_body_bytes(4096),
            true,
        ),
    ] {
        let (response, ()) = tokio::join!(within(guard.send(request)), async {
            server.next().await.reply("200 OK", &[], &large).await;
        });
        match response {
            Ok(response) if fits => assert_eq!(response.body.len(), 2000),
            Err(OutboundError::TooLarge) if !fits => {}
            other => panic!("fits {fits}: {other:?}"),
        }
    }

    // Under the guard's cap but over the request's.
    let request = OutboundRequest::new(Method::GET, server.url("/small")).max_body_bytes(10);
    let (response, ()) = tokio::join!(within(guard.send(request)), async {
        server
            .next()
            .await
            .reply("200 OK", &[], "eleven byte")
            .await;
    });
    assert!(
        matches!(response, Err(OutboundError::TooLarge)),
        "{response:?}"
    );

    // A stream has no cap of the guard's; a cap of the request's ends it once passed.
    let request = OutboundRequest::new(Method::GET, server.url("/events")).max_body_bytes(1500);
    let (opened, mut events) = tokio::join!(within(guard.open(request)), async {
        let mut events = server.next().await;
        events.start_events().await;
        events
    });
    let mut stream = opened.unwrap();
    events.send_chunk(&"y".repeat(1000)).await;
    read_stream_until(&mut stream, &"y".repeat(1000)).await;
    events.send_chunk(&"z".repeat(1000)).await;
    let mut outcome = within(stream.chunk()).await;
    while let Ok(Some(_)) = outcome {
        outcome = within(stream.chunk()).await;
    }
    assert!(
        matches!(outcome, Err(OutboundError::TooLarge)),
        "{outcome:?}"
    );

    let request = OutboundRequest::new(Method::GET, server.url("/events"));
    let (opened, mut events) = tokio::join!(within(guard.open(request)), async {
        let mut events = server.next().await;
        events.start_events().await;
        events
    });
    let mut stream = opened.unwrap();
    for _ in 0..3 {
        events.send_chunk(&"w".repeat(1000)).await;
        read_stream_until(&mut stream, &"w".repeat(1000)).await;
    }
    events.end_chunks().await;
    assert_eq!(within(stream.chunk()).await.unwrap(), None);
}
