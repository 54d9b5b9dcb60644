//! The HTTP side of the fake: one warp filter takes every request whole (method, path,
//! raw query, headers, body), hands it to the OAuth or Graph handlers under the state's
//! lock, and writes their answer with Graph's ids (`request-id`, `client-request-id`).

use std::convert::Infallible;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::watch;
use warp::Filter;
use warp::http::{HeaderMap, HeaderValue, Method, StatusCode};
use warp::reply::Reply as _;

use super::reply::Reply;
use super::state::State;
use super::{TokenAnswer, graph, oauth};

/// Serves the fake on `listener`; `arrivals` counts the requests answered.
pub(super) fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<Mutex<State>>,
    arrivals: Arc<watch::Sender<usize>>,
) {
    let route = warp::method()
        .and(warp::path::full())
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and(warp::header::headers_cloned())
        .and(warp::body::bytes())
        .and_then(move |method, path, query, headers, body| {
            let response = dispatch(&state, (method, path, query, headers, body));
            arrivals.send_modify(|n| *n += 1);
            async move { Ok::<_, Infallible>(response) }
        });
    tokio::spawn(warp::serve(route).incoming(listener).run());
}

type Route = (
    Method,
    warp::path::FullPath,
    String,
    HeaderMap,
    bytes::Bytes,
);

fn into_response(reply: Reply, request_id: &str, client_request_id: &str) -> warp::reply::Response {
    let mut response = match reply.body {
        Some(mut body) => {
            if let Some(inner) = body
                .get_mut("error")
                .and_then(|e| e.get_mut("innerError"))
                .and_then(Value::as_object_mut)
            {
                inner.insert("request-id".into(), request_id.into());
                inner.insert("client-request-id".into(), client_request_id.into());
            }
            let mut response = body.to_string().into_response();
            response.headers_mut().insert(
                "content-type",
                HeaderValue::from_static(
                    "application/json;odata.metadata=minimal;odata.streaming=true;IEEE754Compatible=false;charset=utf-8",
                ),
            );
            response
        }
        None => warp::reply().into_response(),
    };
    *response.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (
            warp::http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.append(name, value);
        }
    }
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert("request-id", value);
    }
    if let Ok(value) = HeaderValue::from_str(client_request_id) {
        headers.insert("client-request-id", value);
    }
    response
}

fn dispatch(
    state: &Mutex<State>,
    (method, path, query, headers, body): Route,
) -> warp::reply::Response {
    let path = path.as_str().to_owned();
    let request_id = uuid::Uuid::new_v4().to_string();
    let client_request_id = headers
        .get("client-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .unwrap_or_else(|| request_id.clone());
    let mut state = state.lock();
    let tenant_path = |tail: &str| {
        ["common", "organizations", "consumers"]
            .iter()
            .any(|t| path == format!("/{t}/oauth2/v2.0/{tail}"))
    };
    let reply = if path == "/v1.0" || path.starts_with("/v1.0/") {
        graph::handle(&mut state, &method, &path, &query, &headers, &body)
    } else if tenant_path("token") && method == Method::POST {
        let form: Vec<(String, String)> = url::form_urlencoded::parse(&body).into_owned().collect();
        state.token_requests.push(oauth::form_json(&form));
        let reply = oauth::token(&mut state, &form);
        let answer = TokenAnswer {
            status: reply.status,
            body: reply.body.clone().unwrap_or_default(),
        };
        state.token_answers.push(answer);
        reply
    } else if tenant_path("authorize") {
        Reply::json(
            200,
            serde_json::json!({"note": "the fake has no sign-in page: the test calls GraphApi::consent"}),
        )
    } else {
        Reply::json(404, serde_json::json!({"error": "not found"}))
    };
    into_response(reply, &request_id, &client_request_id)
}
