//! The Graph v1.0 routes: bearer tokens, armed faults (429, failures), `Prefer` headers,
//! calendars, events with `If-Match`, calendar views and their delta.

use std::time::Instant;

use percent_encoding::percent_decode_str;
use serde_json::{Map, Value, json};
use warp::http::{HeaderMap, Method};

use super::Recorded;
use super::delta::delta;
use super::events::{self, View, find, render, view};
use super::reply::{Failure, Reply};
use super::state::{CalendarRecord, EventRecord, Kind, State};
use super::times::{parse_query_instant, zone};

/// Calendar colours and the `hexColor` Outlook shows for each.
const COLORS: &[(&str, &str)] = &[
    ("auto", ""),
    ("lightBlue", "#a6d1f5"),
    ("lightGreen", "#87d28e"),
    ("lightOrange", "#fcab73"),
    ("lightGray", "#c0c0c0"),
    ("lightYellow", "#f4d07a"),
    ("lightTeal", "#6fd7cf"),
    ("lightPink", "#f5a3c3"),
    ("lightBrown", "#d8b48c"),
    ("lightRed", "#f88c9b"),
    ("maxColor", ""),
];

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
struct Call<'a> {
    state: &'a mut State,
    oid: String,
    method: Method,
    /// The path as sent (links repeat it).
    path: String,
    segments: Vec<String>,
    query: Vec<(String, String)>,
    if_match: Option<String>,
    body: Option<Result<Map<String, Value>, ()>>,
    view: View,
    page_size: Option<usize>,
}

/// Handles a request under `/v1.0`.
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
    });
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

type Answer = Result<Reply, Failure>;

fn context(call: &Call<'_>, what: &str) -> String {
    format!(
        "{}/v1.0/$metadata#users('{}')/{what}",
        call.state.base, call.oid
    )
}

fn body(call: &Call<'_>) -> Result<Map<String, Value>, Failure> {
    match &call.body {
        Some(Ok(map)) => Ok(map.clone()),
        _ => Err(Failure::new(
            400,
            "BadRequest",
            "Unable to read JSON request payload. Please ensure Content-Type header is set and payload is of valid JSON format.",
        )),
    }
}

