//! The Microsoft fake itself (`support::graph_api`), driven with plain reqwest as Bowline
//! will drive it: the code exchange and refresh rotation, delta rounds, resets, conditional
//! writes, idempotent creates and throttling.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{TimeZone, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::helpers::test_settings;
use crate::support::graph_api::{
    GraphApi, GraphUser, MICROSOFT_CLIENT_ID, MICROSOFT_CLIENT_SECRET, Reset,
};

const REDIRECT_URI: &str = "http://127.0.0.1:9/api/providers/microsoft/callback";
const SCOPES: &str = "openid profile email offline_access User.Read Calendars.ReadWrite";
const VERIFIER: &str = "a-pkce-code-verifier-that-is-long-enough-for-s256-0123456789";
const PREFER_UTC: &str =
    "outlook.timezone=\"UTC\", IdType=\"ImmutableId\", outlook.body-content-type=\"text\"";

fn authorization_url(graph: &GraphApi, scope: &str) -> String {
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(VERIFIER.as_bytes()));
    let mut url = url::Url::parse(&graph.authorization_url()).unwrap();
    url.query_pairs_mut()
        .append_pair("client_id", MICROSOFT_CLIENT_ID)
        .append_pair("response_type", "code")
        .append_pair("redirect_uri", REDIRECT_URI)
        .append_pair("response_mode", "query")
        .append_pair("scope", scope)
        .append_pair("state", "state-1")
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("prompt", "consent");
    url.to_string()
}

fn query_param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

async fn token_request(graph: &GraphApi, form: &[(&str, &str)]) -> (StatusCode, Value) {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let response = reqwest::Client::new()
        .post(graph.token_url())
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

async fn redeem(graph: &GraphApi, code: &str) -> (StatusCode, Value) {
    token_request(
        graph,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT_URI),
            ("client_id", MICROSOFT_CLIENT_ID),
            ("client_secret", MICROSOFT_CLIENT_SECRET),
            ("code_verifier", VERIFIER),
        ],
    )
    .await
}

async fn refresh(graph: &GraphApi, refresh_token: &str, scope: &str) -> (StatusCode, Value) {
    token_request(
        graph,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", MICROSOFT_CLIENT_ID),
            ("client_secret", MICROSOFT_CLIENT_SECRET),
            ("scope", scope),
        ],
    )
    .await
}

/// A user who linked Microsoft, and an access token for Graph.
async fn linked(graph: &GraphApi) -> (GraphUser, String) {
    let user = graph.add_user("ada@example.com", "Ada Lovelace");
    let redirect = graph.consent(&authorization_url(graph, SCOPES), &user);
    let code = query_param(&redirect, "code").unwrap();
    let (status, tokens) = redeem(graph, &code).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    (user, tokens["access_token"].as_str().unwrap().to_owned())
}

