//! The unmodified better-auth client (npm `better-auth@1.7.25`, in Node) signs up, signs
//! in (by password and by emailed code), reads its session and signs out against Bowline.

use serde_json::Value;

use crate::helpers::{spawn_app, spawn_app_with_mail};
use crate::support::node::run_script;
use crate::support::smtp::SmtpSink;

#[tokio::test]
async fn the_better_auth_client_signs_up_in_reads_and_out() {
    let app = spawn_app().await;
    let out = run_script(
        "better-auth",
        "flow.mjs",
        &[&app.base, "client@example.com"],
    )
    .await;

    assert_eq!(out["signUp"]["error"], Value::Null, "{out}");
    assert_eq!(out["signUp"]["hasToken"], true);
    assert_eq!(out["signUp"]["user"]["email"], "client@example.com");
    assert_eq!(
        out["signUpCreatedAtIsDate"], true,
        "timestamps parse as dates"
    );

    assert_eq!(out["duplicate"]["status"], 422);
    assert_eq!(
        out["duplicate"]["code"],
        "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL"
    );
    assert_eq!(out["wrongPassword"]["status"], 401);
    assert_eq!(out["wrongPassword"]["code"], "INVALID_EMAIL_OR_PASSWORD");

    assert_eq!(out["signIn"]["error"], Value::Null, "{out}");
    assert_eq!(out["signIn"]["hasToken"], true);
    assert_eq!(out["signIn"]["redirect"], false);
    assert_eq!(
        out["headerTokenReceived"], true,
        "set-auth-token reached the client"
    );

    assert_eq!(out["session"]["error"], Value::Null, "{out}");
    assert_eq!(out["session"]["email"], "client@example.com");
    assert_eq!(out["session"]["name"], "Ada Lovelace");
    assert_eq!(out["session"]["expiresAtIsDate"], true);
    assert_eq!(out["session"]["userIdMatches"], true);

    assert_eq!(out["signOut"]["error"], Value::Null, "{out}");
    assert_eq!(out["signOut"]["success"], true);
    assert_eq!(out["afterSignOut"]["data"], Value::Null);
}

#[tokio::test]
async fn the_better_auth_client_signs_in_by_emailed_code() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let email = "code-client@example.com";
    let sent = run_script("better-auth", "email-code.mjs", &[&app.base, email, "send"]).await;
    assert_eq!(sent["send"]["error"], Value::Null, "{sent}");
    assert_eq!(sent["send"]["success"], true);
    let mail = sink.next_mail().await;
    let code = mail
        .subject()
        .split(' ')
        .next()
        .unwrap_or_default()
        .to_owned();

    let out = run_script(
        "better-auth",
        "email-code.mjs",
        &[&app.base, email, "sign-in", &code],
    )
    .await;
    assert_eq!(out["wrong"]["status"], 400, "{out}");
    assert_eq!(out["wrong"]["code"], "INVALID_OTP");
    assert_eq!(out["signIn"]["error"], Value::Null, "{out}");
    assert_eq!(out["signIn"]["hasToken"], true);
    assert_eq!(out["signIn"]["emailVerified"], true);
    assert_eq!(out["headerTokenReceived"], true);
    assert_eq!(out["session"]["error"], Value::Null, "{out}");
    assert_eq!(out["session"]["email"], email);
}
