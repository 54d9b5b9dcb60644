//! Flows that go through real mail (lettre to an SMTP sink in the test process): password
//! reset, email verification, account deletion; and the `.eml` fallback without SMTP.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{no_redirects, spawn_app, spawn_app_with_mail};
use crate::support::smtp::SmtpSink;

fn query_param(link: &str, name: &str) -> String {
    let url = reqwest::Url::parse(link).expect("link is a URL");
    url.query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .unwrap_or_else(|| panic!("{name} missing in {link}"))
}

#[tokio::test]
async fn mail_capability_follows_the_smtp_handshake() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let info: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
    assert_eq!(info["email"], true);
    let without = spawn_app().await;
    let info: Value = without
        .get("/api/v1/server")
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(info["email"], false);
}

#[tokio::test]
async fn password_reset_by_mail_is_single_use_and_non_enumerating() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let user = app.sign_up("reset@example.com").await;

    let known = app
        .post_json(
            "/api/auth/request-password-reset",
            &json!({ "email": "reset@example.com" }),
        )
        .await;
    assert_eq!(known.status(), StatusCode::OK);
    let known_body: Value = known.json().await.expect("JSON");
    let unknown = app
        .post_json(
            "/api/auth/request-password-reset",
            &json!({ "email": "nobody@example.com" }),
        )
        .await;
    assert_eq!(unknown.status(), StatusCode::OK);
    assert_eq!(
        unknown.json::<Value>().await.expect("JSON"),
        known_body,
        "same answer"
    );

    let mail = sink.next_mail().await;
    assert_eq!(mail.to, ["reset@example.com"]);
    assert!(
        mail.subject().contains("Reset your password"),
        "{}",
        mail.subject()
    );
    assert!(
        mail.data.contains("Content-Type: text/html"),
        "an HTML part too"
    );
    let link = mail.link_starting_with(&format!("{}/reset-password?token=", app.base));
    let token = query_param(&link, "token");
    assert!(
        sink.try_next_mail().await.is_none(),
        "nothing was sent for the unknown address"
    );

    let reset = app
        .post_json(
            "/api/auth/reset-password",
            &json!({ "token": token, "newPassword": "a new password" }),
        )
        .await;
    assert_eq!(reset.status(), StatusCode::OK);
    assert_eq!(
        reset.json::<Value>().await.expect("JSON"),
        json!({ "status": true })
    );

    let reused = app
        .post_json(
            "/api/auth/reset-password",
            &json!({ "token": token, "newPassword": "another one!" }),
        )
        .await;
    assert_eq!(reused.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        reused.json::<Value>().await.expect("JSON")["code"],
        "INVALID_TOKEN"
    );

    let old = app.sign_in(&user.email, &user.password).await;
    assert_eq!(old.status(), StatusCode::UNAUTHORIZED);
    let new = app.sign_in(&user.email, "a new password").await;
    assert_eq!(new.status(), StatusCode::OK);
    let stale = app
        .as_user(Method::GET, "/api/auth/get-session", &user)
        .send()
        .await
        .expect("request");
    assert_eq!(
        stale.text().await.expect("body"),
        "null",
        "a reset ends earlier sessions"
    );
}

#[tokio::test]
async fn a_reset_with_redirect_to_goes_through_the_callback() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    app.sign_up("cb@example.com").await;
    let response = app
        .post_json(
            "/api/auth/request-password-reset",
            &json!({ "email": "cb@example.com", "redirectTo": "bowline://reset" }),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let link = sink
        .next_mail()
        .await
        .link_starting_with(&format!("{}/api/auth/reset-password/", app.base));
    let no_redirect = no_redirects();
    let hop = no_redirect.get(&link).send().await.expect("request");
    assert_eq!(hop.status(), StatusCode::FOUND);
    let location = hop.headers()["location"].to_str().expect("text");
    assert!(location.starts_with("bowline://reset?token="), "{location}");

    let bad = no_redirect
        .get(app.url("/api/auth/reset-password/nonsense?callbackURL=%2Freset-password"))
        .send()
        .await
        .expect("request");
    assert_eq!(
        bad.headers()["location"],
        "/reset-password?error=INVALID_TOKEN"
    );
    let untrusted = app
        .post_json(
            "/api/auth/request-password-reset",
            &json!({ "email": "cb@example.com", "redirectTo": "https://evil.example/steal" }),
        )
        .await;
    assert_eq!(untrusted.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        untrusted.json::<Value>().await.expect("JSON")["code"],
        "INVALID_REDIRECT_URL"
    );
}

