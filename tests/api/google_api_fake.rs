//! The Google fake itself (`support::google_api`), exercised with plain HTTP calls as
//! Bowline will make them: the authorization code with PKCE (single use, verifier checked),
//! refresh without a new refresh token and `invalid_grant` once revoked, events listed in
//! pages with a sync token on the last page only, incremental lists with tombstones, 410 on
//! an expired token (also mid-pagination), conditional writes (412), deletes (204, then
//! 410), duplicate ids (409), series with a cancelled instance, the calendarList, and the
//! faults (429 with Retry-After, 503, 401).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::helpers::init;
use crate::support::google_api::{
    GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, GoogleApi, GoogleUser, RateLimit,
};

const REDIRECT_URI: &str = "http://127.0.0.1:9/api/google/callback";
const SCOPES: &str = "openid email https://www.googleapis.com/auth/calendar";
const VERIFIER: &str = "a-pkce-verifier-that-is-long-enough-0123456789-abcdefghij";

/// Percent-encodes one path segment (calendar ids hold `@` and `#`).
fn segment(id: &str) -> String {
    percent_encoding::utf8_percent_encode(id, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The authorization URL Bowline builds, with `VERIFIER`'s S256 challenge.
fn authorization_url(google: &GoogleApi, state: &str) -> String {
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(VERIFIER.as_bytes()));
    let mut url = url::Url::parse(&google.authorization_url()).unwrap();
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", GOOGLE_CLIENT_ID)
        .append_pair("redirect_uri", REDIRECT_URI)
        .append_pair("scope", SCOPES)
        .append_pair("state", state)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("access_type", "offline")
        .append_pair("prompt", "consent")
        .append_pair("include_granted_scopes", "true");
    url.into()
}

fn query_param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn form_body(form: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish()
}

async fn token_request(google: &GoogleApi, form: &[(&str, &str)]) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(google.token_url())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(form))
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

async fn exchange(google: &GoogleApi, code: &str, verifier: &str) -> (StatusCode, Value) {
    token_request(
        google,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT_URI),
            ("client_id", GOOGLE_CLIENT_ID),
            ("client_secret", GOOGLE_CLIENT_SECRET),
            ("code_verifier", verifier),
        ],
    )
    .await
}

/// A user who linked Google: their account and the token answer.
async fn linked(google: &GoogleApi) -> (GoogleUser, Value) {
    let user = google.add_user("grace@example.com", "Grace Hopper");
    let back = google.consent(&authorization_url(google, "st"), &user);
    let code = query_param(&back, "code").unwrap();
    let (status, tokens) = exchange(google, &code, VERIFIER).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    (user, tokens)
}

/// A Calendar API client with an access token.
struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    fn new(google: &GoogleApi, tokens: &Value) -> Self {
        Self {
            http: reqwest::Client::new(),
            base: google.calendar_api_url(),
            token: tokens["access_token"].as_str().unwrap().to_owned(),
        }
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (StatusCode, reqwest::header::HeaderMap, Value) {
        let mut request = self
            .http
            .request(method, format!("{}/{path}", self.base))
            .bearer_auth(&self.token);
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
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap()
        };
        (status, headers, body)
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let (status, _, body) = self.call(Method::GET, path, &[], None).await;
        (status, body)
    }

    /// Every page of a list: the items and the final `nextSyncToken`, asserting that only
    /// the last page carries it.
    async fn all_pages(&self, path: &str) -> (Vec<Value>, String, usize) {
        let mut items = Vec::new();
        let mut page_token: Option<String> = None;
        let mut pages = 0;
        loop {
            let separator = if path.contains('?') { '&' } else { '?' };
            let url = match &page_token {
                Some(token) => format!("{path}{separator}pageToken={}", segment(token)),
                None => path.to_owned(),
            };
            let (status, body) = self.get(&url).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            pages += 1;
            items.extend(body["items"].as_array().unwrap().iter().cloned());
            match (body.get("nextPageToken"), body.get("nextSyncToken")) {
                (Some(next), None) => page_token = Some(next.as_str().unwrap().to_owned()),
                (None, Some(sync)) => return (items, sync.as_str().unwrap().to_owned(), pages),
                _ => panic!("exactly one of nextPageToken and nextSyncToken: {body}"),
            }
        }
    }
}

