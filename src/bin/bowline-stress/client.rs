//! HTTP to the server under test, as a client app does it: bearer sessions from
//! `/api/auth/sign-up/email` (the answer's `token`, or better-auth's `set-auth-token` header
//! when the body has none; waiting out `429`s for as long as the server's
//! `X-Retry-After`/`Retry-After` says), and requests that are timed and never fail
//! half-way: every answer, transport errors included, comes back as a [`Reply`].

use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};

use super::StressError;
use super::wire::{Mark, Wire};

/// A signed-up user of this run.
#[derive(Debug, Clone)]
pub struct User {
    /// Position among the run's users.
    pub index: usize,
    /// The server's user id.
    pub id: String,
    /// Raw session token (bearer).
    pub token: String,
}

/// One answer (or transport failure), with when it was sent and when it was complete.
#[derive(Debug)]
pub struct Reply {
    /// The status; `None` when the request failed in transport.
    pub status: Option<StatusCode>,
    /// The body (empty after a transport failure).
    pub body: Bytes,
    /// What went wrong in transport.
    pub error: Option<String>,
    /// When the request was sent.
    pub sent: Instant,
    /// When the whole answer had arrived.
    pub done: Instant,
}

impl Reply {
    /// Whether the status is `status`.
    pub fn is(&self, status: StatusCode) -> bool {
        self.status == Some(status)
    }

    /// Time from sending to the end of the body.
    pub fn latency(&self) -> Duration {
        self.done.saturating_duration_since(self.sent)
    }

    /// The body as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The mark (`wire`'s identity of the event's state) of the event this answer carries,
    /// if its status is `status`.
    pub fn event_mark(&self, status: StatusCode, wire: Wire) -> Option<Mark> {
        self.json()
            .filter(|_| self.is(status))
            .and_then(|event| wire.mark(&event))
    }

    /// A 5xx answer.
    pub fn is_server_error(&self) -> bool {
        self.status.is_some_and(|s| s.is_server_error())
    }

    /// `status` or the transport error, and the start of the body, for messages.
    pub fn describe(&self) -> String {
        match (&self.status, &self.error) {
            (Some(status), _) => {
                let body = String::from_utf8_lossy(&self.body);
                let body: String = body.chars().take(200).collect();
                format!("HTTP {}: {body}", status.as_u16())
            }
            (None, Some(error)) => format!("transport error: {error}"),
            (None, None) => "no answer".into(),
        }
    }

    /// Nothing if the status is `expected` (whatever the body), else an error naming `what`.
    pub fn expect_status(&self, expected: StatusCode, what: &str) -> Result<(), StressError> {
        if self.is(expected) {
            Ok(())
        } else {
            Err(StressError::Server {
                what: what.to_owned(),
                answer: self.describe(),
            })
        }
    }

    /// The JSON body if the status is `expected`, else an error naming `what`.
    pub fn expect_json(&self, expected: StatusCode, what: &str) -> Result<Value, StressError> {
        match self.json() {
            Some(json) if self.is(expected) => Ok(json),
            _ => Err(StressError::Server {
                what: what.to_owned(),
                answer: self.describe(),
            }),
        }
    }
}

/// The HTTP client of a run.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
}

/// How a new [`Client`] holds connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// As many keep-alive connections as requests in flight; requests time out after 60 s.
    Shared,
    /// One worker's single keep-alive connection.
    Single,
    /// Long-lived streams: no request timeout.
    Streams,
}

impl Client {
    /// A client for the server at `base`.
    pub fn new(base: &str, pool: Pool) -> Result<Self, StressError> {
        let roots = webpki_root_certs::TLS_SERVER_ROOT_CERTS
            .iter()
            .map(|cert| reqwest::Certificate::from_der(cert.as_ref()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| StressError::Client(err.to_string()))?;
        let mut builder = reqwest::Client::builder()
            .tls_certs_only(roots)
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("bowline-stress/", env!("CARGO_PKG_VERSION")));
        builder = match pool {
            Pool::Shared => builder.timeout(Duration::from_secs(60)),
            Pool::Single => builder
                .timeout(Duration::from_secs(60))
                .pool_max_idle_per_host(1),
            Pool::Streams => builder,
        };
        let http = builder
            .build()
            .map_err(|err| StressError::Client(err.to_string()))?;
        Ok(Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
        })
    }

    /// The server's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The underlying reqwest client.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// A request to `path` with `user`'s bearer token.
    pub fn request(&self, method: Method, path: &str, user: &User) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&user.token)
    }

    /// Sends `request` and reads the whole answer.
    pub async fn call(&self, request: RequestBuilder) -> Reply {
        let sent = Instant::now();
        let outcome = match request.send().await {
            Ok(response) => {
                let status = response.status();
                match response.bytes().await {
                    Ok(body) => Ok((status, body)),
                    Err(err) => Err(err),
                }
            }
            Err(err) => Err(err),
        };
        let done = Instant::now();
        match outcome {
            Ok((status, body)) => Reply {
                status: Some(status),
                body,
                error: None,
                sent,
                done,
            },
            Err(err) => Reply {
                status: None,
                body: Bytes::new(),
                error: Some(error_chain(&err)),
                sent,
                done,
            },
        }
    }

    /// Signs up a password user; on `429` waits as long as the server asks and tries again.
    /// `waiting` is told each wait.
    pub async fn sign_up(
        &self,
        index: usize,
        email: &str,
        password: &str,
        waiting: &(dyn Fn(Duration) + Sync),
    ) -> Result<User, StressError> {
        loop {
            let request = self
                .http
                .post(format!("{}/api/auth/sign-up/email", self.base))
                .json(&json!({ "email": email, "password": password, "name": format!("Stress {index}") }));
            let sent = request
                .send()
                .await
                .map_err(|err| StressError::Client(format!("sign-up: {}", error_chain(&err))))?;
            if sent.status() == StatusCode::TOO_MANY_REQUESTS {
                let wait = retry_after(sent.headers()).unwrap_or(Duration::from_secs(1));
                waiting(wait);
                tokio::time::sleep(wait).await;
                continue;
            }
            let status = sent.status();
            let header_token = sent
                .headers()
                .get("set-auth-token")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = sent.bytes().await.unwrap_or_default();
            let reply = Reply {
                status: Some(status),
                body,
                error: None,
                sent: Instant::now(),
                done: Instant::now(),
            };
            let json = reply.expect_json(StatusCode::OK, &format!("sign-up of {email}"))?;
            let id = json["user"]["id"].as_str();
            let token = session_token(&json, header_token.as_deref());
            return match (id, token) {
                (Some(id), Some(token)) => Ok(User {
                    index,
                    id: id.to_owned(),
                    token: token.to_owned(),
                }),
                _ => Err(StressError::Server {
                    what: format!("sign-up of {email}"),
                    answer: "no user id or token in the answer".into(),
                }),
            };
        }
    }
}

