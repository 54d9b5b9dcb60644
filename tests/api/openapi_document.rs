//! `GET /api/v1/openapi.json`: the document describes exactly the routes the server answers.
//!
//! The server's routes are found where they are registered — every `endpoint!(...)` path
//! and `route("...")` label under `src/http`, every pattern of the authentication
//! subsystem's dispatch — and each is asked with every method; the route label the metrics
//! record for an answered request gives the (method, pattern) pairs the server answers,
//! which must be the document's operations, no more and no fewer.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::helpers::{TestApp, spawn_app};

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

#[tokio::test]
async fn the_document_is_openapi_3_1_and_every_reference_resolves() {
    let app = spawn_app().await;
    let response = app.get("/api/v1/openapi.json").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/json");
    let doc: Value = response.json().await.expect("JSON");
    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "{}",
        doc["openapi"]
    );
    for scheme in ["bearer", "cookie", "memberToken"] {
        assert!(
            doc["components"]["securitySchemes"][scheme].is_object(),
            "security scheme {scheme}"
        );
    }
    let mut references = Vec::new();
    collect_references(&doc, &mut references);
    assert!(!references.is_empty());
    for reference in references {
        let pointer = reference
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("external reference {reference}"));
        assert!(
            doc.pointer(pointer).is_some(),
            "{reference} names nothing in the document"
        );
    }
    let mut operation_ids = std::collections::HashSet::new();
    let mut linked = Vec::new();
    for (method, path, operation) in operations(&doc) {
        let id = operation["operationId"].as_str().unwrap_or_default();
        assert!(
            operation_ids.insert(id.to_owned()),
            "{method} {path}: operationId {id:?} is not unique"
        );
        for (status, response) in operation["responses"].as_object().expect("responses") {
            for (name, link) in response["links"].as_object().into_iter().flatten() {
                let target = link["operationId"]
                    .as_str()
                    .expect("a link names its operation");
                linked.push((
                    format!("{method} {path} {status} {name}"),
                    target.to_owned(),
                ));
            }
        }
        let statuses: Vec<&String> = operation["responses"]
            .as_object()
            .map(|responses| responses.keys().collect())
            .unwrap_or_default();
        // better-auth's `POST /get-session` exists only to answer 405.
        let refusal_only = statuses.iter().any(|status| status.as_str() == "405");
        assert!(
            refusal_only
                || statuses.iter().any(|status| {
                    // `default`: a relayed answer, whatever its status.
                    status.starts_with('2') || status.starts_with('3') || *status == "default"
                }),
            "{method} {path} documents no success: {statuses:?}"
        );
        assert!(
            statuses.iter().any(|status| status.as_str() == "400"),
            "{method} {path} documents no error answer"
        );
    }
    assert!(linked.len() >= 20, "{} links", linked.len());
    for (from, target) in linked {
        assert!(
            operation_ids.contains(&target),
            "the link {from} names no operation ({target})"
        );
    }
}