fn timed(summary: &str, hour: u32) -> Value {
    json!({
        "summary": summary,
        "start": {"dateTime": format!("2026-03-02T{hour:02}:00:00Z")},
        "end": {"dateTime": format!("2026-03-02T{hour:02}:30:00Z")},
    })
}

#[tokio::test]
async fn the_code_exchange_checks_pkce_and_the_code_is_single_use() {
    init();
    let google = GoogleApi::start().await;
    let user = google.add_user("ada@example.com", "Ada Lovelace");
    let url = authorization_url(&google, "state-1");
    let back = google.consent(&url, &user);
    assert!(back.starts_with(REDIRECT_URI), "{back}");
    assert_eq!(query_param(&back, "state").as_deref(), Some("state-1"));
    assert_eq!(query_param(&back, "scope").as_deref(), Some(SCOPES));
    let code = query_param(&back, "code").unwrap();
    let denied = google.deny(&url);
    assert_eq!(
        query_param(&denied, "error").as_deref(),
        Some("access_denied")
    );

    let wrong = "another-verifier-that-is-long-enough-0123456789-abcdefghij";
    let (status, body) = exchange(&google, &code, wrong).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "invalid_grant");
    let (status, body) = token_request(
        &google,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT_URI),
            ("client_id", GOOGLE_CLIENT_ID),
            ("client_secret", "not-the-secret"),
            ("code_verifier", VERIFIER),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"], "invalid_client");

    let (status, tokens) = exchange(&google, &code, VERIFIER).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 3599);
    assert_eq!(tokens["scope"], SCOPES);
    assert!(tokens["refresh_token"].is_string());
    let payload = tokens["id_token"]
        .as_str()
        .unwrap()
        .split('.')
        .nth(1)
        .unwrap();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    assert_eq!(claims["iss"], "https://accounts.google.com");
    assert_eq!(claims["aud"], GOOGLE_CLIENT_ID);
    assert_eq!(claims["sub"], user.sub.as_str());
    assert_eq!(claims["email"], "ada@example.com");
    assert_eq!(claims["email_verified"], true);

    let (status, body) = exchange(&google, &code, VERIFIER).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a code works once");
    assert_eq!(body["error"], "invalid_grant");
    let grants: Vec<Value> = google
        .token_requests()
        .iter()
        .map(|form| form["grant_type"].clone())
        .collect();
    assert_eq!(grants.len(), 4);
}

#[tokio::test]
async fn refresh_keeps_the_refresh_token_until_the_grant_is_revoked() {
    init();
    let google = GoogleApi::start().await;
    let (user, tokens) = linked(&google).await;
    let refresh_token = tokens["refresh_token"].as_str().unwrap();
    let refresh = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("client_id", GOOGLE_CLIENT_ID),
        ("client_secret", GOOGLE_CLIENT_SECRET),
    ];
    let (status, refreshed) = token_request(&google, &refresh).await;
    assert_eq!(status, StatusCode::OK, "{refreshed}");
    assert!(refreshed.get("refresh_token").is_none(), "{refreshed}");
    assert_ne!(refreshed["access_token"], tokens["access_token"]);
    let api = Api::new(&google, &refreshed);
    assert_eq!(api.get("users/me/calendarList").await.0, StatusCode::OK);

    google.revoke_refresh_tokens(&user);
    let (status, body) = token_request(&google, &refresh).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        json!({"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
    );
    let (status, body) = api.get("users/me/calendarList").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["errors"][0]["reason"], "authError");

    let response = reqwest::Client::new()
        .post(google.revocation_url())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&[("token", refresh_token)]))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(google.revoked_tokens(), vec![refresh_token.to_owned()]);
}

