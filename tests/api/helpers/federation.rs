//! What the federation tests share: servers with the sealing key federation needs, an origin
//! server A with an owner, a calendar and an invite, a home server B with a user
//! ([`Federation`]), the origin's routes called as a home server calls them (accept, rotate,
//! any route with a member token), the home routes that must never show a member token, and
//! [`Upstream`]: a stand-in peer on 127.0.0.1 that records every request it gets and either
//! relays it to a real server, hangs, or answers with a redirect.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};

use super::caldav::CALDAV_KEY;
use super::{TestApp, TestUser, WAIT, sample, spawn_app_with};
use crate::support::sse::SseClient;

/// What every member token starts with; no answer of a home server may contain it.
pub const MEMBER_TOKEN_PREFIX: &str = "mt1_";

/// A server with the sealing key set (a home server seals member tokens with it).
pub async fn federated_app() -> TestApp {
    federated_app_with(|_| {}).await
}

/// A server with the sealing key set and `configure` applied.
pub async fn federated_app_with(configure: impl FnOnce(&mut bowline::Settings)) -> TestApp {
    spawn_app_with(|s| {
        s.caldav.enc_key = Some(bowline::config::Secret::new(CALDAV_KEY));
        configure(s);
    })
    .await
}

/// An origin server A (owner, calendar, invite) and a home server B with a user who has not
/// connected yet.
pub struct Federation {
    /// The origin server.
    pub origin: TestApp,
    /// The owner of [`Self::calendar_id`] on A.
    pub owner: TestUser,
    /// The shared calendar on A.
    pub calendar_id: String,
    /// An invite to it (unlimited uses).
    pub invite: String,
    /// The home server.
    pub home: TestApp,
    /// The user of B who joins A's calendar.
    pub guest: TestUser,
}

impl Federation {
    /// Starts both servers and arranges the owner's calendar, its invite and B's user.
    pub async fn start() -> Self {
        let (origin, home) = tokio::join!(federated_app(), federated_app());
        let owner = origin.sign_up("owner@origin.example").await;
        let calendar = origin.create_calendar(&owner, "Shared far").await;
        let calendar_id = calendar["id"].as_str().expect("calendar id").to_owned();
        let invite = invite_to(&origin, &owner, &calendar_id).await;
        let guest = home.sign_up("guest@home.example").await;
        Self {
            origin,
            owner,
            calendar_id,
            invite,
            home,
            guest,
        }
    }

    /// Starts both servers and connects B's user to A's invite: the connection id.
    pub async fn connected() -> (Self, String) {
        let fed = Self::start().await;
        let server = fed.origin.base.clone();
        let connection = fed.connect_ok(&server, &fed.invite.clone()).await;
        (fed, connection)
    }

    /// `POST /api/v1/federation/connect {server, token}` on B as the guest.
    pub async fn connect(&self, server: &str, token: &str) -> (StatusCode, Value) {
        home_call(
            &self.home,
            Method::POST,
            "/api/v1/federation/connect",
            &self.guest,
            Some(&json!({ "server": server, "token": token })),
        )
        .await
    }

    /// Connects B's user to `token` of `server` (which must answer 200); the id of the
    /// connection B lists for `server`.
    pub async fn connect_ok(&self, server: &str, token: &str) -> String {
        let (status, body) = self.connect(server, token).await;
        assert_eq!(status, StatusCode::OK, "connect: {body}");
        connection_to(&self.home, &self.guest, server)
            .await
            .unwrap_or_else(|| panic!("a connection to {server} is listed"))
    }

    /// `method` through B's gateway on `connection` to A's `api/v1/<rest>` as the guest.
    pub async fn gateway(
        &self,
        method: Method,
        connection: &str,
        rest: &str,
        body: Option<&Value>,
    ) -> Relayed {
        gateway_as(&self.home, &self.guest, method, connection, rest, body).await
    }

    /// The shadow's id on A (the one connection's `remoteUserID`).
    pub async fn shadow_id(&self) -> String {
        let list = connections(&self.home, &self.guest).await;
        assert_eq!(list.len(), 1, "one connection: {list:?}");
        list[0]["remoteUserID"]
            .as_str()
            .expect("remoteUserID")
            .to_owned()
    }
}