#[tokio::test]
async fn the_document_lists_exactly_the_routes_the_server_answers() {
    let app = spawn_app().await;
    let user = app.sign_up("routes@example.com").await;
    let doc: Value = app
        .get("/api/v1/openapi.json")
        .await
        .json()
        .await
        .expect("JSON");
    let documented: BTreeSet<(String, String)> = operations(&doc)
        .map(|(method, path, _)| (method.to_uppercase(), path.to_owned()))
        .collect();

    let registered = registered_patterns();
    assert!(
        registered.len() > 60,
        "found only {} registered route patterns",
        registered.len()
    );
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client");
    let mut sent = 0_usize;
    // Authentication routes last: some of them end the session the others are asked with.
    let (auth, application): (Vec<&String>, Vec<&String>) = registered
        .iter()
        .partition(|pattern| pattern.starts_with("/api/auth/"));
    for pattern in application.into_iter().chain(auth) {
        let path = concrete(pattern);
        for method in METHODS {
            let method = Method::from_bytes(method.as_bytes()).expect("method");
            let mut request = client
                .request(method.clone(), app.url(&path))
                .bearer_auth(&user.token);
            if method != Method::GET {
                request = request
                    .header("content-type", "application/json")
                    .body("{}");
            }
            // The answer's head is enough: the stream's body never ends, and dropping the
            // response closes it.
            drop(request.send().await.expect("request"));
            sent += 1;
        }
    }
    let mut answered = answered_routes(&app, sent).await;
    let mut documented = documented;
    // A method that a literal path's route does not take may be answered by a route with a
    // parameter in its place (`GET /api/v1/pages/reorder` by `GET /api/v1/pages/{id}`), yet
    // the request keeps the literal route's label: where the route with the parameter takes
    // the method, who answered cannot be told from outside, and the pair is left out.
    let ambiguous: Vec<(String, String)> = answered
        .iter()
        .flat_map(|(method, other)| {
            registered
                .iter()
                .filter(|pattern| shadows(other, pattern))
                .map(|pattern| (method.clone(), pattern.clone()))
        })
        .collect();
    for pair in &ambiguous {
        answered.remove(pair);
        documented.remove(pair);
    }
    assert!(ambiguous.len() < 20, "{ambiguous:?}");
    let missing: Vec<_> = answered.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&answered).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "answered but not documented: {missing:#?}\ndocumented but not answered: {extra:#?}"
    );
}

/// The (method, path, operation) triples of `doc`.
fn operations(doc: &Value) -> impl Iterator<Item = (&str, &str, &Value)> {
    doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .expect("path item")
                .iter()
                .filter(|(method, _)| {
                    [
                        "get", "put", "post", "delete", "patch", "head", "options", "trace",
                    ]
                    .contains(&method.as_str())
                })
                .map(move |(method, operation)| (method.as_str(), path.as_str(), operation))
        })
}

/// Every `$ref` in `value`.
fn collect_references(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if key == "$ref" {
                    into.push(inner.as_str().expect("$ref is a string").to_owned());
                } else {
                    collect_references(inner, into);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_references(item, into)),
        _ => {}
    }
}

/// The route patterns registered in the server's HTTP layer, in the document's notation
/// (`/api/v1/events/{eventId}`; a trailing `*` is `{path}`), under `/api/` only.
fn registered_patterns() -> BTreeSet<String> {
    let mut patterns = BTreeSet::new();
    for file in rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http")) {
        let source = std::fs::read_to_string(&file).expect("source");
        for arguments in macro_arguments(&source, "endpoint!(") {
            patterns.insert(endpoint_pattern(&arguments));
        }
        // `route(...)` labels, also where the label is chosen (`route(if ... { "/a" } else
        // { "/b" })`).
        for arguments in balanced_arguments(&source, ".and(route(") {
            for label in quoted_after(&arguments, "\"/api/") {
                patterns.insert(document_notation(&format!("/api/{label}")));
            }
        }
        // The authentication subsystem's dispatch: `(Endpoint, "/api/auth/...")`, on one
        // line or, where rustfmt splits a long one, on two.
        let joined = source
            .split(',')
            .map(str::trim_start)
            .collect::<Vec<_>>()
            .join(", ");
        for label in quoted_after(&joined, ", \"/api/auth/") {
            patterns.insert(document_notation(&format!("/api/auth/{label}")));
        }
    }
    patterns.retain(|pattern| pattern.starts_with("/api/"));
    patterns
}

/// The `.rs` files below `dir`.
fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("source dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

/// The text between `opening` and the next `)`, for each occurrence (the macro's own
/// definition, whose arguments are macro fragments, is skipped).
fn macro_arguments(source: &str, opening: &str) -> Vec<String> {
    source
        .match_indices(opening)
        .filter_map(|(at, _)| {
            let rest = &source[at + opening.len()..];
            let arguments = &rest[..rest.find(')')?];
            (!arguments.contains('$')).then(|| arguments.to_owned())
        })
        .collect()
}

/// The text inside the parentheses opened by each `opening`, up to the one that closes it.
fn balanced_arguments(source: &str, opening: &str) -> Vec<String> {
    source
        .match_indices(opening)
        .filter_map(|(at, _)| {
            let rest = &source[at + opening.len()..];
            let mut depth = 1_usize;
            for (offset, c) in rest.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    return Some(rest[..offset].to_owned());
                }
            }
            None
        })
        .collect()
}