#[tokio::test]
async fn events_come_in_pages_then_incrementally_with_tombstones_and_410() {
    init();
    let google = GoogleApi::start().await;
    let (user, tokens) = linked(&google).await;
    let api = Api::new(&google, &tokens);
    google.set_page_size(2);
    let ids: Vec<String> = (0..5)
        .map(|i| {
            let event = google.insert_event(&user.email, timed(&format!("E{i}"), 8 + i));
            event["id"].as_str().unwrap().to_owned()
        })
        .collect();
    let events = format!("calendars/{}/events?maxResults=250", segment(&user.email));
    let (items, sync, pages) = api.all_pages(&events).await;
    assert_eq!(pages, 3);
    let listed: Vec<&str> = items.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(listed, ids);
    assert!(
        items
            .iter()
            .all(|e| e["etag"].as_str().unwrap().starts_with('"'))
    );

    google.update_event(&user.email, &ids[1], json!({"summary": "moved"}));
    google.delete_event(&user.email, &ids[3]);
    let incremental = format!("{events}&syncToken={}", segment(&sync));
    let (changed, sync2, _) = api.all_pages(&incremental).await;
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert_eq!(changed[0]["summary"], "moved");
    let tombstone = changed[1].as_object().unwrap();
    assert_eq!(tombstone["status"], "cancelled");
    let mut keys: Vec<&str> = tombstone.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["etag", "id", "kind", "status"]);
    let (status, unchanged) = api
        .get(&format!("{events}&syncToken={}", segment(&sync2)))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(unchanged["items"], json!([]));
    assert!(unchanged["nextSyncToken"].is_string());

    let (status, body) = api
        .get(&format!("{incremental}&timeMin=2026-01-01T00:00:00Z"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["error"]["errors"][0]["reason"],
        "syncTokenWithRequestRestrictions"
    );

    // Mid-pagination: one page, then 410 (and the token is dead).
    for (i, id) in ids.iter().take(3).enumerate() {
        google.update_event(&user.email, id, json!({"summary": format!("again {i}")}));
    }
    google.expire_sync_tokens_after_pages(1);
    let resumed = format!("{events}&syncToken={}", segment(&sync2));
    let (status, first) = api.get(&resumed).await;
    assert_eq!(status, StatusCode::OK);
    let next = first["nextPageToken"].as_str().unwrap();
    let (status, gone) = api
        .get(&format!("{resumed}&pageToken={}", segment(next)))
        .await;
    assert_eq!(status, StatusCode::GONE);
    assert_eq!(
        gone,
        json!({"error": {
            "code": 410,
            "message": "Sync token is no longer valid, a full sync is required.",
            "errors": [{
                "domain": "calendar",
                "reason": "fullSyncRequired",
                "message": "Sync token is no longer valid, a full sync is required.",
                "locationType": "parameter",
                "location": "syncToken",
            }],
        }})
    );
    assert_eq!(api.get(&resumed).await.0, StatusCode::GONE);
    let (items, sync3, _) = api.all_pages(&events).await;
    assert_eq!(items.len(), 4, "the full list leaves the deleted event out");
    google.expire_sync_tokens();
    let (status, _) = api
        .get(&format!("{events}&syncToken={}", segment(&sync3)))
        .await;
    assert_eq!(status, StatusCode::GONE);
}