/// A new invite (unlimited uses) of `owner` to `calendar_id`: its token.
pub async fn invite_to(app: &TestApp, owner: &TestUser, calendar_id: &str) -> String {
    app.create_invite(owner, calendar_id, None).await["id"]
        .as_str()
        .expect("invite id")
        .to_owned()
}

/// An answer of B's gateway.
#[derive(Debug)]
pub struct Relayed {
    /// Its status.
    pub status: StatusCode,
    /// Its `Content-Type`, if any.
    pub content_type: Option<String>,
    /// Its body.
    pub text: String,
}

impl Relayed {
    /// The body as JSON (`Null` if it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

/// `method` through `app`'s gateway on `connection` to `api/v1/<rest>`, as `user`; the answer
/// must not carry a member token.
pub async fn gateway_as(
    app: &TestApp,
    user: &TestUser,
    method: Method,
    connection: &str,
    rest: &str,
    body: Option<&Value>,
) -> Relayed {
    let mut request = app.as_user(
        method,
        &format!("/api/v1/federation/s/{connection}/{rest}"),
        user,
    );
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.expect("gateway request");
    let relayed = Relayed {
        status: response.status(),
        content_type: response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().expect("content type").to_owned()),
        text: response.text().await.expect("body"),
    };
    assert!(
        !relayed.text.contains(MEMBER_TOKEN_PREFIX),
        "a gateway answer carries a member token"
    );
    relayed
}