#[tokio::test]
async fn email_verification_lands_on_the_email_verified_page() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let user = app.sign_up("verify@example.com").await;
    let mismatch = app
        .as_user(Method::POST, "/api/auth/send-verification-email", &user)
        .json(&json!({ "email": "someone@example.com" }))
        .send()
        .await
        .expect("request");
    assert_eq!(
        mismatch.json::<Value>().await.expect("JSON")["code"],
        "EMAIL_MISMATCH"
    );
    let sent = app
        .as_user(Method::POST, "/api/auth/send-verification-email", &user)
        .json(&json!({ "email": "verify@example.com" }))
        .send()
        .await
        .expect("request");
    assert_eq!(
        sent.json::<Value>().await.expect("JSON"),
        json!({ "status": true })
    );
    let link = sink
        .next_mail()
        .await
        .link_starting_with(&format!("{}/api/auth/verify-email?token=", app.base));
    assert_eq!(
        query_param(&link, "callbackURL"),
        format!("{}/email-verified", app.base)
    );

    let no_redirect = no_redirects();
    let hop = no_redirect.get(&link).send().await.expect("request");
    assert_eq!(hop.status(), StatusCode::FOUND);
    assert_eq!(
        hop.headers()["location"].to_str().expect("text"),
        format!("{}/email-verified", app.base)
    );
    let page = app.get("/email-verified").await;
    assert_eq!(page.status(), StatusCode::OK);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .expect("text")
            .starts_with("text/html")
    );

    let session = app.session(&user.token).await;
    assert_eq!(session["user"]["emailVerified"], true);

    let tampered = link.replace("token=", "token=x");
    let hop = no_redirect.get(&tampered).send().await.expect("request");
    let location = hop.headers()["location"].to_str().expect("text");
    assert!(
        location.ends_with("/email-verified?error=INVALID_TOKEN"),
        "{location}"
    );
    let already = app
        .as_user(Method::POST, "/api/auth/send-verification-email", &user)
        .json(&json!({ "email": "verify@example.com" }))
        .send()
        .await
        .expect("request");
    assert_eq!(
        already.json::<Value>().await.expect("JSON")["code"],
        "EMAIL_ALREADY_VERIFIED"
    );
}

