//! Google Calendar mirrors end to end against the loopback Google: the whole life of a
//! linked account in one test (link-social with PKCE, consent, callback, tokens sealed at
//! rest, the initial sync, a remote change with one `external_sync` frame, a local change
//! delivered with `If-Match`, a racing remote edit resolved as a conflict, a `410` resync,
//! an expired refresh token turning the account `reconnect_required` for its owner only,
//! relinking that delivers the held writes, revocation and disconnection); the failures of
//! a link (better-auth's error codes, nothing stored); the Expo proxy; a user whose only
//! sign-in is Google, who links calendars and keeps the sign-in when disconnecting; two
//! Google accounts of one user failing separately; a token endpoint outage; extra scopes;
//! and Google left off without the key that seals tokens.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::helpers::caldav::with_caldav;
use crate::helpers::google::{
    come_back, event_titled, events_in, google_app, google_id, google_mirrors, link, link_social,
    mirror_id, outbox_rows, start_link, stored_google_account, sync_now, titles_in, until_frame,
};
use crate::helpers::{TestApp, TestUser, event_body, eventually, sample, spawn_app_with};
use crate::support::google_api::{GOOGLE_CLIENT_ID, GoogleApi, Recorded};
use crate::support::idp::{IdentityProvider, google_claims};

const CALENDAR_SCOPE: &str = "https://www.googleapis.com/auth/calendar";

