//! What a handler answers: a status, headers and a JSON body, turned into a warp response;
//! the answers shared by several routes (an event with its `ETag`, a token response); and
//! Google's error bodies, the API's `{"error":{"errors":[{domain,reason,message}],code,
//! message}}` envelope and OAuth's `{"error","error_description"}`.

use http::StatusCode;
use serde_json::{Map, Value, json};
use warp::Reply as _;

/// An answer before it becomes a warp response.
#[derive(Debug)]
pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) body: Option<Value>,
    pub(super) headers: Vec<(&'static str, String)>,
}

impl Reply {
    pub(super) fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            body: Some(body),
            headers: Vec::new(),
        }
    }

    pub(super) fn empty(status: u16) -> Self {
        Self {
            status,
            body: None,
            headers: Vec::new(),
        }
    }

    pub(super) fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub(super) fn into_response(self) -> warp::reply::Response {
        let mut response = match &self.body {
            Some(body) => warp::reply::with_header(
                warp::reply::json(body),
                "content-type",
                "application/json; charset=UTF-8",
            )
            .into_response(),
            None => warp::reply().into_response(),
        };
        *response.status_mut() = StatusCode::from_u16(self.status).expect("status");
        for (name, value) in self.headers {
            response
                .headers_mut()
                .insert(name, value.parse().expect("header value"));
        }
        response
    }
}

/// A handler's answer: `Err` short-circuits with an error reply.
pub(super) type Answer = Result<Reply, Reply>;

/// 200 with the event and its `ETag` header.
pub(super) fn event_reply(event: Map<String, Value>) -> Reply {
    let etag = event
        .get("etag")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Reply::json(200, Value::Object(event)).with_header("etag", etag)
}

/// 200 with a token response, not cacheable.
pub(super) fn token_reply(body: Map<String, Value>) -> Reply {
    Reply::json(200, Value::Object(body))
        .with_header(
            "cache-control",
            "no-cache, no-store, max-age=0, must-revalidate",
        )
        .with_header("pragma", "no-cache")
}

/// An error in domain `global`.
pub(super) fn api_error(code: u16, reason: &str, message: &str) -> Reply {
    error_in(code, "global", reason, message)
}

/// An error in Google's envelope.
pub(super) fn error_in(code: u16, domain: &str, reason: &str, message: &str) -> Reply {
    Reply::json(
        code,
        json!({"error": {
            "errors": [{"domain": domain, "reason": reason, "message": message}],
            "code": code,
            "message": message,
        }}),
    )
}

/// 400 `invalid`.
pub(super) fn invalid(message: &str) -> Reply {
    api_error(400, "invalid", message)
}

/// 400 `invalid`, located at query parameter `name`.
pub(super) fn invalid_parameter(name: &str, message: &str) -> Reply {
    Reply::json(
        400,
        json!({"error": {
            "errors": [{
                "domain": "global",
                "reason": "invalid",
                "message": message,
                "locationType": "parameter",
                "location": name,
            }],
            "code": 400,
            "message": message,
        }}),
    )
}

/// 404 `notFound`.
pub(super) fn not_found() -> Reply {
    api_error(404, "notFound", "Not Found")
}

/// 410 as Google answers a sync token it no longer knows.
pub(super) fn full_sync_required() -> Reply {
    let message = "Sync token is no longer valid, a full sync is required.";
    Reply::json(
        410,
        json!({"error": {
            "code": 410,
            "message": message,
            "errors": [{
                "domain": "calendar",
                "reason": "fullSyncRequired",
                "message": message,
                "locationType": "parameter",
                "location": "syncToken",
            }],
        }}),
    )
}

/// 400 `syncTokenWithRequestRestrictions`.
pub(super) fn sync_token_restriction() -> Reply {
    let message = "Sync token cannot be used with other request restrictions.";
    Reply::json(
        400,
        json!({"error": {
            "errors": [{
                "domain": "calendar",
                "reason": "syncTokenWithRequestRestrictions",
                "message": message,
                "locationType": "parameter",
                "location": "syncToken",
            }],
            "code": 400,
            "message": message,
        }}),
    )
}

/// A parameter Google has but the fake does not implement: a loud 400 rather than a
/// silently wrong answer.
pub(super) fn unimplemented_parameter(name: &str) -> Reply {
    invalid_parameter(
        name,
        &format!("The Google fake does not implement the parameter {name}."),
    )
}

/// 404 naming a route the fake does not implement.
pub(super) fn unimplemented_route(method: &str, path: &str) -> Reply {
    api_error(
        404,
        "notFound",
        &format!("The Google fake does not implement {method} {path}."),
    )
}

/// An OAuth endpoint's error.
pub(super) fn oauth_error(status: u16, error: &str, description: &str) -> Reply {
    Reply::json(
        status,
        json!({"error": error, "error_description": description}),
    )
}
