//! Sign-in by emailed code (better-auth's `emailOTP` plugin wire): codes mailed to any
//! address alike, used once, refused when wrong, expired or tried too often; new addresses
//! become verified users, unverified accounts lose what predates the proof.

use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, EntityTrait};
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app_with_mail, spawn_app_with_mail_and};
use crate::support::smtp::{ReceivedMail, SmtpSink};

const SEND: &str = "/api/auth/email-otp/send-verification-otp";
const SIGN_IN: &str = "/api/auth/sign-in/email-otp";

/// Asks for a sign-in code for `email`.
async fn ask_code(app: &TestApp, email: &str) -> reqwest::Response {
    app.post_json(SEND, &json!({ "email": email, "type": "sign-in" }))
        .await
}

/// The code of a sign-in mail, read from its subject (`<code> is your <host> code`).
fn code_of(mail: &ReceivedMail) -> String {
    let subject = mail.subject();
    let (code, rest) = subject.split_once(' ').expect("a subject with a code");
    assert!(
        rest.starts_with("is your ") && rest.ends_with(" code"),
        "{subject}"
    );
    assert_eq!(code.len(), 6, "{subject}");
    assert!(code.bytes().all(|b| b.is_ascii_digit()), "{subject}");
    assert!(
        mail.text().contains(code),
        "the text part shows the code too"
    );
    code.to_owned()
}

/// A code mailed to `email`.
async fn mailed_code(app: &TestApp, sink: &SmtpSink, email: &str) -> String {
    let asked = ask_code(app, email).await;
    assert_eq!(asked.status(), StatusCode::OK);
    assert_eq!(
        asked.json::<Value>().await.expect("JSON"),
        json!({ "success": true })
    );
    let mail = sink.next_mail().await;
    assert_eq!(mail.to, [email]);
    code_of(&mail)
}

async fn sign_in(app: &TestApp, email: &str, otp: &str) -> reqwest::Response {
    app.post_json(SIGN_IN, &json!({ "email": email, "otp": otp }))
        .await
}

/// `{code}` of a better-auth error answer.
async fn code_of_error(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let body: Value = response.json().await.expect("JSON");
    (status, body["code"].clone())
}

#[tokio::test]
async fn a_mailed_code_signs_a_new_address_in_verified_with_its_calendar() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let code = mailed_code(&app, &sink, "newcomer@example.com").await;

    // The database holds neither the address nor the code.
    let conn = app.db_connection().await;
    let rows = entities::verifications::Entity::find()
        .all(&conn)
        .await
        .expect("query");
    assert_eq!(rows.len(), 1);
    for row in &rows {
        for stored in [&row.identifier, &row.value] {
            assert!(!stored.contains("newcomer"), "{stored}");
            assert!(!stored.contains(&code), "{stored}");
        }
    }

    let signed_in = app
        .post_json(
            SIGN_IN,
            &json!({ "email": "Newcomer@Example.com", "otp": code, "name": "Ada" }),
        )
        .await;
    assert_eq!(signed_in.status(), StatusCode::OK);
    assert!(
        signed_in.headers().contains_key("set-cookie"),
        "the session cookie is set"
    );
    let body: Value = signed_in.json().await.expect("JSON");
    let token = body["token"].as_str().expect("token").to_owned();
    assert_eq!(body["user"]["email"], "newcomer@example.com");
    assert_eq!(body["user"]["emailVerified"], true);
    assert_eq!(body["user"]["name"], "Ada");

    let calendars: Value = app
        .client
        .get(app.url("/api/v1/calendars"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    let calendars = calendars.as_array().expect("calendars");
    assert_eq!(calendars.len(), 1, "{calendars:?}");
    assert_eq!(calendars[0]["isDefault"], true);

    // Used once.
    let again = sign_in(&app, "newcomer@example.com", &code).await;
    assert_eq!(
        code_of_error(again).await,
        (StatusCode::BAD_REQUEST, json!("INVALID_OTP"))
    );
}

#[tokio::test]
async fn known_and_unknown_addresses_get_the_same_answer_and_a_code() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let known = app.sign_up("known@example.com").await;
    let known_code = mailed_code(&app, &sink, "known@example.com").await;
    let unknown_code = mailed_code(&app, &sink, "unknown@example.com").await;

    // The known (verified by the code now) user signs in as themselves.
    let signed_in = sign_in(&app, "known@example.com", &known_code).await;
    assert_eq!(signed_in.status(), StatusCode::OK);
    let body: Value = signed_in.json().await.expect("JSON");
    assert_eq!(body["user"]["id"], known.id);
    let signed_in = sign_in(&app, "unknown@example.com", &unknown_code).await;
    assert_eq!(signed_in.status(), StatusCode::OK);
    let body: Value = signed_in.json().await.expect("JSON");
    assert_ne!(body["user"]["id"], known.id);
    assert_eq!(body["user"]["name"], "");
}