async fn google_status(app: &TestApp, user: &TestUser) -> Value {
    let (status, body) = app
        .call(Method::GET, "/api/v1/users/connections/google", user, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    body
}

/// The Calendar API requests of calendar `calendar_id`'s events made after the first
/// `from` requests: `(method, has syncToken, has pageToken, status)`.
fn event_listings(requests: &[Recorded], from: usize, calendar_id: &str) -> Vec<(bool, u16)> {
    let path = format!("/calendar/v3/calendars/{calendar_id}/events");
    requests[from..]
        .iter()
        .filter(|r| r.method == "GET" && r.path == path)
        .map(|r| (r.query_param("syncToken").is_some(), r.status))
        .collect()
}

fn is_event_write(request: &Recorded, method: &str, calendar_id: &str, event_id: &str) -> bool {
    let events = format!("/calendar/v3/calendars/{calendar_id}/events");
    request.method == method
        && match method {
            "POST" => {
                request.path == events && request.body.as_ref().is_some_and(|b| b["id"] == event_id)
            }
            _ => request.path == format!("{events}/{event_id}"),
        }
}

#[tokio::test]
async fn link_sync_write_conflict_reset_reconnect_revoke_and_disconnect() {
    let fake = GoogleApi::start().await;
    let ana_at_google = fake.add_user("ana.work@gmail.com", "Ana Work");
    let primary = ana_at_google.email.clone();
    let work = fake.add_calendar(&ana_at_google, "Work", "owner");
    fake.insert_event(
        &primary,
        json!({"summary": "Planning",
               "start": {"dateTime": "2026-12-03T09:00:00+01:00", "timeZone": "Europe/Berlin"},
               "end": {"dateTime": "2026-12-03T10:00:00+01:00", "timeZone": "Europe/Berlin"}}),
    );
    fake.insert_event(
        &primary,
        json!({"summary": "Offsite", "start": {"date": "2026-12-10"}, "end": {"date": "2026-12-12"}}),
    );
    let review = fake.insert_event(
        &work,
        json!({"summary": "Review",
               "start": {"dateTime": "2026-12-04T14:00:00Z"}, "end": {"dateTime": "2026-12-04T15:00:00Z"}}),
    );

    let app = google_app(&fake).await;
    let info: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
    assert_eq!(info["syncProviders"], json!(["google", "caldav"]));
    let ana = app.sign_up("ana@example.com").await;
    let bob = app.sign_up("bob@example.com").await;
    assert_eq!(
        google_status(&app, &ana).await,
        json!({"isLinked": false, "calendarConnected": false})
    );

    // link-social answers Google's authorization URL and sets the signed state cookie.
    let (status, headers, body) = link_social(
        &app,
        &ana,
        &json!({"provider": "google", "callbackURL": "/linked", "errorCallbackURL": "/failed"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["redirect"], true);
    let url = body["url"].as_str().expect("url").to_owned();
    assert_eq!(headers["location"].to_str().expect("location"), url);
    let set_cookie = headers["set-cookie"].to_str().expect("cookie").to_owned();
    assert!(set_cookie.starts_with("better-auth.state="), "{set_cookie}");
    assert!(set_cookie.contains("Max-Age=300"), "{set_cookie}");
    let cookie = set_cookie.split(';').next().expect("pair").to_owned();
    let parsed = url::Url::parse(&url).expect("URL");
    assert_eq!(
        format!("{}{}", parsed.origin().ascii_serialization(), parsed.path()),
        fake.authorization_url()
    );
    let params: HashMap<String, String> = parsed.query_pairs().into_owned().collect();
    let state_in_cookie = percent_encoding::percent_decode_str(
        cookie.strip_prefix("better-auth.state=").expect("value"),
    )
    .decode_utf8()
    .expect("UTF-8")
    .into_owned();
    let expected = [
        ("response_type", "code"),
        ("client_id", GOOGLE_CLIENT_ID),
        ("scope", &format!("openid email profile {CALENDAR_SCOPE}")),
        ("code_challenge_method", "S256"),
        ("access_type", "offline"),
        ("prompt", "consent"),
        ("include_granted_scopes", "true"),
        ("redirect_uri", &app.url("/api/auth/callback/google")),
        ("state", &state_in_cookie),
    ];
    for (name, value) in expected {
        assert_eq!(params.get(name).map(String::as_str), Some(value), "{name}");
    }
    let challenge = params["code_challenge"].clone();
    assert_eq!(challenge.len(), 43, "a base64url SHA-256");

    // Consent at Google; the browser comes back with the code and the cookie.
    let back = fake.consent(&url, &ana_at_google);
    assert!(
        back.starts_with(&app.url("/api/auth/callback/google?")),
        "{back}"
    );
    assert_eq!(come_back(&back, Some(&cookie)).await, "/linked");
    let exchange = &fake.token_requests()[0];
    assert_eq!(exchange["grant_type"], "authorization_code");
    assert_eq!(
        exchange["redirect_uri"],
        json!(app.url("/api/auth/callback/google"))
    );
    let verifier = exchange["code_verifier"].as_str().expect("verifier");
    assert_eq!(
        URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())),
        challenge,
        "the verifier is the one the challenge was made from"
    );

    // The account is stored with its tokens sealed.
    let stored = stored_google_account(&app).await.expect("account row");
    let access = fake.access_tokens(&ana_at_google);
    let refresh = fake.refresh_tokens(&ana_at_google);
    assert_eq!((access.len(), refresh.len()), (1, 1));
    assert_eq!(stored["accountId"], json!(ana_at_google.sub));
    assert_eq!(stored["label"], json!(primary));
    assert_eq!(
        stored["scope"],
        json!(format!("openid,email,profile,{CALENDAR_SCOPE}"))
    );
    assert_eq!(stored["syncStatus"], Value::Null);
    for (column, plain) in [("accessToken", &access[0]), ("refreshToken", &refresh[0])] {
        let sealed = stored[column].as_str().expect("a stored token");
        assert!(
            !sealed.contains(plain.as_str()),
            "{column} is stored in the clear"
        );
    }
    assert_eq!(
        google_status(&app, &ana).await,
        json!({"isLinked": true, "calendarConnected": true})
    );

    // The initial sync mirrors both calendars and their events.
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    let mirrors = google_mirrors(&app, &ana).await;
    let names: Vec<&str> = mirrors
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Work", primary.as_str()]);
    for mirror in &mirrors {
        assert_eq!(mirror["accountId"], json!(ana_at_google.sub));
        assert_eq!(mirror["accountLabel"], json!(primary));
        assert_eq!(mirror["serverUrl"], Value::Null);
        assert_eq!(mirror["syncStatus"], "active");
        assert_eq!(mirror["syncErrorCode"], Value::Null);
        assert_eq!(mirror["role"], "owner");
    }
    let primary_mirror = mirror_id(&app, &ana, &primary).await;
    let work_mirror = mirror_id(&app, &ana, "Work").await;
    assert_eq!(
        titles_in(&app, &ana, &primary_mirror).await,
        ["Offsite", "Planning"]
    );
    assert_eq!(titles_in(&app, &ana, &work_mirror).await, ["Review"]);
    let planning = event_titled(&app, &ana, "Planning").await;
    assert_eq!(planning["start"], "2026-12-03T08:00:00.000Z");
    assert_eq!(planning["end"], "2026-12-03T09:00:00.000Z");
    let offsite = event_titled(&app, &ana, "Offsite").await;
    assert_eq!(offsite["isAllDay"], true);
    assert_eq!(offsite["start"], "2026-12-10T00:00:00.000Z");
    assert_eq!(offsite["end"], "2026-12-11T00:00:00.000Z", "the last day");

    app.join_with_invite(&ana, &work_mirror, &bob).await;
    let mut stream = app.stream(&ana).await;
    let mut bob_stream = app.stream(&bob).await;

    // A remote change arrives with exactly one frame; a pull that changes nothing sends none
    // (the next frame is the next change's, of the other calendar).
    fake.insert_event(
        &work,
        json!({"summary": "Added at Google",
               "start": {"dateTime": "2026-12-05T10:00:00Z"}, "end": {"dateTime": "2026-12-05T11:00:00Z"}}),
    );
    assert_eq!(sync_now(&app, &ana).await.0, StatusCode::OK);
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "external_sync");
    assert_eq!(frame["payload"]["calendars"], json!([work_mirror]));
    assert_eq!(
        titles_in(&app, &ana, &work_mirror).await,
        ["Added at Google", "Review"]
    );
    assert_eq!(sync_now(&app, &ana).await.0, StatusCode::OK);
    fake.insert_event(
        &primary,
        json!({"summary": "Lunch", "start": {"date": "2026-12-06"}, "end": {"date": "2026-12-07"}}),
    );
    assert_eq!(sync_now(&app, &ana).await.0, StatusCode::OK);
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "external_sync");
    assert_eq!(frame["payload"]["calendars"], json!([primary_mirror]));

    // A local change reaches Google: inserted under the event's own id, then replaced with
    // If-Match.
    let created = app
        .create_event(&ana, &event_body(&[&work_mirror], "Made in Bowline", 9))
        .await;
    assert_eq!(
        created["providerDelivery"],
        json!([{"calendarID": work_mirror, "provider": "google", "action": "put", "state": "pending"}])
    );
    let event_id = created["id"].as_str().expect("id").to_owned();
    let gid = google_id(&event_id);
    let insert = fake
        .wait_for_request("inserting the new event", |r| {
            is_event_write(r, "POST", &work, &gid) && r.status == 200
        })
        .await;
    let sent = insert.body.expect("body");
    assert_eq!(sent["summary"], "Made in Bowline");
    assert_eq!(sent["location"], "Room 1");
    assert_eq!(
        sent["start"],
        json!({"dateTime": "2026-07-23T09:00:00Z", "timeZone": "UTC"})
    );
    assert_eq!(
        sent["end"],
        json!({"dateTime": "2026-07-23T10:00:00Z", "timeZone": "UTC"})
    );
    let inserted = fake.event(&work, &gid).expect("at Google");
    assert_eq!(inserted["summary"], "Made in Bowline");
    let mut update = created.clone();
    update["title"] = json!("Renamed in Bowline");
    let response = app.event_request(Method::PUT, &ana, &update).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.expect("JSON");
    assert_eq!(
        answer["providerDelivery"],
        json!([{"calendarID": work_mirror, "provider": "google", "action": "put", "state": "pending"}])
    );
    let replaced = fake
        .wait_for_request("replacing the event", |r| {
            is_event_write(r, "PUT", &work, &gid) && r.status == 200
        })
        .await;
    assert_eq!(
        replaced.if_match,
        inserted["etag"].as_str().map(str::to_owned)
    );
    assert_eq!(
        fake.event(&work, &gid).expect("at Google")["summary"],
        "Renamed in Bowline"
    );

    // Someone edits it at Google before Bowline pulls; a local edit meets 412: Google's
    // version wins, is applied locally, and the members are told.
    let racing = fake.update_event(&work, &gid, json!({"summary": "Edited at Google"}));
    let mut edit = answer.clone();
    edit["title"] = json!("Edited in Bowline");
    let response = app.event_request(Method::PUT, &ana, &edit).await;
    assert_eq!(response.status(), StatusCode::OK);
    let refused = fake
        .wait_for_request("the conditional write refused", |r| {
            is_event_write(r, "PUT", &work, &gid) && r.status == 412
        })
        .await;
    assert_ne!(refused.if_match.as_deref(), racing["etag"].as_str());
    for stream in [&mut stream, &mut bob_stream] {
        let frame = until_frame(stream, "provider_delivery").await;
        assert_eq!(
            frame["payload"],
            json!({"calendarID": work_mirror, "eventID": event_id, "state": "conflict", "error": null})
        );
        // Google's version, applied here, is announced as a pull's change is.
        let frame = stream.next_frame().await;
        assert_eq!(frame["type"], "external_sync");
        assert_eq!(frame["payload"]["calendars"], json!([work_mirror]));
    }
    eventually("Google's version applied locally", || async {
        events_in(&app, &ana, &work_mirror)
            .await
            .iter()
            .any(|e| e["id"] == json!(event_id) && e["title"] == "Edited at Google")
    })
    .await;
    assert_eq!(
        fake.event(&work, &gid).expect("at Google")["summary"],
        "Edited at Google"
    );
    let writes = fake
        .requests()
        .iter()
        .filter(|r| {
            (is_event_write(r, "POST", &work, &gid) || is_event_write(r, "PUT", &work, &gid))
                && r.status == 200
        })
        .count();
    assert_eq!(
        writes, 2,
        "one insert and one replacement, nothing overwritten"
    );
    eventually("the outbox empties", || async {
        outbox_rows(&app).await == 0
    })
    .await;

    // Google forgets the sync tokens: the next pull lists everything again and sweeps what
    // vanished, and only the calendar that changed is announced.
    fake.expire_sync_tokens();
    fake.delete_event(&work, review["id"].as_str().expect("id"));
    fake.insert_event(
        &work,
        json!({"summary": "After the reset",
               "start": {"dateTime": "2026-12-08T10:00:00Z"}, "end": {"dateTime": "2026-12-08T11:00:00Z"}}),
    );
    let before = fake.requests().len();
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    let requests = fake.requests();
    assert_eq!(
        event_listings(&requests, before, &work),
        [(true, 410), (false, 200)],
        "the refused token, then a full listing"
    );
    assert_eq!(
        event_listings(&requests, before, &primary),
        [(true, 410), (false, 200)]
    );
    assert_eq!(
        titles_in(&app, &ana, &work_mirror).await,
        ["Added at Google", "After the reset", "Edited at Google"]
    );
    assert_eq!(
        titles_in(&app, &ana, &primary_mirror).await,
        ["Lunch", "Offsite", "Planning"]
    );
    let frame = until_frame(&mut stream, "external_sync").await;
    assert_eq!(frame["payload"]["calendars"], json!([work_mirror]));

    // The user withdraws Bowline's access at Google: the next call's refresh is refused,
    // the account needs reconnecting (its owner sees it, a member does not), and the local
    // write waits in the outbox.
    fake.revoke_refresh_tokens(&ana_at_google);
    let held = app
        .create_event(
            &ana,
            &event_body(&[&work_mirror], "Written while refused", 11),
        )
        .await;
    let held_gid = google_id(held["id"].as_str().expect("id"));
    eventually("the account needs reconnecting", || async {
        stored_google_account(&app).await.expect("row")["syncStatus"] == "reconnect_required"
    })
    .await;
    let last_grant = fake.token_requests().last().cloned().expect("a refresh");
    assert_eq!(last_grant["grant_type"], "refresh_token");
    assert_eq!(last_grant["refresh_token"], json!(refresh[0]));
    for mirror in google_mirrors(&app, &ana).await {
        assert_eq!(mirror["syncStatus"], "reconnect_required");
        assert_eq!(mirror["syncErrorCode"], "invalid_grant");
    }
    let for_bob = google_mirrors(&app, &bob).await;
    assert_eq!(for_bob.len(), 1);
    assert_eq!(for_bob[0]["id"], json!(work_mirror));
    assert_eq!(for_bob[0]["accountLabel"], json!(primary));
    assert_eq!(for_bob[0]["syncStatus"], Value::Null);
    assert_eq!(for_bob[0]["syncErrorCode"], Value::Null);
    let stored = stored_google_account(&app).await.expect("row");
    assert_eq!(stored["syncErrorCode"], "invalid_grant");
    assert_eq!(stored["accessToken"], Value::Null);
    assert_eq!(stored["refreshToken"], Value::Null);
    assert_eq!(
        google_status(&app, &ana).await,
        json!({"isLinked": true, "calendarConnected": false})
    );
    assert_eq!(outbox_rows(&app).await, 1, "the write is kept");
    assert!(
        !fake
            .requests()
            .iter()
            .any(|r| is_event_write(r, "POST", &work, &held_gid) && r.status == 200)
    );
    let failures = sample(
        &app.metrics_text().await,
        r#"svc_external_sync_failures_total{provider="google",stage="push"}"#,
    );
    assert!(failures.is_some_and(|n| n >= 1.0), "{failures:?}");

    // Linking again clears it and delivers the held write.
    link(&app, &ana, &fake, &ana_at_google).await;
    fake.wait_for_request("the held write delivered", |r| {
        is_event_write(r, "POST", &work, &held_gid) && r.status == 200
    })
    .await;
    eventually("the outbox empties", || async {
        outbox_rows(&app).await == 0
    })
    .await;
    for mirror in google_mirrors(&app, &ana).await {
        assert_eq!(mirror["syncStatus"], "active");
        assert_eq!(mirror["syncErrorCode"], Value::Null);
    }
    assert_eq!(
        fake.event(&work, &held_gid).expect("at Google")["summary"],
        "Written while refused"
    );

    // Revoking: Google gets the refresh token, the tokens are forgotten, the mirrors stay.
    let current = fake
        .refresh_tokens(&ana_at_google)
        .last()
        .cloned()
        .expect("token");
    let (status, body) = app
        .call(
            Method::POST,
            "/api/v1/users/connections/google/revoke",
            &ana,
            None,
        )
        .await;
    assert_eq!((status, body), (StatusCode::OK, Value::Null));
    assert_eq!(fake.revoked_tokens().last(), Some(&current));
    assert_eq!(
        google_status(&app, &ana).await,
        json!({"isLinked": true, "calendarConnected": false})
    );
    let stored = stored_google_account(&app).await.expect("row");
    assert_eq!(
        (&stored["accessToken"], &stored["refreshToken"]),
        (&Value::Null, &Value::Null)
    );
    assert_eq!(google_mirrors(&app, &ana).await.len(), 2);

    // Linked again, then disconnected: revoked at Google, mirrors gone for everyone, the
    // identity unlinked (Ana signs in with her password).
    link(&app, &ana, &fake, &ana_at_google).await;
    let current = fake
        .refresh_tokens(&ana_at_google)
        .last()
        .cloned()
        .expect("token");
    // Someone else's disconnect of Ana's account is a 404 and revokes nothing.
    let revoked_before = fake.revoked_tokens().len();
    let eve = app.sign_up("eve@example.com").await;
    for (provider, account) in [
        ("google", ana_at_google.sub.as_str()),
        ("microsoft", ana_at_google.sub.as_str()),
    ] {
        let (status, body) = app
            .call(
                Method::POST,
                "/api/v1/users/connections/disconnect",
                &eve,
                Some(&json!({"provider": provider, "accountId": account})),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{provider}: {body}");
        assert_eq!(body["error"], "Account not found...");
    }
    assert_eq!(
        fake.revoked_tokens().len(),
        revoked_before,
        "nothing was revoked"
    );
    let (status, _) = app
        .call(
            Method::POST,
            "/api/v1/users/connections/disconnect",
            &ana,
            Some(&json!({"provider": "google", "accountId": ana_at_google.sub})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(fake.revoked_tokens().last(), Some(&current));
    let mut removed = Vec::new();
    while removed.len() < 2 {
        let frame = until_frame(&mut stream, "calendar_removed").await;
        removed.push(frame["payload"]["id"].as_str().expect("id").to_owned());
    }
    removed.sort();
    let mut expected = vec![primary_mirror.clone(), work_mirror.clone()];
    expected.sort();
    assert_eq!(removed, expected);
    assert_eq!(
        until_frame(&mut bob_stream, "calendar_removed").await["payload"]["id"],
        json!(work_mirror)
    );
    assert!(google_mirrors(&app, &ana).await.is_empty());
    assert!(google_mirrors(&app, &bob).await.is_empty());
    assert!(stored_google_account(&app).await.is_none());
    assert_eq!(
        google_status(&app, &ana).await,
        json!({"isLinked": false, "calendarConnected": false})
    );
}

/// The `state` parameter of an authorization URL.
fn state_of(url: &str) -> String {
    url::Url::parse(url)
        .expect("URL")
        .query_pairs()
        .find(|(key, _)| key == "state")
        .map(|(_, value)| value.into_owned())
        .expect("state")
}

#[tokio::test]
async fn failed_links_redirect_with_better_auths_codes_and_store_nothing() {
    let fake = GoogleApi::start().await;
    let ana_at_google = fake.add_user("ana.work@gmail.com", "Ana Work");
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    let error_page = |code: &str| app.url(&format!("/api/auth/error?error={code}"));

    // Providers that are not configured for calendars.
    for provider in ["github", "microsoft"] {
        let (status, _, body) = link_social(
            &app,
            &ana,
            &json!({"provider": provider, "callbackURL": "/linked"}),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{provider}");
        assert_eq!(body["code"], "PROVIDER_NOT_FOUND", "{provider}");
    }

    // Destinations elsewhere than this server are refused before anything starts.
    for (field, code) in [
        ("callbackURL", "INVALID_CALLBACK_URL"),
        ("errorCallbackURL", "INVALID_ERROR_CALLBACK_URL"),
    ] {
        let (status, _, body) = link_social(
            &app,
            &ana,
            &json!({"provider": "google", field: "https://evil.example/after"}),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{field}");
        assert_eq!(body["code"], code, "{field}");
    }

    // Declined at Google, without an error destination: better-auth's error page.
    let (status, headers, body) = link_social(
        &app,
        &ana,
        &json!({"provider": "google", "callbackURL": "/linked"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let cookie = headers["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_owned();
    let back = fake.deny(body["url"].as_str().expect("url"));
    assert_eq!(
        come_back(&back, Some(&cookie)).await,
        error_page("access_denied")
    );

    // The user declines at Google.
    let started = start_link(&app, &ana).await;
    let back = fake.deny(&started.url);
    assert_eq!(
        come_back(&back, Some(&started.cookie)).await,
        "/failed?error=access_denied"
    );

    // No cookie, or another link's cookie: the browser is not the one that started it.
    let started = start_link(&app, &ana).await;
    let back = fake.consent(&started.url, &ana_at_google);
    assert_eq!(come_back(&back, None).await, error_page("state_mismatch"));
    let other = start_link(&app, &ana).await;
    assert_eq!(
        come_back(&back, Some(&other.cookie)).await,
        error_page("state_mismatch")
    );
    // A state whose signature is wrong is no state at all.
    let forged = back.replace(
        &format!("state={}", &state_of(&started.url)[..8]),
        "state=AAAAAAAA",
    );
    assert_ne!(forged, back);
    assert_eq!(
        come_back(&forged, Some(&started.cookie)).await,
        error_page("state_not_found")
    );

    // Google refuses the code (too old by now).
    let started = start_link(&app, &ana).await;
    let back = fake.consent(&started.url, &ana_at_google);
    fake.expire_authorization_codes();
    assert_eq!(
        come_back(&back, Some(&started.cookie)).await,
        "/failed?error=invalid_code"
    );
    // The state was used up by that attempt.
    assert_eq!(
        come_back(&back, Some(&started.cookie)).await,
        error_page("state_not_found")
    );

    // Back without a code and without an error.
    let started = start_link(&app, &ana).await;
    let state: String =
        url::form_urlencoded::byte_serialize(state_of(&started.url).as_bytes()).collect();
    let bare = app.url(&format!("/api/auth/callback/google?state={state}"));
    assert_eq!(
        come_back(&bare, Some(&started.cookie)).await,
        "/failed?error=no_code"
    );

    // A Google state brought to another provider's callback.
    let started = start_link(&app, &ana).await;
    let back = fake.consent(&started.url, &ana_at_google);
    let elsewhere = back.replace("/callback/google?", "/callback/microsoft?");
    assert_eq!(
        come_back(&elsewhere, Some(&started.cookie)).await,
        "/failed?error=state_mismatch"
    );

    assert!(
        stored_google_account(&app).await.is_none(),
        "nothing linked"
    );
    assert_eq!(
        google_status(&app, &ana).await,
        json!({"isLinked": false, "calendarConnected": false})
    );
    assert!(google_mirrors(&app, &ana).await.is_empty());

    // A replayed callback after a link that worked.
    let started = start_link(&app, &ana).await;
    let back = fake.consent(&started.url, &ana_at_google);
    assert_eq!(come_back(&back, Some(&started.cookie)).await, "/linked");
    assert_eq!(
        come_back(&back, Some(&started.cookie)).await,
        error_page("state_not_found")
    );
    let code_grants = fake
        .token_requests()
        .iter()
        .filter(|g| g["grant_type"] == "authorization_code")
        .count();
    assert_eq!(
        code_grants, 2,
        "the expired code and the good one, no replay"
    );

    // The same Google identity for another user.
    let bob = app.sign_up("bob@example.com").await;
    let started = start_link(&app, &bob).await;
    let back = fake.consent(&started.url, &ana_at_google);
    assert_eq!(
        come_back(&back, Some(&started.cookie)).await,
        "/failed?error=account_already_linked_to_different_user"
    );
    assert!(google_mirrors(&app, &bob).await.is_empty());
    assert_eq!(
        google_status(&app, &bob).await,
        json!({"isLinked": false, "calendarConnected": false})
    );
    assert_eq!(sync_now(&app, &ana).await.0, StatusCode::OK);
    assert_eq!(google_mirrors(&app, &ana).await.len(), 1);
}

#[tokio::test]
async fn the_expo_proxy_sets_the_state_and_redirects_only_to_google() {
    let fake = GoogleApi::start().await;
    let ana_at_google = fake.add_user("ana.work@gmail.com", "Ana Work");
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    let (status, headers, body) = link_social(
        &app,
        &ana,
        &json!({"provider": "google", "callbackURL": "/linked", "disableRedirect": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["redirect"], false);
    assert!(headers.get("location").is_none());
    let url = body["url"].as_str().expect("url").to_owned();

    // The system browser opens the proxy: it gets the state cookie and goes on to Google.
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("authorizationURL", &url)
        .append_pair("oauthState", &state_of(&url))
        .finish();
    let response = crate::helpers::no_redirects()
        .get(app.url(&format!("/api/auth/expo-authorization-proxy?{query}")))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::FOUND);
    assert_eq!(
        response.headers()["location"].to_str().expect("location"),
        url
    );
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_owned();
    let back = fake.consent(&url, &ana_at_google);
    assert_eq!(come_back(&back, Some(&cookie)).await, "/linked");

    // Anything but a configured provider's authorization endpoint is refused.
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair(
            "authorizationURL",
            &url.replace(&fake.base(), "https://evil.example"),
        )
        .finish();
    let response = crate::helpers::no_redirects()
        .get(app.url(&format!("/api/auth/expo-authorization-proxy?{query}")))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(response.headers().get("location").is_none());
}

#[tokio::test]
async fn a_user_who_signs_in_with_google_links_calendars_and_keeps_its_sign_in() {
    let fake = GoogleApi::start().await;
    let grace_at_google = fake.add_user("grace@gmail.com", "Grace");
    fake.insert_event(
        &grace_at_google.email,
        json!({"summary": "Talk", "start": {"date": "2026-12-01"}, "end": {"date": "2026-12-02"}}),
    );
    let idp = IdentityProvider::start().await;
    let jwks = idp.jwks_url();
    let app = spawn_app_with(|s| {
        with_caldav(s);
        fake.configure(s);
        s.google.jwks_url = jwks;
    })
    .await;
    let sign_in = || async {
        let token = idp.sign(
            "key-a",
            &google_claims(
                GOOGLE_CLIENT_ID,
                &grace_at_google.sub,
                &grace_at_google.email,
            ),
        );
        let response = app
            .client
            .post(app.url("/api/auth/sign-in/social"))
            .json(&json!({"provider": "google", "idToken": {"token": token}}))
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::OK);
        let signed = response.headers()["set-auth-token"]
            .to_str()
            .expect("token")
            .to_owned();
        let body: Value = response.json().await.expect("JSON");
        TestUser {
            id: body["user"]["id"].as_str().expect("id").to_owned(),
            email: grace_at_google.email.clone(),
            password: String::new(),
            token: body["token"].as_str().expect("token").to_owned(),
            signed,
        }
    };
    let grace = sign_in().await;

    // Signing in grants no calendar access.
    assert_eq!(
        google_status(&app, &grace).await,
        json!({"isLinked": true, "calendarConnected": false})
    );
    assert_eq!(sync_now(&app, &grace).await, (StatusCode::OK, json!("OK")));
    assert!(google_mirrors(&app, &grace).await.is_empty());
    assert!(
        fake.requests().is_empty(),
        "Google's Calendar API untouched"
    );

    // Linking the same identity gives the sign-in account its calendar tokens.
    link(&app, &grace, &fake, &grace_at_google).await;
    assert_eq!(
        google_status(&app, &grace).await,
        json!({"isLinked": true, "calendarConnected": true})
    );
    let mirror = mirror_id(&app, &grace, &grace_at_google.email).await;
    assert_eq!(titles_in(&app, &grace, &mirror).await, ["Talk"]);

    // Disconnecting the only sign-in account keeps it for sign-in, without its tokens.
    let (status, _) = app
        .call(
            Method::POST,
            "/api/v1/users/connections/disconnect",
            &grace,
            Some(&json!({"provider": "google", "accountId": grace_at_google.sub})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(google_mirrors(&app, &grace).await.is_empty());
    let stored = stored_google_account(&app)
        .await
        .expect("the sign-in account stays");
    assert_eq!(stored["accountId"], json!(grace_at_google.sub));
    assert_eq!(
        (
            &stored["accessToken"],
            &stored["refreshToken"],
            &stored["scope"]
        ),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    assert_eq!(
        google_status(&app, &grace).await,
        json!({"isLinked": true, "calendarConnected": false})
    );
    assert_eq!(sign_in().await.id, grace.id, "still signs in");
}

#[tokio::test]
async fn two_google_accounts_of_one_user_sync_and_fail_separately() {
    let fake = GoogleApi::start().await;
    let work_at_google = fake.add_user("ana.work@gmail.com", "Ana Work");
    let home_at_google = fake.add_user("ana.home@gmail.com", "Ana Home");
    let all_day = |summary: &str, day: u32| {
        json!({"summary": summary,
               "start": {"date": format!("2026-12-{day:02}")},
               "end": {"date": format!("2026-12-{:02}", day + 1)}})
    };
    fake.insert_event(&work_at_google.email, all_day("Standup", 1));
    fake.insert_event(&home_at_google.email, all_day("Dentist", 2));
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &work_at_google).await;
    link(&app, &ana, &fake, &home_at_google).await;
    let mirrors = google_mirrors(&app, &ana).await;
    let accounts: Vec<(Value, Value)> = mirrors
        .iter()
        .map(|m| (m["accountId"].clone(), m["accountLabel"].clone()))
        .collect();
    assert_eq!(
        accounts,
        [
            (json!(home_at_google.sub), json!(home_at_google.email)),
            (json!(work_at_google.sub), json!(work_at_google.email)),
        ]
    );
    let work_mirror = mirror_id(&app, &ana, &work_at_google.email).await;
    let home_mirror = mirror_id(&app, &ana, &home_at_google.email).await;
    assert_eq!(titles_in(&app, &ana, &work_mirror).await, ["Standup"]);
    assert_eq!(titles_in(&app, &ana, &home_mirror).await, ["Dentist"]);

    // The work grant dies: only that account needs reconnecting; home goes on syncing.
    fake.revoke_refresh_tokens(&work_at_google);
    fake.insert_event(&home_at_google.email, all_day("Gym", 3));
    let (status, body) = sync_now(&app, &ana).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["error"],
        "The calendar server could not be synced: the account must be connected again (invalid_grant)"
    );
    assert_eq!(
        titles_in(&app, &ana, &home_mirror).await,
        ["Dentist", "Gym"]
    );
    let status_of = |mirrors: &[Value], id: &str| {
        let mirror = mirrors.iter().find(|m| m["id"] == id).expect("mirror");
        (
            mirror["syncStatus"].clone(),
            mirror["syncErrorCode"].clone(),
        )
    };
    let mirrors = google_mirrors(&app, &ana).await;
    assert_eq!(
        status_of(&mirrors, &work_mirror),
        (json!("reconnect_required"), json!("invalid_grant"))
    );
    assert_eq!(
        status_of(&mirrors, &home_mirror),
        (json!("active"), Value::Null)
    );
    assert_eq!(
        google_status(&app, &ana).await,
        json!({"isLinked": true, "calendarConnected": true})
    );
    // The dead account is left out of later syncs.
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));

    // Disconnecting the work account touches nothing of the home one.
    let (status, _) = app
        .call(
            Method::POST,
            "/api/v1/users/connections/disconnect",
            &ana,
            Some(&json!({"provider": "google", "accountId": work_at_google.sub})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let left: Vec<Value> = google_mirrors(&app, &ana)
        .await
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(left, [json!(home_mirror)]);
    assert!(
        fake.revoked_tokens().is_empty(),
        "the dead account had no token to revoke"
    );
    fake.insert_event(&home_at_google.email, all_day("Swim", 4));
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    assert_eq!(
        titles_in(&app, &ana, &home_mirror).await,
        ["Dentist", "Gym", "Swim"]
    );
}

#[tokio::test]
async fn a_token_endpoint_outage_leaves_the_account_active() {
    let fake = GoogleApi::start().await;
    let ana_at_google = fake.add_user("ana.work@gmail.com", "Ana Work");
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, &ana, &fake, &ana_at_google).await;
    let mirror = mirror_id(&app, &ana, &ana_at_google.email).await;

    // The access token is refused and the token endpoint is down for a moment.
    fake.expire_access_tokens();
    fake.fail_token_requests(1, 503);
    let (status, body) = sync_now(&app, &ana).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = body["error"].as_str().expect("error");
    assert!(
        message.starts_with("The calendar server could not be synced: ") && message.contains("503"),
        "{message}"
    );
    let stored = stored_google_account(&app).await.expect("row");
    assert_eq!(
        stored["syncStatus"],
        Value::Null,
        "not a reason to reconnect"
    );
    assert!(
        stored["refreshToken"].is_string(),
        "the refresh token is kept"
    );
    let mirrors = google_mirrors(&app, &ana).await;
    assert_eq!(mirrors[0]["syncStatus"], "active");

    // The next sync refreshes and goes through.
    fake.insert_event(
        &ana_at_google.email,
        json!({"summary": "After the outage", "start": {"date": "2026-12-01"}, "end": {"date": "2026-12-02"}}),
    );
    assert_eq!(sync_now(&app, &ana).await, (StatusCode::OK, json!("OK")));
    assert_eq!(titles_in(&app, &ana, &mirror).await, ["After the outage"]);
    let grants: Vec<Value> = fake
        .token_requests()
        .iter()
        .map(|g| g["grant_type"].clone())
        .collect();
    assert_eq!(
        grants,
        [
            json!("authorization_code"),
            json!("refresh_token"),
            json!("refresh_token")
        ]
    );
}

#[tokio::test]
async fn google_needs_its_client_and_the_sealing_key() {
    let fake = GoogleApi::start().await;
    // Google's client is configured, but nothing could be stored sealed.
    let app = spawn_app_with(|s| fake.configure(s)).await;
    let info: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
    assert_eq!(info["syncProviders"], json!([]));
    let ana = app.sign_up("ana@example.com").await;
    let (status, _, body) = link_social(&app, &ana, &json!({"provider": "google"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["code"], "PROVIDER_NOT_FOUND");
}

#[tokio::test]
async fn extra_scopes_are_asked_for_and_stored() {
    let fake = GoogleApi::start().await;
    let ana_at_google = fake.add_user("ana.work@gmail.com", "Ana Work");
    let app = google_app(&fake).await;
    let ana = app.sign_up("ana@example.com").await;
    let settings = "https://www.googleapis.com/auth/calendar.settings.readonly";
    let (status, headers, body) = link_social(
        &app,
        &ana,
        &json!({"provider": "google", "callbackURL": "/linked",
                "scopes": [settings, "two words", "", CALENDAR_SCOPE]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let url = body["url"].as_str().expect("url");
    let scope = url::Url::parse(url)
        .expect("URL")
        .query_pairs()
        .find(|(key, _)| key == "scope")
        .map(|(_, value)| value.into_owned());
    assert_eq!(
        scope.as_deref(),
        Some(format!("openid email profile {CALENDAR_SCOPE} {settings}").as_str()),
        "the calendar scopes, then the client's own (blank, spaced and repeated ones left out)"
    );
    let cookie = headers["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_owned();
    let back = fake.consent(url, &ana_at_google);
    assert_eq!(come_back(&back, Some(&cookie)).await, "/linked");
    assert_eq!(
        stored_google_account(&app).await.expect("row")["scope"],
        json!(format!("openid,email,profile,{CALENDAR_SCOPE},{settings}"))
    );
}