#[tokio::test]
async fn account_deletion_is_confirmed_by_the_mailed_token() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let user = app.sign_up("leaving@example.com").await;
    let anonymous = app
        .client
        .delete(app.url("/api/v1/users"))
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    let requested = app
        .as_user(Method::DELETE, "/api/v1/users", &user)
        .send()
        .await
        .expect("request");
    assert_eq!(requested.status(), StatusCode::OK);
    assert_eq!(requested.text().await.expect("body"), "OK");
    let still_there = app
        .as_user(Method::GET, "/api/auth/get-session", &user)
        .send()
        .await
        .expect("request");
    assert_ne!(
        still_there.text().await.expect("body"),
        "null",
        "nothing is deleted yet"
    );

    let mail = sink.next_mail().await;
    let link = mail.link_starting_with(&format!("{}/delete-account?token=", app.base));
    let token = query_param(&link, "token");

    for (body, message) in [
        (json!({}), "token is required..."),
        (
            json!({ "token": "wrong-token" }),
            "This deletion link is invalid or has expired.",
        ),
    ] {
        let refused = app.post_json("/api/v1/users/delete/confirm", &body).await;
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
        let body: Value = refused.json().await.expect("JSON");
        assert_eq!(body["error"], message);
        assert!(body["requestId"].is_string());
    }
    let alive = app.sign_in(&user.email, &user.password).await;
    assert_eq!(
        alive.status(),
        StatusCode::OK,
        "a bad token deletes nothing"
    );

    // Someone else signed in who opens the link deletes nothing and leaves the token usable.
    let other = app.sign_up("staying@example.com").await;
    let foreign = app
        .as_user(
            Method::GET,
            &format!("/api/auth/delete-user/callback?token={token}"),
            &other,
        )
        .send()
        .await
        .expect("request");
    assert_eq!(foreign.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        foreign.json::<Value>().await.expect("JSON")["code"],
        "INVALID_TOKEN"
    );
    assert_eq!(
        app.sign_in(&other.email, &other.password).await.status(),
        StatusCode::OK,
        "the other user is still there"
    );

    let confirmed = app
        .post_json("/api/v1/users/delete/confirm", &json!({ "token": token }))
        .await;
    assert_eq!(
        confirmed.status(),
        StatusCode::OK,
        "the token was left unused"
    );
    let gone = app.sign_in(&user.email, &user.password).await;
    assert_eq!(gone.status(), StatusCode::UNAUTHORIZED);
    let session = app
        .as_user(Method::GET, "/api/auth/get-session", &user)
        .send()
        .await
        .expect("request");
    assert_eq!(session.text().await.expect("body"), "null");
    let reused = app
        .post_json("/api/v1/users/delete/confirm", &json!({ "token": token }))
        .await;
    assert_eq!(reused.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn delete_confirm_is_rate_limited_per_address() {
    let app = spawn_app().await;
    let attempt = || {
        app.client
            .post(app.url("/api/v1/users/delete/confirm"))
            .header("x-forwarded-for", "198.51.100.23")
            .json(&json!({ "token": "guess" }))
            .send()
    };
    for _ in 0..10 {
        assert_eq!(
            attempt().await.expect("request").status(),
            StatusCode::BAD_REQUEST
        );
    }
    let limited = attempt().await.expect("request");
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers().contains_key("retry-after"));
    let body: Value = limited.json().await.expect("JSON");
    assert_eq!(body["error"], "Too many requests. Try again later.");
    assert!(body["requestId"].is_string());
}

#[tokio::test]
async fn without_smtp_mails_are_written_as_eml_files() {
    let app = spawn_app().await;
    app.sign_up("files@example.com").await;
    let response = app
        .post_json(
            "/api/auth/request-password-reset",
            &json!({ "email": "files@example.com" }),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let dir = app.ctx().settings.storage.data_dir.join("mail");
    // The mailer writes asynchronously: wait for the file with the mailer's own completion.
    let mut watcher = tokio::time::interval(std::time::Duration::from_millis(20));
    let found = tokio::time::timeout(crate::helpers::WAIT, async {
        loop {
            watcher.tick().await;
            let files: Vec<_> = std::fs::read_dir(&dir)
                .expect("mail directory")
                .filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "eml"))
                .collect();
            if let Some(file) = files.first() {
                return std::fs::read_to_string(file.path()).expect("read eml");
            }
        }
    })
    .await
    .expect("an .eml file within the wait");
    assert!(found.contains("files@example.com"));
    let mail = crate::support::smtp::ReceivedMail {
        to: Vec::new(),
        data: found,
    };
    assert!(
        mail.text().contains("/reset-password?token="),
        "{}",
        mail.text()
    );
}

#[tokio::test]
async fn a_mail_the_server_refuses_at_first_is_retried() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    app.sign_up("retry@example.com").await;
    sink.refuse_next(1);
    let response = app
        .post_json(
            "/api/auth/request-password-reset",
            &json!({ "email": "retry@example.com" }),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mail = sink.next_mail().await;
    assert_eq!(mail.to, ["retry@example.com"]);
}