#[tokio::test]
async fn writes_check_ids_etags_and_deleted_events_keep_their_id() {
    init();
    let google = GoogleApi::start().await;
    let (user, tokens) = linked(&google).await;
    let api = Api::new(&google, &tokens);
    let events = format!("calendars/{}/events", segment("primary"));
    let mut body = timed("Chosen id", 9);
    body["id"] = json!("b0a1e0123456789");
    let (status, _, created) = api
        .call(Method::POST, &events, &[], Some(body.clone()))
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    assert_eq!(created["iCalUID"], "b0a1e0123456789@google.com");
    assert_eq!(created["sequence"], 0);
    let (status, _, duplicate) = api
        .call(Method::POST, &events, &[], Some(body.clone()))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(duplicate["error"]["errors"][0]["reason"], "duplicate");
    let mut bad = body.clone();
    bad["id"] = json!("Not_Base32Hex");
    let (status, _, error) = api.call(Method::POST, &events, &[], Some(bad)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error["error"]["errors"][0]["reason"], "invalidResourceId");
    let series = json!({
        "start": {"dateTime": "2026-03-02T09:00:00+01:00"},
        "end": {"dateTime": "2026-03-02T10:00:00+01:00"},
        "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=3"],
    });
    let (status, _, _) = api.call(Method::POST, &events, &[], Some(series)).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a series needs its time zone"
    );

    let event = format!("{events}/b0a1e0123456789");
    let etag = created["etag"].as_str().unwrap();
    google.update_event(&user.email, "b0a1e0123456789", json!({"summary": "remote"}));
    let patch = Some(json!({"summary": "local"}));
    let (status, _, _) = api
        .call(Method::PATCH, &event, &[("If-Match", etag)], patch.clone())
        .await;
    assert_eq!(status, StatusCode::PRECONDITION_FAILED);
    let current = google.event(&user.email, "b0a1e0123456789").unwrap();
    let current_etag = current["etag"].as_str().unwrap();
    let (status, _, patched) = api
        .call(Method::PATCH, &event, &[("If-Match", current_etag)], patch)
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_ne!(patched["etag"], current["etag"]);
    let (status, _, _) = api
        .call(
            Method::GET,
            &event,
            &[("If-None-Match", patched["etag"].as_str().unwrap())],
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);

    let (status, _, _) = api
        .call(Method::DELETE, &event, &[("If-Match", current_etag)], None)
        .await;
    assert_eq!(status, StatusCode::PRECONDITION_FAILED);
    let (status, _, _) = api.call(Method::DELETE, &event, &[], None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _, deleted) = api.call(Method::DELETE, &event, &[], None).await;
    assert_eq!(status, StatusCode::GONE);
    assert_eq!(deleted["error"]["errors"][0]["reason"], "deleted");
    let (status, _, got) = api.call(Method::GET, &event, &[], None).await;
    assert_eq!(
        (status, got["status"].as_str()),
        (StatusCode::OK, Some("cancelled"))
    );
    let (status, _, _) = api.call(Method::POST, &events, &[], Some(body)).await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "a deleted event's id stays taken"
    );
    let recorded = google
        .wait_for_request("the DELETE", |r| r.method == "DELETE" && r.status == 204)
        .await;
    assert!(recorded.path.ends_with("/events/b0a1e0123456789"));
}