/// The string literal right after each `prefix` (which ends inside the literal).
fn quoted_after(source: &str, prefix: &str) -> Vec<String> {
    source
        .match_indices(prefix)
        .filter_map(|(at, _)| {
            let rest = &source[at + prefix.len()..];
            rest.find('"').map(|end| rest[..end].to_owned())
        })
        .collect()
}

/// `"api" / "v1" / {eventId: String}` → `/api/v1/{eventId}`.
fn endpoint_pattern(arguments: &str) -> String {
    arguments
        .split('/')
        .map(str::trim)
        .map(|segment| {
            if let Some(literal) = segment.strip_prefix('"') {
                literal.trim_end_matches('"').to_owned()
            } else {
                let name = segment
                    .trim_start_matches('{')
                    .split(':')
                    .next()
                    .expect("parameter name")
                    .trim();
                format!("{{{name}}}")
            }
        })
        .fold(String::new(), |path, segment| format!("{path}/{segment}"))
}

/// A route label (`/api/v1/events/:eventId`, `…/*`) in the document's notation.
fn document_notation(label: &str) -> String {
    label
        .split('/')
        .map(|segment| {
            if let Some(name) = segment.strip_prefix(':') {
                format!("{{{name}}}")
            } else if segment == "*" {
                "{path}".to_owned()
            } else {
                segment.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A path that `pattern` matches: parameters get values the routes take.
fn concrete(pattern: &str) -> String {
    pattern
        .split('/')
        .map(|segment| match segment {
            // OAuth callbacks exist for the providers Bowline knows.
            "{id}" if pattern.contains("/callback/") => "google",
            "{path}" => "events",
            s if s.starts_with('{') => "00000000-0000-4000-8000-000000000000",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether a request for `pattern`'s path could also reach `other` (a parameter in `other`
/// takes `pattern`'s literal segment).
fn shadows(other: &str, pattern: &str) -> bool {
    let (a, b): (Vec<&str>, Vec<&str>) = (other.split('/').collect(), pattern.split('/').collect());
    other != pattern
        && a.len() == b.len()
        && a.iter()
            .zip(&b)
            .all(|(x, y)| x == y || (x.starts_with('{') && !y.starts_with('{')))
}

/// The (method, pattern) pairs the metrics say were answered by a route, once all `sent`
/// requests are counted. The first route whose path matches labels the request: a route
/// whose path matched but whose method did not answers 405 (the authentication subsystem
/// labels a request only once path and method matched).
async fn answered_routes(app: &TestApp, sent: usize) -> BTreeSet<(String, String)> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    loop {
        let text = app.metrics_text().await;
        let mut counted = 0.0;
        let mut found = BTreeSet::new();
        for line in text.lines() {
            let Some(labels) = line.strip_prefix("svc_http_requests_total{") else {
                continue;
            };
            let (labels, value) = labels.split_once("} ").expect("sample");
            let label = |name: &str| {
                labels
                    .split(',')
                    .find_map(|pair| pair.strip_prefix(&format!("{name}=\"")))
                    .map(|value| value.trim_end_matches('"').to_owned())
                    .expect("label")
            };
            let (method, route, status) = (label("method"), label("route"), label("status"));
            counted += value.parse::<f64>().expect("count");
            let route = document_notation(&route);
            let auth = route.starts_with("/api/auth/");
            let refused = status == "405";
            if route.starts_with("/api/") && (auth || !refused) {
                found.insert((method, route));
            }
        }
        // Sign-up and the document read come before the probes.
        if counted >= (sent + 2) as f64 {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {counted} of {} requests were counted",
            sent + 2
        );
        tick.tick().await;
    }
}