async fn call(
    method: reqwest::Method,
    url: &str,
    token: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let mut request = reqwest::Client::new()
        .request(method, url)
        .bearer_auth(token)
        .header("Prefer", PREFER_UTC);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// Follows nextLinks to the deltaLink: every item of the round and the deltaLink.
async fn delta_round(url: &str, token: &str, page_size: usize) -> (Vec<Value>, String) {
    let prefer = format!("odata.maxpagesize={page_size}");
    let mut items = Vec::new();
    let mut url = url.to_owned();
    loop {
        let (status, _, page) = call(
            reqwest::Method::GET,
            &url,
            token,
            &[("Prefer", &prefer)],
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let values = page["value"].as_array().unwrap();
        assert!(values.len() <= page_size);
        items.extend(values.iter().cloned());
        if let Some(next) = page["@odata.nextLink"].as_str() {
            assert!(next.contains("$skiptoken="), "{next}");
            url = next.to_owned();
        } else {
            let delta = page["@odata.deltaLink"]
                .as_str()
                .expect("a deltaLink ends the round");
            assert!(delta.contains("$deltatoken="), "{delta}");
            return (items, delta.to_owned());
        }
    }
}

fn timed(subject: &str, start: &str, end: &str) -> Value {
    json!({
        "subject": subject,
        "body": {"contentType": "text", "content": format!("About {subject}")},
        "start": {"dateTime": start, "timeZone": "UTC"},
        "end": {"dateTime": end, "timeZone": "UTC"},
    })
}

fn delta_url(graph: &GraphApi, calendar: &str) -> String {
    format!(
        "{}/me/calendars/{calendar}/calendarView/delta?startDateTime=2026-12-01T00:00:00Z&endDateTime=2026-12-31T00:00:00Z",
        graph.graph_url()
    )
}

#[tokio::test]
async fn code_exchange_refresh_rotation_and_identity_errors() {
    let graph = GraphApi::start().await;
    let mut settings = test_settings();
    graph.configure(&mut settings);
    assert_eq!(settings.microsoft.token_url, graph.token_url());
    assert!(settings.federation.allow_private_hosts);

    let user = graph.add_user("ada@example.com", "Ada Lovelace");
    let denied = graph.deny(&authorization_url(&graph, SCOPES));
    assert_eq!(
        query_param(&denied, "error").as_deref(),
        Some("access_denied")
    );
    assert_eq!(query_param(&denied, "state").as_deref(), Some("state-1"));

    let redirect = graph.consent(&authorization_url(&graph, SCOPES), &user);
    assert!(redirect.starts_with(REDIRECT_URI), "{redirect}");
    assert_eq!(query_param(&redirect, "state").as_deref(), Some("state-1"));
    let code = query_param(&redirect, "code").unwrap();
    let (status, tokens) = redeem(&graph, &code).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 3599);
    let id_token = tokens["id_token"].as_str().unwrap();
    let claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(id_token.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["aud"], MICROSOFT_CLIENT_ID);
    assert_eq!(claims["oid"], user.oid.as_str());
    assert_eq!(claims["sub"], user.sub.as_str());
    assert_eq!(claims["email"], "ada@example.com");
    assert_eq!(
        claims["iss"],
        format!("https://login.microsoftonline.com/{}/v2.0", user.tid)
    );
    assert!(claims.get("email_verified").is_none());

    let (status, again) = redeem(&graph, &code).await;
    assert_eq!(
        (status, again["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    assert!(
        again["error_description"]
            .as_str()
            .unwrap()
            .starts_with("AADSTS54005:")
    );

    let first_refresh = tokens["refresh_token"].as_str().unwrap();
    let (status, rotated) =
        refresh(&graph, first_refresh, "offline_access Calendars.ReadWrite").await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    assert_ne!(rotated["refresh_token"], tokens["refresh_token"]);
    assert_ne!(rotated["access_token"], tokens["access_token"]);
    let (status, _) = refresh(&graph, first_refresh, "offline_access Calendars.ReadWrite").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the old refresh token is not revoked"
    );
    let (status, commas) =
        refresh(&graph, first_refresh, "offline_access,Calendars.ReadWrite").await;
    assert_eq!(
        (status, commas["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_scope"))
    );

    graph.expire_refresh_tokens(&user);
    let (status, expired) =
        refresh(&graph, first_refresh, "offline_access Calendars.ReadWrite").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(expired["error"], "invalid_grant");
    assert_eq!(expired["error_codes"], json!([700082]));
    for field in ["timestamp", "trace_id", "correlation_id", "error_uri"] {
        assert!(expired[field].is_string(), "{field} in {expired}");
    }

    let without_offline = graph.consent(
        &authorization_url(&graph, "openid Calendars.ReadWrite"),
        &user,
    );
    graph.expire_authorization_codes();
    let (status, old) = redeem(&graph, &query_param(&without_offline, "code").unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        old["error_description"]
            .as_str()
            .unwrap()
            .starts_with("AADSTS70008:")
    );
    let fresh = graph.consent(
        &authorization_url(&graph, "openid Calendars.ReadWrite"),
        &user,
    );
    let (status, no_refresh) = redeem(&graph, &query_param(&fresh, "code").unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        no_refresh.get("refresh_token").is_none(),
        "no offline_access, no refresh token"
    );
    assert!(
        graph
            .token_requests()
            .iter()
            .all(|r| r["client_id"] == MICROSOFT_CLIENT_ID)
    );
}

#[tokio::test]
async fn delta_pages_then_returns_changes_removals_and_expanded_series() {
    let graph = GraphApi::start().await;
    let (user, token) = linked(&graph).await;
    let calendar = user.default_calendar.clone();
    let kept = graph.insert_event(
        &calendar,
        timed("Kept", "2026-12-02T09:00:00", "2026-12-02T10:00:00"),
    );
    let edited = graph.insert_event(
        &calendar,
        timed("Edited", "2026-12-03T09:00:00", "2026-12-03T10:00:00"),
    );
    let deleted = graph.insert_event(
        &calendar,
        timed("Deleted", "2026-12-04T09:00:00", "2026-12-04T10:00:00"),
    );
    let moved = graph.insert_event(
        &calendar,
        timed("Moved", "2026-12-05T09:00:00", "2026-12-05T10:00:00"),
    );
    let mut series = timed("Standup", "2026-12-07T08:00:00", "2026-12-07T08:15:00");
    series["recurrence"] = json!({
        "pattern": {"type": "weekly", "interval": 1, "daysOfWeek": ["monday", "wednesday"]},
        "range": {"type": "numbered", "startDate": "2026-12-07", "numberOfOccurrences": 4},
    });
    let master = graph.insert_series(&calendar, series);
    let master_id = master["id"].as_str().unwrap();
    let window = (
        Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap(),
        Utc.with_ymd_and_hms(2026, 12, 31, 0, 0, 0).unwrap(),
    );
    assert_eq!(graph.occurrences(master_id, window).len(), 4);
    assert_eq!(graph.events(&calendar).len(), 5);

    graph.empty_first_pages(true);
    let (items, delta_link) = delta_round(&delta_url(&graph, &calendar), &token, 3).await;
    assert_eq!(
        items.len(),
        8,
        "4 singles and 4 occurrences, not the master: {items:#?}"
    );
    let occurrence = items.iter().find(|i| i["type"] == "occurrence").unwrap();
    assert_eq!(occurrence["seriesMasterId"], master_id);
    assert!(
        occurrence.get("subject").is_none(),
        "occurrences in delta are short"
    );
    assert!(
        occurrence["@odata.etag"]
            .as_str()
            .unwrap()
            .starts_with("W/\"")
    );
    assert_eq!(
        occurrence["start"]["dateTime"],
        "2026-12-07T08:00:00.0000000"
    );
    let single = items.iter().find(|i| i["id"] == kept["id"]).unwrap();
    assert_eq!(single["subject"], "Kept");
    assert_eq!(
        single["body"],
        json!({"contentType": "text", "content": "About Kept"})
    );
    assert!(!items.iter().any(|i| i["id"] == master["id"]));
    let request = graph
        .wait_for_request("a delta page with a page size", |r| {
            r.path.ends_with("/delta") && r.prefer.iter().any(|p| p == "odata.maxpagesize=3")
        })
        .await;
    assert!(
        request
            .prefer
            .contains(&"IdType=\"ImmutableId\"".to_owned()),
        "{:?}",
        request.prefer
    );
    graph.empty_first_pages(false);

    let (status, _, refused) = call(
        reqwest::Method::GET,
        &format!("{}&$select=subject", delta_url(&graph, &calendar)),
        &token,
        &[],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");

    graph.update_event(
        edited["id"].as_str().unwrap(),
        json!({"subject": "Edited twice"}),
    );
    graph.delete_event(deleted["id"].as_str().unwrap());
    graph.update_event(
        moved["id"].as_str().unwrap(),
        json!({"start": {"dateTime": "2027-02-01T09:00:00", "timeZone": "UTC"},
               "end": {"dateTime": "2027-02-01T10:00:00", "timeZone": "UTC"}}),
    );
    let (changes, next_link) = delta_round(&delta_link, &token, 50).await;
    assert_eq!(changes.len(), 3, "{changes:#?}");
    let changed = changes.iter().find(|i| i["id"] == edited["id"]).unwrap();
    assert_eq!(changed["subject"], "Edited twice");
    assert_ne!(changed["changeKey"], edited["changeKey"]);
    for gone in [&deleted, &moved] {
        let item = changes.iter().find(|i| i["id"] == gone["id"]).unwrap();
        assert_eq!(item["@removed"], json!({"reason": "deleted"}));
        assert_eq!(item["@odata.type"], "#microsoft.graph.event");
    }

    let occurrences = graph.occurrences(master_id, window);
    let occurrence_url = |at: usize| {
        format!(
            "{}/me/events/{}",
            graph.graph_url(),
            occurrences[at]["id"].as_str().unwrap()
        )
    };
    let (status, _, exception) = call(
        reqwest::Method::PATCH,
        &occurrence_url(1),
        &token,
        &[],
        Some(json!({"subject": "Standup, later", "location": {"displayName": "Room 2"}})),
    )
    .await;
    assert_eq!(
        (status, exception["type"].as_str()),
        (StatusCode::OK, Some("exception"))
    );
    let (status, _, _) = call(
        reqwest::Method::DELETE,
        &occurrence_url(2),
        &token,
        &[],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (series_changes, last_link) = delta_round(&next_link, &token, 50).await;
    assert_eq!(series_changes.len(), 2, "{series_changes:#?}");
    assert_eq!(series_changes[0]["subject"], "Standup, later");
    assert_eq!(series_changes[0]["location"]["displayName"], "Room 2");
    assert_eq!(series_changes[1]["id"], occurrences[2]["id"]);
    assert!(series_changes[1].get("@removed").is_some());

    graph.replay_next_round();
    let (replayed, _) = delta_round(&last_link, &token, 50).await;
    assert_eq!(
        replayed.len(),
        5,
        "a replay repeats what is still in the window"
    );
}

#[tokio::test]
async fn expired_delta_tokens_answer_410_with_location_or_sync_state_not_found() {
    let graph = GraphApi::start().await;
    let (user, token) = linked(&graph).await;
    let (_, delta_link) = delta_round(&delta_url(&graph, &user.default_calendar), &token, 5).await;

    graph.expire_delta_tokens(Reset::Gone);
    let (status, headers, body) = call(reqwest::Method::GET, &delta_link, &token, &[], None).await;
    assert_eq!(status, StatusCode::GONE);
    assert_eq!(body["error"]["code"], "SyncStateNotFound");
    let location = headers["location"].to_str().unwrap();
    assert!(location.ends_with("$deltatoken="), "{location}");
    assert_eq!(
        query_param(location, "startDateTime").as_deref(),
        Some("2026-12-01T00:00:00Z")
    );
    let (_, fresh_link) = delta_round(location, &token, 5).await;

    graph.expire_delta_tokens(Reset::SyncStateNotFound);
    let (status, headers, body) = call(reqwest::Method::GET, &fresh_link, &token, &[], None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "syncStateNotFound");
    assert!(headers.get("location").is_none());
}

#[tokio::test]
async fn writes_check_if_match_times_and_transaction_ids() {
    let graph = GraphApi::start().await;
    let (user, token) = linked(&graph).await;
    let events_url = format!(
        "{}/me/calendars/{}/events",
        graph.graph_url(),
        user.default_calendar
    );
    let mut body = json!({
        "subject": "Review",
        "start": {"dateTime": "2026-12-01T09:00:00.00", "timeZone": "W. Europe Standard Time"},
        "end": {"dateTime": "2026-12-01T10:00:00", "timeZone": "Europe/Berlin"},
        "transactionId": "tx-1",
    });
    let (status, _, created) = call(
        reqwest::Method::POST,
        &events_url,
        &token,
        &[],
        Some(body.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(
        created["start"],
        json!({"dateTime": "2026-12-01T08:00:00.0000000", "timeZone": "UTC"})
    );
    assert_eq!(created["originalStartTimeZone"], "W. Europe Standard Time");
    let (status, _, repeated) = call(
        reqwest::Method::POST,
        &events_url,
        &token,
        &[],
        Some(body.clone()),
    )
    .await;
    assert_eq!(
        (status, &repeated["id"]),
        (StatusCode::CREATED, &created["id"])
    );

    body["isAllDay"] = json!(true);
    body["transactionId"] = json!("tx-2");
    let (status, _, refused) =
        call(reqwest::Method::POST, &events_url, &token, &[], Some(body)).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("ErrorInvalidRequest"))
    );

    let event_url = format!(
        "{}/me/events/{}",
        graph.graph_url(),
        created["id"].as_str().unwrap()
    );
    let etag = created["@odata.etag"].as_str().unwrap().to_owned();
    let (status, _, in_la) = call(
        reqwest::Method::GET,
        &event_url,
        &token,
        &[("Prefer", "outlook.timezone=\"Pacific Standard Time\"")],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        in_la["start"],
        json!({"dateTime": "2026-12-01T00:00:00.0000000", "timeZone": "Pacific Standard Time"})
    );

    graph.update_event(
        created["id"].as_str().unwrap(),
        json!({"subject": "Moved in Outlook"}),
    );
    let (status, _, conflict) = call(
        reqwest::Method::PATCH,
        &event_url,
        &token,
        &[("If-Match", &etag)],
        Some(json!({"subject": "Mine"})),
    )
    .await;
    assert_eq!(
        (status, conflict["error"]["code"].as_str()),
        (
            StatusCode::PRECONDITION_FAILED,
            Some("ErrorIrresolvableConflict")
        )
    );
    graph.conflict_status(409);
    let (status, _, _) = call(
        reqwest::Method::DELETE,
        &event_url,
        &token,
        &[("If-Match", &etag)],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);

    let current = graph.event(created["id"].as_str().unwrap()).unwrap();
    let current_etag = current["@odata.etag"].as_str().unwrap();
    let (status, _, patched) = call(
        reqwest::Method::PATCH,
        &event_url,
        &token,
        &[("If-Match", current_etag)],
        Some(json!({"subject": "Mine"})),
    )
    .await;
    assert_eq!(
        (status, patched["subject"].as_str()),
        (StatusCode::OK, Some("Mine"))
    );
    assert_ne!(patched["changeKey"], current["changeKey"]);
    let sent = graph
        .wait_for_request("the conditional PATCH", |r| {
            r.method == "PATCH" && r.if_match.as_deref() == Some(current_etag)
        })
        .await;
    assert_eq!(sent.body, Some(json!({"subject": "Mine"})));
    assert!(sent.query.is_empty());
    let (status, _, _) = call(reqwest::Method::DELETE, &event_url, &token, &[], None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _, gone) = call(reqwest::Method::DELETE, &event_url, &token, &[], None).await;
    assert_eq!(
        (status, gone["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("ErrorItemNotFound"))
    );

    let shared = graph.add_calendar(&user, "Team", false);
    assert_eq!(graph.calendar(&shared).unwrap()["canEdit"], false);
    let (status, _, _) = call(
        reqwest::Method::POST,
        &format!("{}/me/calendars/{shared}/events", graph.graph_url()),
        &token,
        &[],
        Some(timed("No", "2026-12-01T09:00:00", "2026-12-01T10:00:00")),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    graph.remove_calendar(&shared);
    let (status, _, calendars) = call(
        reqwest::Method::GET,
        &format!("{}/me/calendars", graph.graph_url()),
        &token,
        &[],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(calendars["value"].as_array().unwrap().len(), 1);

    let calendars_url = format!("{}/me/calendars", graph.graph_url());
    let team = Some(json!({"name": "Team", "color": "lightBlue"}));
    let (status, _, created) = call(
        reqwest::Method::POST,
        &calendars_url,
        &token,
        &[],
        team.clone(),
    )
    .await;
    assert_eq!(
        (status, created["hexColor"].is_string()),
        (StatusCode::CREATED, true)
    );
    let (status, _, _) = call(reqwest::Method::POST, &calendars_url, &token, &[], team).await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "a second calendar of the same name"
    );
    for n in 0..10 {
        graph.add_calendar(&user, &format!("Extra {n}"), true);
    }
    let (_, _, first) = call(reqwest::Method::GET, &calendars_url, &token, &[], None).await;
    assert_eq!(first["value"].as_array().unwrap().len(), 10);
    let next = first["@odata.nextLink"].as_str().unwrap();
    let (_, _, second) = call(reqwest::Method::GET, next, &token, &[], None).await;
    assert_eq!(second["value"].as_array().unwrap().len(), 2);
    assert!(second.get("@odata.nextLink").is_none());
    let default_url = format!("{calendars_url}/{}", user.default_calendar);
    let (status, _, _) = call(reqwest::Method::DELETE, &default_url, &token, &[], None).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "the default calendar stays"
    );
}

#[tokio::test]
async fn throttling_failures_and_expired_access_tokens() {
    let graph = GraphApi::start().await;
    graph.set_access_token_lifetime(60);
    let (_, token) = linked(&graph).await;
    let calendars = format!("{}/me/calendars", graph.graph_url());

    graph.rate_limit(1, 7);
    let (status, headers, body) = call(reqwest::Method::GET, &calendars, &token, &[], None).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "7");
    assert_eq!(body["error"]["code"], "TooManyRequests");
    assert!(body["error"]["innerError"]["request-id"].is_string());

    graph.fail_next(1, 503);
    let (status, _, _) = call(reqwest::Method::GET, &calendars, &token, &[], None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let (status, _, _) = call(reqwest::Method::GET, &calendars, &token, &[], None).await;
    assert_eq!(status, StatusCode::OK);

    graph.expire_access_tokens();
    let (status, _, body) = call(reqwest::Method::GET, &calendars, &token, &[], None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["code"], "InvalidAuthenticationToken");
    assert_eq!(graph.requests().len(), 4);
}