fn query_option<'a>(call: &'a Call<'_>, name: &str) -> Option<&'a str> {
    call.query
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// One page of `values` (`$top`/`odata.maxpagesize`, `$skip`) with its nextLink.
fn page(call: &Call<'_>, values: Vec<Value>, default_size: usize, context: String) -> Reply {
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

pub(super) fn render_calendar(state: &State, calendar: &CalendarRecord) -> Value {
    let owner = state.user(&calendar.owner_oid);
    let hex = COLORS
        .iter()
        .find(|(name, _)| *name == calendar.color)
        .map(|(_, hex)| *hex)
        .unwrap_or_default();
    json!({
        "id": calendar.id,
        "name": calendar.name,
        "color": calendar.color,
        "hexColor": hex,
        "isDefaultCalendar": calendar.is_default,
        "changeKey": calendar.change_key,
        "canShare": calendar.can_edit,
        "canViewPrivateItems": calendar.can_edit,
        "canEdit": calendar.can_edit,
        "isRemovable": !calendar.is_default,
        "isTallyingResponses": true,
        "allowedOnlineMeetingProviders": ["teamsForBusiness"],
        "defaultOnlineMeetingProvider": "teamsForBusiness",
        "owner": {
            "name": owner.map(|u| u.name.clone()).unwrap_or_default(),
            "address": owner.map(|u| u.email.clone()).unwrap_or_default(),
        },
    })
}

fn own_calendar(call: &Call<'_>, id: &str) -> Result<CalendarRecord, Failure> {
    call.state
        .calendar_of(&call.oid, id)
        .cloned()
        .ok_or_else(Failure::not_found)
}

fn list_calendars(call: &mut Call<'_>) -> Answer {
    let values: Vec<Value> = call
        .state
        .calendars
        .iter()
        .filter(|c| c.owner_oid == call.oid)
        .map(|c| render_calendar(call.state, c))
        .collect();
    Ok(page(call, values, 10, context(call, "calendars")))
}

fn get_calendar(call: &mut Call<'_>, id: &str) -> Answer {
    let calendar = own_calendar(call, id)?;
    let mut body = render_calendar(call.state, &calendar);
    body["@odata.context"] = json!(context(call, "calendars/$entity"));
    Ok(Reply::json(200, body))
}

fn calendar_fields(body: &Map<String, Value>) -> Result<(Option<String>, Option<String>), Failure> {
    for name in body.keys() {
        if !name.starts_with('@')
            && !["name", "color", "id", "changeKey", "hexColor"].contains(&name.as_str())
        {
            return Err(Failure::new(
                400,
                "RequestBodyRead",
                format!("The property '{name}' does not exist on type 'microsoft.graph.calendar'."),
            ));
        }
    }
    let name = match body.get("name") {
        None => None,
        Some(Value::String(name)) if !name.trim().is_empty() => Some(name.clone()),
        Some(_) => {
            return Err(Failure::new(
                400,
                "ErrorInvalidParameter",
                "The calendar name is not valid.",
            ));
        }
    };
    let color = match body.get("color") {
        None => None,
        Some(Value::String(color)) if COLORS.iter().any(|(c, _)| c == color) => Some(color.clone()),
        Some(other) => {
            return Err(Failure::new(
                400,
                "RequestBodyRead",
                format!(
                    "Cannot convert the literal '{other}' to the expected type 'microsoft.graph.calendarColor'."
                ),
            ));
        }
    };
    Ok((name, color))
}

fn name_taken(state: &State, oid: &str, name: &str, except: Option<&str>) -> bool {
    state.calendars.iter().any(|c| {
        c.owner_oid == oid && c.name.eq_ignore_ascii_case(name) && Some(c.id.as_str()) != except
    })
}

fn folder_exists() -> Failure {
    Failure::new(
        409,
        "ErrorFolderExists",
        "A folder with the specified name already exists.",
    )
}

fn create_calendar(call: &mut Call<'_>) -> Answer {
    let (name, color) = calendar_fields(&body(call)?)?;
    let name = name.ok_or_else(|| {
        Failure::new(
            400,
            "ErrorInvalidParameter",
            "The calendar name is required.",
        )
    })?;
    if name_taken(call.state, &call.oid, &name, None) {
        return Err(folder_exists());
    }
    let id = new_calendar(
        call.state,
        &call.oid,
        &name,
        color.as_deref().unwrap_or("auto"),
        true,
        false,
    );
    let calendar = own_calendar(call, &id)?;
    let mut body = render_calendar(call.state, &calendar);
    body["@odata.context"] = json!(context(call, "calendars/$entity"));
    Ok(Reply::json(201, body))
}

/// Adds a calendar to `oid`'s list and returns its id.
pub(super) fn new_calendar(
    state: &mut State,
    oid: &str,
    name: &str,
    color: &str,
    can_edit: bool,
    is_default: bool,
) -> String {
    let id = State::new_event_id().replacen("AAMkAD", "AAMkAG", 1);
    state.calendars.push(CalendarRecord {
        id: id.clone(),
        owner_oid: oid.to_owned(),
        name: name.to_owned(),
        color: color.to_owned(),
        change_key: State::new_change_key(),
        can_edit,
        is_default,
    });
    id
}

fn patch_calendar(call: &mut Call<'_>, id: &str) -> Answer {
    let calendar = own_calendar(call, id)?;
    let (name, color) = calendar_fields(&body(call)?)?;
    if let Some(name) = &name
        && name_taken(call.state, &call.oid, name, Some(id))
    {
        return Err(folder_exists());
    }
    if !calendar.can_edit {
        return Err(access_denied());
    }
    let record = call.state.calendar_mut(id).ok_or_else(Failure::not_found)?;
    if let Some(name) = name {
        record.name = name;
    }
    if let Some(color) = color {
        record.color = color;
    }
    record.change_key = State::new_change_key();
    get_calendar(call, id)
}

fn delete_calendar(call: &mut Call<'_>, id: &str) -> Answer {
    let calendar = own_calendar(call, id)?;
    if calendar.is_default {
        return Err(Failure::new(
            400,
            "ErrorCannotDeleteDefaultCalendar",
            "The default calendar cannot be deleted.",
        ));
    }
    remove_calendar(call.state, id);
    Ok(Reply::empty(204))
}

/// Removes a calendar and its events.
pub(super) fn remove_calendar(state: &mut State, id: &str) {
    state.calendars.retain(|c| c.id != id);
    state.events.retain(|_, e| e.calendar_id != id);
}

fn access_denied() -> Failure {
    Failure::new(
        403,
        "ErrorAccessDenied",
        "Access is denied. Check credentials and try again.",
    )
}

fn window(
    call: &Call<'_>,
) -> Result<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>), Failure> {
    let parse = |name: &str| query_option(call, name).and_then(parse_query_instant);
    match (parse("startDateTime"), parse("endDateTime")) {
        (Some(from), Some(to)) if from < to => Ok((from, to)),
        _ => Err(Failure::new(
            400,
            "ErrorInvalidParameter",
            "This request requires a time window specified by the query string parameters StartDateTime and EndDateTime.",
        )),
    }
}

fn calendar_view(call: &mut Call<'_>, id: &str) -> Answer {
    let calendar = own_calendar(call, id)?;
    let window = window(call)?;
    let values: Vec<Value> = view(call.state, &calendar.id, window)
        .iter()
        .filter_map(|item| find(call.state, &item.id))
        .map(|record| render(call.state, &record, &call.view))
        .collect();
    Ok(page(
        call,
        values,
        10,
        format!("{}/v1.0/$metadata#Collection(event)", call.state.base),
    ))
}

fn list_events(call: &mut Call<'_>, id: &str) -> Answer {
    let calendar = own_calendar(call, id)?;
    let mut records: Vec<&EventRecord> = call
        .state
        .events
        .values()
        .filter(|e| {
            e.calendar_id == calendar.id && matches!(e.kind, Kind::Single | Kind::Master { .. })
        })
        .collect();
    records.sort_by_key(|e| e.seq);
    let values = records
        .into_iter()
        .map(|record| render(call.state, record, &call.view))
        .collect();
    Ok(page(
        call,
        values,
        10,
        format!("{}/v1.0/$metadata#Collection(event)", call.state.base),
    ))
}

fn delta_view(call: &mut Call<'_>, id: &str) -> Answer {
    own_calendar(call, id)?;
    Ok(delta(
        call.state,
        id,
        &call.path,
        &call.query,
        &call.view,
        call.page_size.unwrap_or(50),
    ))
}

fn event_reply(call: &Call<'_>, status: u16, id: &str) -> Answer {
    let record = find(call.state, id).ok_or_else(Failure::not_found)?;
    let mut body = render(call.state, &record, &call.view);
    body["@odata.context"] = json!(context(call, "events/$entity"));
    Ok(Reply::json(status, body))
}

fn create_event(call: &mut Call<'_>, calendar_id: &str) -> Answer {
    let calendar = own_calendar(call, calendar_id)?;
    let body = body(call)?;
    if !calendar.can_edit {
        return Err(access_denied());
    }
    let id = events::create(call.state, calendar_id, &body, false)?;
    event_reply(call, 201, &id)
}

/// The caller's event `id` and whether its calendar can be written.
fn own_event(call: &Call<'_>, id: &str) -> Result<(EventRecord, bool), Failure> {
    let record = find(call.state, id).ok_or_else(Failure::not_found)?;
    let calendar = own_calendar(call, &record.calendar_id)?;
    Ok((record, calendar.can_edit))
}

/// Checks `If-Match` against the current change key.
fn precondition(call: &Call<'_>, record: &EventRecord) -> Result<(), Failure> {
    let Some(given) = call.if_match.as_deref() else {
        return Ok(());
    };
    let given = given.trim();
    let bare = given.trim_start_matches("W/").trim_matches('"');
    if given == "*" || bare == record.change_key {
        return Ok(());
    }
    Err(Failure::new(
        call.state.faults.conflict_status,
        "ErrorIrresolvableConflict",
        "The send or update operation could not be performed because the change key passed in the request does not match the current change key for the item.",
    ))
}

fn get_event(call: &mut Call<'_>, id: &str) -> Answer {
    own_event(call, id)?;
    event_reply(call, 200, id)
}

fn patch_event(call: &mut Call<'_>, id: &str) -> Answer {
    let (record, can_edit) = own_event(call, id)?;
    let body = body(call)?;
    precondition(call, &record)?;
    if !can_edit {
        return Err(access_denied());
    }
    events::patch(call.state, id, &body, false)?;
    event_reply(call, 200, id)
}

fn delete_event(call: &mut Call<'_>, id: &str) -> Answer {
    let (record, can_edit) = own_event(call, id)?;
    precondition(call, &record)?;
    if !can_edit {
        return Err(access_denied());
    }
    events::delete(call.state, id)?;
    Ok(Reply::empty(204))
}
