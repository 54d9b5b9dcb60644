//! No connection holds the server for nothing: silent and slow clients are closed by the
//! header, body and idle timeouts, at the connection limit the oldest idle connection gives
//! its place to a new one (so `/api/v1/server/ok` stays reachable whatever silent clients
//! hold), open streams live on by their keep-alives, and a body refused as too large is read
//! to its end before the 413, so a client that writes before it reads still gets the answer.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{TestApp, sample, spawn_app, spawn_app_with};

fn addr(app: &TestApp) -> String {
    app.base.trim_start_matches("http://").to_owned()
}

/// Reads until the server closes the connection (or resets it); what it sent.
async fn read_to_close(stream: &mut TcpStream, within: Duration) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut buf = [0_u8; 4096];
    tokio::time::timeout(within, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the server closes the connection in time");
    seen
}

/// A connection that sent a request head announcing 100 bytes of body, and 6 of them.
async fn stalled_post(app: &TestApp) -> TcpStream {
    let mut stream = TcpStream::connect(addr(app)).await.expect("connect");
    stream
        .write_all(
            b"POST /api/v1/events HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
              content-length: 100\r\n\r\n{\"id\":",
        )
        .await
        .expect("write");
    stream
}

/// `/api/v1/server/ok` on a new connection answers 200 within a second.
async fn answers_at_once(app: &TestApp) {
    let client = reqwest::Client::new();
    let started = Instant::now();
    let response = tokio::time::timeout(
        Duration::from_secs(2),
        client.get(app.url("/api/v1/server/ok")).send(),
    )
    .await
    .expect("answered in time")
    .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn at_the_connection_limit_silent_connections_make_room_for_real_ones() {
    let app = spawn_app_with(|s| {
        s.server.max_connections = 20;
        s.server.header_read_timeout_ms = 60_000;
    })
    .await;
    let mut silent = Vec::new();
    for _ in 0..50 {
        silent.push(TcpStream::connect(addr(&app)).await.expect("connect"));
    }
    answers_at_once(&app).await;
    let metrics = app.metrics_text().await;
    let evicted = sample(
        &metrics,
        "svc_http_connections_closed_total{reason=\"evicted\"}",
    )
    .expect("evictions counted");
    assert!(evicted >= 30.0, "{evicted}");
    // The oldest silent ones were closed.
    let first = silent.first_mut().expect("first");
    assert!(
        read_to_close(first, Duration::from_secs(2))
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn when_every_connection_is_busy_a_new_one_is_answered_503() {
    let app = spawn_app_with(|s| s.server.max_connections = 3).await;
    let user = app.sign_up("busy@example.com").await;
    // Three open streams: three busy connections.
    let mut streams = Vec::new();
    for _ in 0..3 {
        streams.push(app.stream(&user).await);
    }
    let mut refused = TcpStream::connect(addr(&app)).await.expect("connect");
    let answer = read_to_close(&mut refused, Duration::from_secs(2)).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 503 "), "{text}");
    assert!(text.contains("\"requestId\""), "{text}");
    drop(streams);
}

#[tokio::test]
async fn silent_and_slowloris_connections_are_closed_after_the_header_timeout() {
    let app = spawn_app_with(|s| s.server.header_read_timeout_ms = 500).await;
    let started = Instant::now();
    let mut silent = TcpStream::connect(addr(&app)).await.expect("connect");
    let mut dribblers = Vec::new();
    for _ in 0..20 {
        let mut stream = TcpStream::connect(addr(&app)).await.expect("connect");
        dribblers.push(tokio::spawn(async move {
            let _ = stream
                .write_all(b"GET /api/v1/server/ok HTTP/1.1\r\n")
                .await;
            // One header byte every 100 ms, never the blank line.
            for _ in 0..100 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if stream.write_all(b"X").await.is_err() {
                    return true;
                }
            }
            false
        }));
    }
    assert!(
        read_to_close(&mut silent, Duration::from_secs(5))
            .await
            .is_empty()
    );
    for dribbler in dribblers {
        let closed = tokio::time::timeout(Duration::from_secs(10), dribbler)
            .await
            .expect("in time")
            .expect("task");
        assert!(closed, "the server closed the slow connection");
    }
    assert!(started.elapsed() < Duration::from_secs(8));
    answers_at_once(&app).await;
}

#[tokio::test]
async fn a_body_that_stops_arriving_gets_408_and_a_silent_one_is_closed_when_idle() {
    let app = spawn_app_with(|s| {
        s.server.body_read_timeout_ms = 500;
        s.server.idle_timeout_ms = 60_000;
    })
    .await;
    let mut stream = stalled_post(&app).await;
    let answer = read_to_close(&mut stream, Duration::from_secs(5)).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408 "), "{text}");

    // With a long body timeout, the idle timeout ends it: no byte moved for a second.
    let app = spawn_app_with(|s| {
        s.server.idle_timeout_ms = 1_000;
        s.stream.keepalive_ms = 200;
    })
    .await;
    let mut stream = stalled_post(&app).await;
    let started = Instant::now();
    assert!(
        read_to_close(&mut stream, Duration::from_secs(5))
            .await
            .is_empty()
    );
    assert!(started.elapsed() >= Duration::from_millis(900));

    // An open stream lives on by its keep-alives, well past the idle timeout.
    let user = app.sign_up("idle@example.com").await;
    let mut events = app.stream(&user).await;
    let until = Instant::now() + Duration::from_millis(2_500);
    let mut pings = 0;
    while Instant::now() < until {
        match events.next_event().await {
            Some(crate::support::sse::SseEvent::Comment(_)) => pings += 1,
            Some(_) => {}
            None => panic!("the stream ended"),
        }
    }
    assert!(pings >= 5, "{pings}");
}

#[tokio::test]
async fn a_client_that_writes_its_whole_oversized_body_first_still_reads_the_413() {
    let app = spawn_app().await;
    let user = app.sign_up("big@example.com").await;
    let cases = [
        ("/api/v1/events", "application/json", 4 * 1024 * 1024),
        (
            "/api/v1/calendars/import",
            "text/calendar",
            11 * 1024 * 1024,
        ),
    ];
    for (path, content_type, size) in cases {
        let mut stream = TcpStream::connect(addr(&app)).await.expect("connect");
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\n\
             content-type: {content_type}\r\ncontent-length: {size}\r\nconnection: close\r\n\r\n",
            user.token
        );
        stream.write_all(head.as_bytes()).await.expect("head");
        let body = vec![b' '; size];
        stream
            .write_all(&body)
            .await
            .expect("the whole body is taken, not reset");
        let answer = read_to_close(&mut stream, Duration::from_secs(10)).await;
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 413 "), "{path}: {text:.200}");
        assert!(text.contains("\"requestId\""), "{text:.400}");
    }
}