/// `method path` on a home server as `user` (body as JSON when given): the status and the
/// body as JSON (a JSON string when it is not JSON). Fails the test if the answer carries a
/// member token.
pub async fn home_call(
    app: &TestApp,
    method: Method,
    path: &str,
    user: &TestUser,
    body: Option<&Value>,
) -> (StatusCode, Value) {
    let mut request = app.as_user(method, path, user);
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    let text = response.text().await.expect("body");
    assert!(
        !text.contains(MEMBER_TOKEN_PREFIX),
        "{path} answered with a member token"
    );
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// `GET /api/v1/federation/connections` of `user` on `app` (must answer 200).
pub async fn connections(app: &TestApp, user: &TestUser) -> Vec<Value> {
    let (status, body) = home_call(
        app,
        Method::GET,
        "/api/v1/federation/connections",
        user,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body.as_array().expect("connections").clone()
}

/// The id of `user`'s connection to `server`, if listed.
pub async fn connection_to(app: &TestApp, user: &TestUser, server: &str) -> Option<String> {
    connections(app, user)
        .await
        .iter()
        .find(|c| c["server"] == server)
        .map(|c| c["id"].as_str().expect("connection id").to_owned())
}

/// `GET /api/v1/federation/preview?server=&token=` on `app` as `user`, the values sent
/// as given (already query-encoded by the caller where needed).
pub async fn preview(
    app: &TestApp,
    user: &TestUser,
    server: &str,
    token: &str,
) -> (StatusCode, Value) {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("server", server)
        .append_pair("token", token)
        .finish();
    home_call(
        app,
        Method::GET,
        &format!("/api/v1/federation/preview?{query}"),
        user,
        None,
    )
    .await
}

/// A federation profile claiming to come from `home`.
pub fn profile(name: &str, email: &str, home: &str) -> Value {
    json!({ "name": name, "email": email, "homeServer": home, "image": null })
}

/// `POST /api/v1/federation/accept {token, profile}` on `app`, with `bearer` (a current
/// member token) when given.
pub async fn accept(
    app: &TestApp,
    invite: &str,
    profile: &Value,
    bearer: Option<&str>,
) -> (StatusCode, Value) {
    accept_body(app, &json!({ "token": invite, "profile": profile }), bearer).await
}

/// `POST /api/v1/federation/accept` on `app` with `body` as it is.
pub async fn accept_body(app: &TestApp, body: &Value, bearer: Option<&str>) -> (StatusCode, Value) {
    let mut request = app
        .client
        .post(app.url("/api/v1/federation/accept"))
        .json(body);
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    json_answer(request).await
}

/// A successful accept: what the origin issued.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The member token.
    pub token: String,
    /// The shadow user's id on the origin.
    pub user_id: String,
}

/// Accepts `invite` on `app` for a user of `home` (must answer 200).
pub async fn accepted(app: &TestApp, invite: &str, email: &str, home: &str) -> Accepted {
    let (status, body) = accept(app, invite, &profile("Remote Ruth", email, home), None).await;
    assert_eq!(status, StatusCode::OK, "accept: {body}");
    Accepted {
        token: body["memberToken"]
            .as_str()
            .expect("memberToken")
            .to_owned(),
        user_id: body["userID"].as_str().expect("userID").to_owned(),
    }
}

/// `POST /api/v1/federation/token/rotate` on `app` with `bearer` (none when `None`), no body.
pub async fn rotate(app: &TestApp, bearer: Option<&str>) -> (StatusCode, Value) {
    json_answer(rotate_request(app, bearer)).await
}

/// The request of [`rotate`].
fn rotate_request(app: &TestApp, bearer: Option<&str>) -> reqwest::RequestBuilder {
    let request = app.client.post(app.url("/api/v1/federation/token/rotate"));
    match bearer {
        Some(bearer) => request.bearer_auth(bearer),
        None => request,
    }
}

/// [`rotate`] with `bearer` from the client `address`, as a trusted proxy names it
/// (`X-Forwarded-For`; the app must trust proxy headers): each address has its own count
/// of rotations under the rate limit.
pub async fn rotate_from(app: &TestApp, bearer: &str, address: &str) -> (StatusCode, Value) {
    json_answer(rotate_request(app, Some(bearer)).header("x-forwarded-for", address)).await
}

/// `method path` on `app` with `bearer` (body as JSON when given): the status and the body as
/// JSON (a JSON string when it is not JSON).
pub async fn bearer_call(
    app: &TestApp,
    method: Method,
    path: &str,
    bearer: &str,
    body: Option<&Value>,
) -> (StatusCode, Value) {
    let mut request = app
        .client
        .request(method, app.url(path))
        .bearer_auth(bearer);
    if let Some(body) = body {
        request = request.json(body);
    }
    json_answer(request).await
}

async fn json_answer(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.expect("request");
    let status = response.status();
    let text = response.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The owner removes `user_id` from `calendar_id` on `app`: the status.
pub async fn remove_member(
    app: &TestApp,
    owner: &TestUser,
    calendar_id: &str,
    user_id: &str,
) -> StatusCode {
    app.as_user(
        Method::DELETE,
        &format!("/api/v1/calendars/{calendar_id}/members/{user_id}"),
        owner,
    )
    .send()
    .await
    .expect("request")
    .status()
}

/// `svc_federated_upstream_streams` on `app`'s metrics (0 when not reported yet).
pub async fn upstream_streams(app: &TestApp) -> f64 {
    sample(&app.metrics_text().await, "svc_federated_upstream_streams").unwrap_or(0.0)
}

/// Waits until `app` holds `n` upstream streams.
pub async fn until_upstream_streams(app: &TestApp, n: f64) {
    super::eventually(&format!("{n} upstream streams"), || async {
        upstream_streams(app).await == n
    })
    .await;
}

/// Waits until `app` has `n` open `/api/stream` connections (`svc_sse_connections`): on an
/// origin, the upstream streams of home servers once they are registered for frames.
pub async fn until_stream_connections(app: &TestApp, n: f64) {
    super::eventually(&format!("{n} open streams"), || async {
        sample(&app.metrics_text().await, "svc_sse_connections") == Some(n)
    })
    .await;
}

/// The next `federated_sync` frame of `stream` (other frames are skipped), within the wait.
pub async fn next_federated_sync(stream: &mut SseClient) -> Value {
    tokio::time::timeout(WAIT, async {
        loop {
            let frame = stream.next_frame().await;
            if frame["type"] == "federated_sync" {
                return frame;
            }
        }
    })
    .await
    .expect("a federated_sync frame within the wait")
}

/// Counts the rows of every table of `app`'s database with a column whose text contains
/// `needle`, as `(table, column, rows)` for each column that does.
pub async fn columns_containing(app: &TestApp, needle: &str) -> Vec<(String, String, i64)> {
    let conn = app.db_connection().await;
    let backend = conn.get_database_backend();
    let listing = match backend {
        DbBackend::Sqlite => {
            "SELECT m.name AS t, c.name AS c FROM sqlite_master m, pragma_table_info(m.name) c \
             WHERE m.type = 'table'"
        }
        _ => {
            "SELECT table_name::text AS t, column_name::text AS c FROM information_schema.columns \
             WHERE table_schema = current_schema()"
        }
    };
    let columns = conn
        .query_all_raw(Statement::from_string(backend, listing))
        .await
        .expect("columns");
    let position = match backend {
        DbBackend::Sqlite => "instr",
        _ => "strpos",
    };
    let mut found = Vec::new();
    for row in columns {
        let table: String = row.try_get("", "t").expect("table");
        let column: String = row.try_get("", "c").expect("column");
        let sql = format!(
            "SELECT count(*) AS n FROM \"{table}\" WHERE {position}(CAST(\"{column}\" AS TEXT), '{needle}') > 0"
        );
        let n: i64 = conn
            .query_one_raw(Statement::from_string(backend, sql))
            .await
            .expect("count")
            .expect("row")
            .try_get("", "n")
            .expect("n");
        if n > 0 {
            found.push((table, column, n));
        }
    }
    found
}

/// One request an [`Upstream`] received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path and query as sent.
    pub target: String,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The `Cookie` header.
    pub cookie: Option<String>,
    /// The body's length.
    pub body_len: usize,
}

/// What an [`Upstream`] does with the requests it gets (it records them all first).
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// Relays them to the server at this base URL and streams its answers back.
    Relay(String),
    /// Keeps the connection open and never answers.
    Hang,
    /// Answers `302 Found` with this `Location`.
    Redirect(String),
    /// Answers 200 `{"ok": true}`.
    Answer,
    /// Answers 200 with this `Content-Type` (none when `None`) and body.
    Typed(Option<String>, String),
}