#[tokio::test]
async fn a_series_lists_its_cancelled_instance_and_expands_with_single_events() {
    init();
    let google = GoogleApi::start().await;
    let (user, tokens) = linked(&google).await;
    let api = Api::new(&google, &tokens);
    let master = google.insert_event(
        &user.email,
        json!({
            "summary": "Standup",
            "start": {"dateTime": "2026-03-02T09:00:00+01:00", "timeZone": "Europe/Berlin"},
            "end": {"dateTime": "2026-03-02T09:15:00+01:00", "timeZone": "Europe/Berlin"},
            "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=4"],
        }),
    );
    let master_id = master["id"].as_str().unwrap();
    let cancelled = google.cancel_instance(
        &user.email,
        master_id,
        json!({"dateTime": "2026-03-09T09:00:00+01:00", "timeZone": "Europe/Berlin"}),
    );
    assert_eq!(cancelled, format!("{master_id}_20260309T080000Z"));
    let moved = google.edit_instance(
        &user.email,
        master_id,
        json!({"dateTime": "2026-03-16T09:00:00+01:00", "timeZone": "Europe/Berlin"}),
        json!({"summary": "Standup (late)"}),
    );
    assert_eq!(moved["recurringEventId"], master_id);

    let events = format!("calendars/{}/events", segment(&user.email));
    let (items, _, _) = api.all_pages(&events).await;
    assert_eq!(
        items.len(),
        3,
        "master, cancelled instance, exception: {items:#?}"
    );
    assert_eq!(items[1]["status"], "cancelled");
    assert_eq!(items[1]["recurringEventId"], master_id);
    assert_eq!(
        items[1]["originalStartTime"],
        json!({"dateTime": "2026-03-09T09:00:00+01:00", "timeZone": "Europe/Berlin"})
    );
    let (instances, _, _) = api.all_pages(&format!("{events}?singleEvents=true")).await;
    let summaries: Vec<&str> = instances
        .iter()
        .map(|e| e["summary"].as_str().unwrap())
        .collect();
    assert_eq!(summaries, ["Standup", "Standup (late)", "Standup"]);
    let (status, by_uid) = api
        .get(&format!(
            "{events}?iCalUID={}",
            segment(master["iCalUID"].as_str().unwrap())
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(by_uid["items"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn the_calendar_list_pages_syncs_and_keeps_the_primary() {
    init();
    let google = GoogleApi::start().await;
    let (user, tokens) = linked(&google).await;
    let api = Api::new(&google, &tokens);
    google.add_calendar(&user, "Team", "writer");
    google.set_page_size(1);
    let (entries, sync, pages) = api.all_pages("users/me/calendarList").await;
    assert_eq!(pages, 2);
    assert_eq!(entries[0]["primary"], true);
    assert_eq!(entries[0]["accessRole"], "owner");
    assert_eq!(entries[1]["accessRole"], "writer");
    assert!(entries[1].get("primary").is_none());

    let (status, _, created) = api
        .call(
            Method::POST,
            "calendars",
            &[],
            Some(json!({"summary": "Bowline"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let id = created["id"].as_str().unwrap();
    assert!(id.ends_with("@group.calendar.google.com"), "{id}");
    let entry = format!("users/me/calendarList/{}", segment(id));
    let colors = Some(json!({"backgroundColor": "#112233", "foregroundColor": "#ffffff"}));
    let (status, _, _) = api.call(Method::PATCH, &entry, &[], colors.clone()).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "colors need colorRgbFormat=true"
    );
    let (status, _, patched) = api
        .call(
            Method::PATCH,
            &format!("{entry}?colorRgbFormat=true"),
            &[],
            colors,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(patched["backgroundColor"], "#112233");
    let (status, _, primary) = api
        .call(
            Method::DELETE,
            &format!("calendars/{}", segment(&user.email)),
            &[],
            None,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        primary["error"]["errors"][0]["reason"],
        "cannotDeletePrimaryCalendar"
    );
    let (status, _, _) = api
        .call(
            Method::DELETE,
            &format!("calendars/{}", segment(id)),
            &[],
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    let (changes, _, _) = api
        .all_pages(&format!(
            "users/me/calendarList?syncToken={}",
            segment(&sync)
        ))
        .await;
    assert_eq!(changes.len(), 1, "{changes:#?}");
    assert_eq!(changes[0]["id"], id);
    assert_eq!(changes[0]["deleted"], true);
}

#[tokio::test]
async fn rate_limits_failures_and_expired_access_tokens_answer_as_google() {
    init();
    let google = GoogleApi::start().await;
    let (_, tokens) = linked(&google).await;
    let api = Api::new(&google, &tokens);
    google.rate_limit(1, 7, RateLimit::TooManyRequests);
    let (status, headers, body) = api
        .call(Method::GET, "users/me/calendarList", &[], None)
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "7");
    assert_eq!(body["error"]["errors"][0]["reason"], "rateLimitExceeded");
    google.rate_limit(1, 2, RateLimit::UserRateLimitExceeded);
    let (status, headers, body) = api
        .call(Method::GET, "users/me/calendarList", &[], None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(headers["retry-after"], "2");
    assert_eq!(
        body["error"]["errors"][0]["reason"],
        "userRateLimitExceeded"
    );
    google.fail_next(1, 503);
    let (status, body) = api.get("users/me/calendarList").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["error"]["errors"][0]["reason"], "backendError");
    assert_eq!(api.get("users/me/calendarList").await.0, StatusCode::OK);
    google.expire_access_tokens();
    let (status, body) = api.get("users/me/calendarList").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["errors"][0]["message"], "Invalid Credentials");
    let statuses: Vec<u16> = google.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [429, 403, 503, 200, 401]);
}
