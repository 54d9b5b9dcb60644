//! Graph v1.0 requests: recording them, the armed faults (429, failures), bearer tokens,
//! `Prefer` headers, the route table, and what the routes share (body, paging, contexts).

use std::time::Instant;

use percent_encoding::percent_decode_str;
use serde_json::{Map, Value, json};
use warp::http::{HeaderMap, Method};

use super::Recorded;
use super::calendar_routes::{
    create_calendar, delete_calendar, get_calendar, list_calendars, patch_calendar,
};
use super::event_routes::{
    calendar_view, create_event, delete_event, delta_view, get_event, list_events, patch_event,
};
use super::render::View;
use super::reply::{Failure, Reply};
use super::state::State;
use super::times::zone;

/// What the client asked for in its `Prefer` headers.
struct Prefs {
    zone: Option<String>,
    page_size: Option<usize>,
    body_type: Option<String>,
}

/// Splits `Prefer` values at commas outside quotes.
pub(super) fn split_prefer(headers: &HeaderMap) -> Vec<String> {
    let mut all = Vec::new();
    for value in headers.get_all("prefer") {
        let text = value.to_str().unwrap_or_default();
        let mut current = String::new();
        let mut quoted = false;
        for c in text.chars() {
            match c {
                '"' => {
                    quoted = !quoted;
                    current.push(c);
                }
                ',' if !quoted => {
                    all.push(current.trim().to_owned());
                    current.clear();
                }
                c => current.push(c),
            }
        }
        all.push(current.trim().to_owned());
    }
    all.retain(|p| !p.is_empty());
    all
}

fn prefs(list: &[String]) -> Prefs {
    let mut prefs = Prefs {
        zone: None,
        page_size: None,
        body_type: None,
    };
    for preference in list {
        let Some((name, value)) = preference.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"').to_owned();
        match name.trim().to_ascii_lowercase().as_str() {
            "outlook.timezone" => prefs.zone = Some(value),
            "odata.maxpagesize" => prefs.page_size = value.parse().ok(),
            "outlook.body-content-type" => prefs.body_type = Some(value.to_ascii_lowercase()),
            _ => {}
        }
    }
    prefs
}

/// A Graph request, once its caller is known.
pub(super) struct Call<'a> {
    pub(super) state: &'a mut State,
    pub(super) oid: String,
    pub(super) method: Method,
    /// The path as sent (links repeat it).
    pub(super) path: String,
    pub(super) segments: Vec<String>,
    pub(super) query: Vec<(String, String)>,
    pub(super) if_match: Option<String>,
    pub(super) body: Option<Result<Map<String, Value>, ()>>,
    pub(super) view: View,
    pub(super) page_size: Option<usize>,
}