/// The clients of a run's bases (`--base`, given once per instance): setup goes through the
/// first; the `n`th writer, reader or stream through the `n % len`th, so work is spread over
/// the instances round robin.
#[derive(Debug, Clone)]
pub struct Bases {
    clients: Vec<Client>,
}

impl Bases {
    /// A client per base URL, each holding connections as `pool` says.
    pub fn new(urls: &[String], pool: Pool) -> Result<Self, StressError> {
        if urls.is_empty() {
            return Err(StressError::Invalid("no --base given".into()));
        }
        let clients = urls
            .iter()
            .map(|url| Client::new(url, pool))
            .collect::<Result<_, _>>()?;
        Ok(Self { clients })
    }

    /// The client setup goes through (the first base).
    pub fn first(&self) -> &Client {
        &self.clients[0]
    }

    /// Which base the `n`th worker, reader or stream uses.
    pub fn index(&self, n: usize) -> usize {
        n % self.clients.len()
    }

    /// The client of the `n`th worker, reader or stream.
    pub fn nth(&self, n: usize) -> &Client {
        &self.clients[self.index(n)]
    }

    /// The base URLs, in order.
    pub fn urls(&self) -> Vec<String> {
        self.clients.iter().map(|c| c.base().to_owned()).collect()
    }
}

/// The bearer token of a sign-up's answer: its `token`, or better-auth's `set-auth-token`
/// header (the bearer plugin's, what its Expo client reads) when the body has none.
pub fn session_token<'a>(answer: &'a Value, header: Option<&'a str>) -> Option<&'a str> {
    answer["token"]
        .as_str()
        .filter(|token| !token.is_empty())
        .or(header.filter(|token| !token.is_empty()))
}

/// `X-Retry-After` (better-auth) or `Retry-After`, in whole seconds.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    ["x-retry-after", "retry-after"].iter().find_map(|name| {
        let seconds: u64 = headers.get(*name)?.to_str().ok()?.trim().parse().ok()?;
        Some(Duration::from_secs(seconds.max(1)))
    })
}

/// An error with its causes (reqwest's own message hides the interesting part).
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn bases_hand_out_their_clients_round_robin_and_set_up_through_the_first() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let urls = ["http://a:1/".to_owned(), "http://b:2".to_owned()];
        let bases = Bases::new(&urls, Pool::Shared).unwrap();
        assert_eq!(bases.urls(), vec!["http://a:1", "http://b:2"]);
        assert_eq!(bases.first().base(), "http://a:1");
        assert_eq!(bases.nth(2).base(), "http://a:1");
        assert_eq!(bases.nth(3).base(), "http://b:2");
        assert_eq!(bases.index(5), 1);
        assert!(Bases::new(&[], Pool::Shared).is_err());
    }

    #[test]
    fn retry_after_prefers_better_auths_header_and_waits_at_least_a_second() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("4"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(4)));
        headers.insert("x-retry-after", HeaderValue::from_static("0"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(1)));
    }

    #[test]
    fn the_session_token_comes_from_the_body_or_else_from_set_auth_token() {
        let with = json!({ "token": "raw", "user": { "id": "u" } });
        let without = json!({ "token": null, "user": { "id": "u" } });
        assert_eq!(session_token(&with, Some("signed.sig")), Some("raw"));
        assert_eq!(
            session_token(&without, Some("signed.sig")),
            Some("signed.sig")
        );
        assert_eq!(session_token(&without, Some("")), None);
        assert_eq!(session_token(&without, None), None);
    }
}
