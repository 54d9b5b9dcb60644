//! The HTTP side of the fake: one warp filter takes every request whole (method, raw path,
//! raw query, headers, body) and hands it, under the state's lock, to the OAuth endpoints
//! or the Calendar API; Calendar API requests are recorded with the status they got, and
//! each recording wakes [`super::GoogleApi::wait_for_request`].

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, Method};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use warp::Filter;
use warp::path::FullPath;

use super::Recorded;
use super::reply::{Reply, api_error, invalid_parameter, unimplemented_route};
use super::state::State;

/// The state and the count of recorded Calendar API requests, shared by the fixture and
/// the server task.
pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    /// How many Calendar API requests were recorded (wakes `wait_for_request`).
    pub(super) recorded: watch::Sender<usize>,
}

/// Serves a fresh fake (no accounts) on `listener`; the handle stops it when aborted.
pub(super) fn serve(listener: tokio::net::TcpListener) -> (Arc<Shared>, JoinHandle<()>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State::new()),
        recorded: watch::Sender::new(0),
    });
    let route = {
        let shared = shared.clone();
        warp::method()
            .and(warp::path::full())
            .and(warp::query::raw().or(warp::any().map(String::new)).unify())
            .and(warp::header::headers_cloned())
            .and(warp::body::bytes())
            .map(
                move |method: Method,
                      path: FullPath,
                      query: String,
                      headers: HeaderMap,
                      body: Bytes| {
                    let request = Request {
                        method,
                        raw_path: path.as_str().to_owned(),
                        query,
                        headers,
                        body,
                    };
                    shared.handle(&request).into_response()
                },
            )
    };
    let server = tokio::spawn(warp::serve(route).incoming(listener).run());
    (shared, server)
}

/// A request as the handlers see it.
pub(super) struct Request {
    pub(super) method: Method,
    /// The path as sent (segments still percent-encoded).
    pub(super) raw_path: String,
    /// The query string without `?` (empty when there is none).
    pub(super) query: String,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
}

impl Request {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(super) fn params(&self) -> Vec<(String, String)> {
        url::form_urlencoded::parse(self.query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    pub(super) fn param(&self, name: &str) -> Option<String> {
        self.params()
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }

    pub(super) fn bool_param(&self, name: &str) -> Result<Option<bool>, Reply> {
        match self.param(name).as_deref() {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(other) => Err(invalid_parameter(
                name,
                &format!("Invalid boolean value: '{other}'."),
            )),
        }
    }

    pub(super) fn max_results(&self, default: usize, max: usize) -> Result<usize, Reply> {
        match self.param("maxResults") {
            None => Ok(default),
            Some(text) => match text.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(n.min(max)),
                _ => Err(invalid_parameter(
                    "maxResults",
                    &format!("Invalid value '{text}'. Values must be within the range: [1, {max}]"),
                )),
            },
        }
    }

    pub(super) fn json_body(&self) -> Result<Map<String, Value>, Reply> {
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(Value::Object(body)) => Ok(body),
            _ => Err(api_error(400, "parseError", "Parse Error")),
        }
    }

    /// The query without `pageToken`, sorted: what a page token is tied to.
    pub(super) fn fingerprint(&self, scope: &str) -> String {
        let mut params: Vec<(String, String)> = self
            .params()
            .into_iter()
            .filter(|(k, _)| k != "pageToken")
            .collect();
        params.sort();
        format!("{scope}?{params:?}")
    }
}

impl Shared {
    fn handle(&self, request: &Request) -> Reply {
        let segments: Vec<String> = request
            .raw_path
            .trim_start_matches('/')
            .split('/')
            .map(|s| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8_lossy()
                    .into_owned()
            })
            .collect();
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let mut state = self.state.lock();
        match (request.method.as_str(), segments.as_slice()) {
            // The consent page itself: the tests consent through `GoogleApi::consent`.
            ("GET", ["o", "oauth2", "v2", "auth"]) => Reply {
                status: 200,
                body: None,
                headers: vec![("content-type", "text/html; charset=utf-8".into())],
            },
            ("POST", ["token"]) => state.token(request),
            ("POST", ["revoke"]) => state.revoke(request),
            (_, ["calendar", "v3", rest @ ..]) => {
                let reply = state.calendar_api(request, rest).unwrap_or_else(|e| e);
                let path = format!("/{}", segments.join("/"));
                state.requests.push(Recorded {
                    method: request.method.to_string(),
                    path,
                    raw_path: request.raw_path.clone(),
                    query: request.query.clone(),
                    if_match: request.header("if-match").map(str::to_owned),
                    body: serde_json::from_slice(&request.body).ok(),
                    status: reply.status,
                    at: Instant::now(),
                });
                let count = state.requests.len();
                drop(state);
                self.recorded.send_replace(count);
                reply
            }
            (method, _) => unimplemented_route(method, &request.raw_path),
        }
    }
}