/// Handles a request under `/v1.0`, recording it with the status answered.
pub(super) fn handle(
    state: &mut State,
    method: &Method,
    path: &str,
    raw_query: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Reply {
    let prefer = split_prefer(headers);
    let if_match = headers
        .get("if-match")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let parsed_body: Option<Value> = serde_json::from_slice(body).ok();
    state.requests.push(Recorded {
        method: method.to_string(),
        path: path.to_owned(),
        query: raw_query.to_owned(),
        if_match: if_match.clone(),
        prefer: prefer.clone(),
        body: parsed_body.clone(),
        status: 0,
        at: Instant::now(),
    });
    let at = state.requests.len() - 1;
    let mut reply = answer(
        state,
        method,
        path,
        raw_query,
        headers,
        (prefer, if_match, parsed_body),
    );
    if state.faults.lost_answers > 0 && reply.status < 300 {
        // Done, but the answer never reaches the client.
        state.faults.lost_answers -= 1;
        reply = Failure::new(504, "GatewayTimeout", "The gateway timed out.").into();
    }
    state.requests[at].status = reply.status;
    reply
}

/// The answer to a recorded request.
fn answer(
    state: &mut State,
    method: &Method,
    path: &str,
    raw_query: &str,
    headers: &HeaderMap,
    (prefer, if_match, parsed_body): (Vec<String>, Option<String>, Option<Value>),
) -> Reply {
    if state.faults.rate_limited > 0 {
        state.faults.rate_limited -= 1;
        let retry_after = state.faults.retry_after_secs;
        return Reply::from(Failure::new(
            429,
            "TooManyRequests",
            "Too many requests. Please retry after the time in the Retry-After header.",
        ))
        .header("Retry-After", retry_after.to_string());
    }
    if state.faults.failing > 0 {
        state.faults.failing -= 1;
        let status = state.faults.fail_status;
        let (code, message) = match status {
            500 => (
                "ErrorInternalServerError",
                "An internal server error occurred. The operation failed.",
            ),
            502 => ("BadGateway", "The server returned an invalid response."),
            503 => (
                "ServiceUnavailable",
                "The service is temporarily unavailable.",
            ),
            504 => ("GatewayTimeout", "The gateway timed out."),
            _ => ("UnknownError", ""),
        };
        return Failure::new(status, code, message).into();
    }
    let oid = match authenticate(state, headers) {
        Ok(oid) => oid,
        Err(reply) => return reply,
    };
    let prefs = prefs(&prefer);
    let (zone_name, tz) = prefs
        .zone
        .as_deref()
        .and_then(|name| zone(name).map(|tz| (name.to_owned(), tz)))
        .unwrap_or_else(|| ("UTC".to_owned(), chrono_tz::Tz::UTC));
    let text_body = prefs.body_type.as_deref().map(|t| t == "text");
    let has_body = matches!(*method, Method::POST | Method::PATCH | Method::PUT);
    let json_content = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("application/json"));
    let body = has_body.then(|| match parsed_body {
        Some(Value::Object(map)) if json_content => Ok(map),
        _ => Err(()),
    });
    let segments = path
        .trim_start_matches('/')
        .split('/')
        .skip(1)
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let query = url::form_urlencoded::parse(raw_query.as_bytes())
        .into_owned()
        .collect();
    let original_zones = state.faults.original_zones;
    let mut call = Call {
        state,
        oid,
        method: method.clone(),
        path: path.to_owned(),
        segments,
        query,
        if_match,
        body,
        view: View {
            zone_name: zone_name.clone(),
            tz,
            text_body,
            original_zones,
        },
        page_size: prefs.page_size,
    };
    let mut reply = route(&mut call);
    if reply.status < 300 {
        if prefs.zone.is_some() {
            reply = reply.header(
                "Preference-Applied",
                format!("outlook.timezone=\"{zone_name}\""),
            );
        }
        if let Some(size) = prefs.page_size {
            reply = reply.header("Preference-Applied", format!("odata.maxpagesize={size}"));
        }
    }
    reply
}

fn authenticate(state: &State, headers: &HeaderMap) -> Result<String, Reply> {
    let unauthorized = |message: &str| {
        Reply::from(Failure::new(401, "InvalidAuthenticationToken", message)).header(
            "WWW-Authenticate",
            "Bearer realm=\"\", authorization_uri=\"https://login.microsoftonline.com/common/oauth2/authorize\", client_id=\"00000003-0000-0000-c000-000000000000\"",
        )
    };
    let header = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let token = match header.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
        _ => "",
    };
    if token.is_empty() {
        return Err(unauthorized("Access token is empty."));
    }
    match state.access_tokens.get(token) {
        None => Err(unauthorized(
            "Access token validation failure. Invalid audience.",
        )),
        Some(access) if access.expires <= Instant::now() => Err(unauthorized(
            "Lifetime validation failed, the token is expired.",
        )),
        Some(access) => Ok(access.oid.clone()),
    }
}

