//! The self-hosted pages in a real headless Chromium: open the emailed link, submit, and
//! check that the password changed / the account is gone.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{spawn_app_with, spawn_app_with_mail};
use crate::support::browser::Browser;
use crate::support::smtp::SmtpSink;

#[tokio::test]
async fn the_reset_page_changes_the_password_in_a_browser() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let user = app.sign_up("browser-reset@example.com").await;
    app.post_json(
        "/api/auth/request-password-reset",
        &json!({ "email": user.email }),
    )
    .await;
    let link = sink
        .next_mail()
        .await
        .link_starting_with(&format!("{}/reset-password?token=", app.base));

    let browser = Browser::start().await;
    browser.goto(&link).await;
    // A mismatch is caught on the page, before anything is sent.
    browser.type_into("#new-password", "fresh password 1").await;
    browser
        .type_into("#confirm-password", "fresh password 2")
        .await;
    browser.click("#submit").await;
    let mismatch = browser.text("#status[data-state=error]").await;
    assert!(mismatch.contains("not the same"), "{mismatch}");

    browser.goto(&link).await;
    browser.type_into("#new-password", "fresh password 1").await;
    browser
        .type_into("#confirm-password", "fresh password 1")
        .await;
    browser.click("#submit").await;
    let done = browser.text("#status[data-state=success]").await;
    assert!(done.contains("password has been changed"), "{done}");

    let signed_in = app.sign_in(&user.email, "fresh password 1").await;
    assert_eq!(signed_in.status(), StatusCode::OK);

    // The same link again: the page shows the failure state.
    browser.goto(&link).await;
    browser.type_into("#new-password", "another password").await;
    browser
        .type_into("#confirm-password", "another password")
        .await;
    browser.click("#submit").await;
    let failed = browser.text("#status[data-state=error]").await;
    assert!(failed.contains("expired or was already used"), "{failed}");
}

#[tokio::test]
async fn the_delete_page_deletes_the_account_in_a_browser() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let user = app.sign_up("browser-delete@example.com").await;
    let requested = app
        .as_user(reqwest::Method::DELETE, "/api/v1/users", &user)
        .send()
        .await
        .expect("request");
    assert_eq!(requested.status(), StatusCode::OK);
    let link = sink
        .next_mail()
        .await
        .link_starting_with(&format!("{}/delete-account?token=", app.base));

    let browser = Browser::start().await;
    browser.goto(&link).await;
    browser.click("#confirm").await;
    let done = browser.text("#status[data-state=success]").await;
    assert!(done.contains("deleted"), "{done}");

    let gone = app.sign_in(&user.email, &user.password).await;
    assert_eq!(gone.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_email_verified_page_shows_success_and_failure() {
    let app = spawn_app_with(|_| {}).await;
    let browser = Browser::start().await;
    browser.goto(&app.url("/email-verified")).await;
    assert!(
        browser
            .text("#status[data-state=success]")
            .await
            .contains("verified")
    );
    browser
        .goto(&app.url("/email-verified?error=TOKEN_EXPIRED"))
        .await;
    assert!(
        browser
            .text("#status[data-state=error]")
            .await
            .contains("expired")
    );
}