#[tokio::test]
async fn three_wrong_tries_spend_a_code_and_a_new_one_replaces_the_last() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let email = "tries@example.com";
    let code = mailed_code(&app, &sink, email).await;
    let wrong = if code == "000000" { "000001" } else { "000000" };
    for _ in 0..3 {
        assert_eq!(
            code_of_error(sign_in(&app, email, wrong).await).await,
            (StatusCode::BAD_REQUEST, json!("INVALID_OTP"))
        );
    }
    assert_eq!(
        code_of_error(sign_in(&app, email, &code).await).await,
        (StatusCode::FORBIDDEN, json!("TOO_MANY_ATTEMPTS")),
        "the right code, too late"
    );
    assert_eq!(
        code_of_error(sign_in(&app, email, &code).await).await,
        (StatusCode::BAD_REQUEST, json!("INVALID_OTP")),
        "and then gone"
    );

    // A code asked for again replaces the one before.
    let first = mailed_code(&app, &sink, email).await;
    let second = mailed_code(&app, &sink, email).await;
    if first != second {
        assert_eq!(
            code_of_error(sign_in(&app, email, &first).await).await,
            (StatusCode::BAD_REQUEST, json!("INVALID_OTP"))
        );
    }
    assert_eq!(sign_in(&app, email, &second).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn an_expired_code_is_refused_and_removed() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let email = "late@example.com";
    let code = mailed_code(&app, &sink, email).await;
    let conn = app.db_connection().await;
    conn.execute_unprepared(
        "UPDATE verifications SET expires_at = created_at WHERE identifier LIKE 'sign-in-otp:%'",
    )
    .await
    .expect("expire the code");
    assert_eq!(
        code_of_error(sign_in(&app, email, &code).await).await,
        (StatusCode::BAD_REQUEST, json!("OTP_EXPIRED"))
    );
    assert_eq!(
        code_of_error(sign_in(&app, email, &code).await).await,
        (StatusCode::BAD_REQUEST, json!("INVALID_OTP"))
    );
}

#[tokio::test]
async fn an_unverified_account_loses_its_password_and_sessions_to_the_addresss_owner() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    // Someone registered this address with a password, never verifying it.
    let squatter = app.sign_up("owner@example.com").await;
    let code = mailed_code(&app, &sink, "owner@example.com").await;
    let signed_in = sign_in(&app, "owner@example.com", &code).await;
    assert_eq!(signed_in.status(), StatusCode::OK);
    let body: Value = signed_in.json().await.expect("JSON");
    assert_eq!(body["user"]["emailVerified"], true);

    let old_session = app
        .as_user(Method::GET, "/api/auth/get-session", &squatter)
        .send()
        .await
        .expect("request");
    assert_eq!(old_session.text().await.expect("body"), "null");
    assert_eq!(
        app.sign_in(&squatter.email, &squatter.password)
            .await
            .status(),
        StatusCode::UNAUTHORIZED,
        "the password set before the proof is gone"
    );
    let new_session = app
        .client
        .get(app.url("/api/auth/get-session"))
        .bearer_auth(body["token"].as_str().expect("token"))
        .send()
        .await
        .expect("request");
    let session: Value = new_session.json().await.expect("JSON");
    assert_eq!(session["user"]["email"], "owner@example.com");
}

#[tokio::test]
async fn hostile_requests_are_refused_and_nothing_is_mailed() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let refusals = [
        (
            json!({ "email": "a@example.com\r\nBcc: b@example.com", "type": "sign-in" }),
            json!("INVALID_EMAIL"),
        ),
        (
            json!({ "email": "not an address", "type": "sign-in" }),
            json!("INVALID_EMAIL"),
        ),
        (
            json!({ "email": "a@example.com", "type": "spam" }),
            json!("VALIDATION_ERROR"),
        ),
        (
            json!({ "email": "a@example.com" }),
            json!("VALIDATION_ERROR"),
        ),
        (
            json!({ "email": 7, "type": "sign-in" }),
            json!("INVALID_EMAIL"),
        ),
    ];
    for (body, code) in refusals {
        let refused = app.post_json(SEND, &body).await;
        assert_eq!(
            code_of_error(refused).await,
            (StatusCode::BAD_REQUEST, code),
            "{body}"
        );
    }
    let other_kind = app
        .post_json(
            SEND,
            &json!({ "email": "a@example.com", "type": "change-email" }),
        )
        .await;
    assert_eq!(other_kind.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        other_kind.json::<Value>().await.expect("JSON")["message"],
        "Invalid OTP type"
    );
    let no_code = app
        .post_json(SIGN_IN, &json!({ "email": "a@example.com" }))
        .await;
    assert_eq!(
        code_of_error(no_code).await,
        (StatusCode::BAD_REQUEST, json!("VALIDATION_ERROR"))
    );
    let never_asked = sign_in(&app, "a@example.com", "123456").await;
    assert_eq!(
        code_of_error(never_asked).await,
        (StatusCode::BAD_REQUEST, json!("INVALID_OTP"))
    );
    assert!(sink.try_next_mail().await.is_none(), "nothing was mailed");
}

#[tokio::test]
async fn codes_are_limited_per_address_and_per_email() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail_and(&sink, |s| {
        s.auth.rate_limit = true;
        s.auth.trust_proxy_headers = true;
    })
    .await;
    let ask_from = |ip: String, email: &'static str| {
        app.client
            .post(app.url(SEND))
            .header("origin", app.base.as_str())
            .header("x-forwarded-for", ip)
            .json(&json!({ "email": email, "type": "sign-in" }))
            .send()
    };
    // One client: three codes a minute, whatever the address.
    for n in 0..3 {
        let asked = ask_from(
            "203.0.113.40".into(),
            ["a@example.com", "b@example.com", "c@example.com"][n],
        )
        .await
        .expect("request");
        assert_eq!(asked.status(), StatusCode::OK);
    }
    let limited = ask_from("203.0.113.40".into(), "d@example.com")
        .await
        .expect("request");
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);

    // One address: five codes per 15 minutes, whichever clients ask.
    for n in 0..5 {
        let asked = ask_from(format!("198.51.100.{n}"), "target@example.com")
            .await
            .expect("request");
        assert_eq!(asked.status(), StatusCode::OK, "code {n}");
    }
    let limited = ask_from("198.51.100.9".into(), "target@example.com")
        .await
        .expect("request");
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers().contains_key("x-retry-after"));
    let other = ask_from("198.51.100.9".into(), "other@example.com")
        .await
        .expect("request");
    assert_eq!(
        other.status(),
        StatusCode::OK,
        "another address is not held up"
    );
}