/// A peer on 127.0.0.1 (port 0) that records every request and then behaves as told.
/// Dropping it closes it and every connection it holds.
pub struct Upstream {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    shared: Arc<UpstreamShared>,
    server: JoinHandle<()>,
}

struct UpstreamShared {
    behaviour: Mutex<Behaviour>,
    seen: Mutex<Vec<Seen>>,
    /// Bumped by [`Upstream::cut_streams`]; relayed answers still open end when it changes.
    cuts: watch::Sender<u64>,
    client: reqwest::Client,
}

type UpstreamBody = UnsyncBoxBody<Bytes, Infallible>;

impl Upstream {
    /// A stand-in relaying to `target` (a base URL).
    pub async fn relaying_to(target: &str) -> Self {
        Self::start(Behaviour::Relay(target.to_owned())).await
    }

    /// A stand-in that behaves as `behaviour`.
    pub async fn start(behaviour: Behaviour) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind an upstream port");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let shared = Arc::new(UpstreamShared {
            behaviour: Mutex::new(behaviour),
            seen: Mutex::new(Vec::new()),
            cuts: watch::Sender::new(0),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
        });
        let server = tokio::spawn(serve(listener, shared.clone()));
        Self {
            base,
            shared,
            server,
        }
    }

    /// From now on, behaves as `behaviour`.
    pub fn set(&self, behaviour: Behaviour) {
        *self.shared.behaviour.lock() = behaviour;
    }

    /// Every request received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().clone()
    }

    /// How many requests were received so far.
    pub fn count(&self) -> usize {
        self.shared.seen.lock().len()
    }

    /// Ends every relayed answer still open (streams), as a restarting server would.
    pub fn cut_streams(&self) {
        self.shared.cuts.send_modify(|n| *n += 1);
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Accepts connections until aborted; aborting drops the set, which ends every connection.
async fn serve(listener: tokio::net::TcpListener, shared: Arc<UpstreamShared>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let shared = shared.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(shared.handle(request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
        while connections.try_join_next().is_some() {}
    }
}

impl UpstreamShared {
    async fn handle(&self, request: hyper::Request<Incoming>) -> hyper::Response<UpstreamBody> {
        // Subscribed before the request is recorded: a cut made once it is seen applies to it.
        let cuts = self.cuts.subscribe();
        let (parts, body) = request.into_parts();
        let body = body
            .collect()
            .await
            .map(|collected| collected.to_bytes())
            .unwrap_or_default();
        let header = |name: http::header::HeaderName| {
            parts
                .headers
                .get(name)
                .map(|v| v.to_str().unwrap_or("<not text>").to_owned())
        };
        let target = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default();
        self.seen.lock().push(Seen {
            method: parts.method.to_string(),
            target: target.clone(),
            authorization: header(http::header::AUTHORIZATION),
            cookie: header(http::header::COOKIE),
            body_len: body.len(),
        });
        let behaviour = self.behaviour.lock().clone();
        match behaviour {
            Behaviour::Hang => std::future::pending().await,
            Behaviour::Redirect(location) => hyper::Response::builder()
                .status(StatusCode::FOUND)
                .header("location", location)
                .header("content-type", "text/plain")
                .body(full("Found"))
                .expect("response"),
            Behaviour::Answer => hyper::Response::builder()
                .header("content-type", "application/json")
                .body(full(r#"{"ok":true}"#))
                .expect("response"),
            Behaviour::Typed(content_type, text) => {
                let mut answer = hyper::Response::builder();
                if let Some(content_type) = content_type {
                    answer = answer.header("content-type", content_type);
                }
                answer.body(full(&text)).expect("response")
            }
            Behaviour::Relay(base) => self.relay(&base, parts, body, &target, cuts).await,
        }
    }

    /// Sends the request on to `base` and streams the answer back until it ends, the
    /// client goes away or [`Upstream::cut_streams`] is called.
    async fn relay(
        &self,
        base: &str,
        parts: http::request::Parts,
        body: Bytes,
        target: &str,
        mut cuts: watch::Receiver<u64>,
    ) -> hyper::Response<UpstreamBody> {
        let mut request = self.client.request(parts.method, format!("{base}{target}"));
        for (name, value) in &parts.headers {
            if !is_hop_header(name) {
                request = request.header(name, value);
            }
        }
        let Ok(mut answer) = request.body(body).send().await else {
            return hyper::Response::builder()
                .status(StatusCode::BAD_GATEWAY)
                .body(Empty::new().boxed_unsync())
                .expect("response");
        };
        let mut response = hyper::Response::builder().status(answer.status());
        for (name, value) in answer.headers() {
            if !is_hop_header(name) {
                response = response.header(name, value);
            }
        }
        let (chunks, mut rx) = mpsc::channel::<Bytes>(16);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = chunks.closed() => break,
                    _ = cuts.changed() => break,
                    chunk = answer.chunk() => match chunk {
                        Ok(Some(chunk)) => {
                            if chunks.send(chunk).await.is_err() {
                                break;
                            }
                        }
                        _ => break,
                    },
                }
            }
        });
        let stream = futures::stream::poll_fn(move |cx| {
            rx.poll_recv(cx)
                .map(|chunk| chunk.map(|c| Ok::<_, Infallible>(Frame::data(c))))
        });
        response
            .body(BodyExt::boxed_unsync(StreamBody::new(stream)))
            .expect("response")
    }
}

fn full(text: &str) -> UpstreamBody {
    Full::new(Bytes::copy_from_slice(text.as_bytes())).boxed_unsync()
}

/// Headers that belong to one connection (and the length, which the relay recomputes).
fn is_hop_header(name: &http::header::HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host" | "connection" | "keep-alive" | "transfer-encoding" | "content-length" | "upgrade"
    )
}

/// `GET target` on `app` with `bearer`, the request line written byte for byte (no client
/// resolves dot segments or re-encodes the path): the status and the body as text.
pub async fn raw_get(app: &TestApp, target: &str, bearer: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = app.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {bearer}\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("write the request");
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut answer))
        .await
        .expect("an answer within the wait")
        .expect("read the answer");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}