fn route(call: &mut Call<'_>) -> Reply {
    let segments: Vec<String> = call.segments.clone();
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    let method = call.method.clone();
    let default = call
        .state
        .user(&call.oid)
        .map(|u| u.default_calendar.clone())
        .unwrap_or_default();
    let result = match (method, parts.as_slice()) {
        (Method::GET, ["me"]) => me(call),
        (Method::GET, ["me", "calendar"]) => get_calendar(call, &default),
        (Method::GET, ["me", "calendars"]) => list_calendars(call),
        (Method::POST, ["me", "calendars"]) => create_calendar(call),
        (Method::GET, ["me", "calendars", id]) => get_calendar(call, id),
        (Method::PATCH, ["me", "calendars", id]) => patch_calendar(call, id),
        (Method::DELETE, ["me", "calendars", id]) => delete_calendar(call, id),
        (Method::GET, ["me", "calendars", id, "events"]) => list_events(call, id),
        (Method::POST, ["me", "calendars", id, "events"]) => create_event(call, id),
        (Method::POST, ["me", "events"] | ["me", "calendar", "events"]) => {
            create_event(call, &default)
        }
        (Method::GET, ["me", "calendars", id, "calendarView"]) => calendar_view(call, id),
        (Method::GET, ["me", "calendarView"] | ["me", "calendar", "calendarView"]) => {
            calendar_view(call, &default)
        }
        (Method::GET, ["me", "calendars", id, "calendarView", "delta"]) => delta_view(call, id),
        (Method::GET, ["me", "calendarView", "delta"]) => delta_view(call, &default),
        (Method::GET, ["me", "events", id]) => get_event(call, id),
        (Method::PATCH, ["me", "events", id]) => patch_event(call, id),
        (Method::DELETE, ["me", "events", id]) => delete_event(call, id),
        (_, [.., last]) if known_segment(last) => Err(Failure::new(
            405,
            "ErrorInvalidRequest",
            "The OData request is not supported.",
        )),
        (_, [.., last]) => Err(Failure::new(
            400,
            "BadRequest",
            format!("Resource not found for the segment '{last}'."),
        )),
        (_, []) => Err(Failure::new(400, "BadRequest", "Invalid request.")),
    };
    result.unwrap_or_else(Reply::from)
}

fn known_segment(segment: &str) -> bool {
    [
        "me",
        "calendar",
        "calendars",
        "events",
        "calendarView",
        "delta",
    ]
    .contains(&segment)
}

pub(super) type Answer = Result<Reply, Failure>;

pub(super) fn context(call: &Call<'_>, what: &str) -> String {
    format!(
        "{}/v1.0/$metadata#users('{}')/{what}",
        call.state.base, call.oid
    )
}

pub(super) fn body(call: &Call<'_>) -> Result<Map<String, Value>, Failure> {
    match &call.body {
        Some(Ok(map)) => Ok(map.clone()),
        _ => Err(Failure::new(
            400,
            "BadRequest",
            "Unable to read JSON request payload. Please ensure Content-Type header is set and payload is of valid JSON format.",
        )),
    }
}

pub(super) fn query_option<'a>(call: &'a Call<'_>, name: &str) -> Option<&'a str> {
    call.query
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// One page of `values` (`$top`/`odata.maxpagesize`, `$skip`) with its nextLink.
pub(super) fn page(
    call: &Call<'_>,
    values: Vec<Value>,
    default_size: usize,
    context: String,
) -> Reply {
    let size = query_option(call, "$top")
        .and_then(|t| t.parse().ok())
        .or(call.page_size)
        .unwrap_or(default_size)
        .max(1);
    let skip: usize = query_option(call, "$skip")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let total = values.len();
    let value: Vec<Value> = values.into_iter().skip(skip).take(size).collect();
    let mut body = json!({"@odata.context": context, "value": value});
    if skip + size < total {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in call.query.iter().filter(|(k, _)| k != "$skip") {
            query.append_pair(k, v);
        }
        let query = query.finish();
        let separator = if query.is_empty() { "" } else { "&" };
        body["@odata.nextLink"] = json!(format!(
            "{}{}?{query}{separator}$skip={}",
            call.state.base,
            call.path,
            skip + size
        ));
    }
    Reply::json(200, body)
}

fn me(call: &mut Call<'_>) -> Answer {
    let user = call.state.user(&call.oid).ok_or_else(Failure::not_found)?;
    Ok(Reply::json(
        200,
        json!({
            "@odata.context": format!("{}/v1.0/$metadata#users/$entity", call.state.base),
            "id": user.oid,
            "displayName": user.name,
            "mail": user.email,
            "userPrincipalName": user.email,
        }),
    ))
}
