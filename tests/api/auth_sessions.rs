//! Sessions and accounts beyond the basics in `auth_email`: better-auth's rate limits keyed
//! by address and path (sign-up and sign-in are separate budgets).

use bowline::actors::scheduler::{RunOutcome, SchedulerMsg};
use bowline::actors::{ActorKind, ask_slot};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, WAIT, spawn_app_with};

/// A sign-up from `ip` (behind a proxy, as `x-forwarded-for` says).
async fn sign_up_from(app: &TestApp, ip: &str, email: &str) -> reqwest::Response {
    app.client
        .post(app.url("/api/auth/sign-up/email"))
        .header("origin", app.base.as_str())
        .header("x-forwarded-for", ip)
        .json(&json!({ "email": email, "password": "long enough password", "name": "Limit" }))
        .send()
        .await
        .expect("request")
}

/// A sign-in from `ip`.
async fn sign_in_from(app: &TestApp, ip: &str, email: &str) -> reqwest::Response {
    app.client
        .post(app.url("/api/auth/sign-in/email"))
        .header("origin", app.base.as_str())
        .header("x-forwarded-for", ip)
        .json(&json!({ "email": email, "password": "long enough password" }))
        .send()
        .await
        .expect("request")
}

#[tokio::test]
async fn sign_up_and_sign_in_have_separate_budgets_per_address() {
    let app = spawn_app_with(|s| s.auth.rate_limit = true).await;
    let ip = "203.0.113.20";
    for n in 0..3 {
        let response = sign_up_from(&app, ip, &format!("limit{n}@example.com")).await;
        assert_eq!(response.status(), StatusCode::OK, "sign-up {n}");
    }
    let limited = sign_up_from(&app, ip, "limit3@example.com").await;
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers().contains_key("x-retry-after"));
    assert_eq!(
        limited.json::<Value>().await.expect("JSON"),
        json!({ "message": "Too many requests. Please try again later." })
    );
    // Three sign-ups used up the sign-up budget only: sign-in still has its three.
    for n in 0..3 {
        let response = sign_in_from(&app, ip, "limit0@example.com").await;
        assert_eq!(response.status(), StatusCode::OK, "sign-in {n}");
    }
    let limited = sign_in_from(&app, ip, "limit0@example.com").await;
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    // Another address has budgets of its own.
    let other = sign_up_from(&app, "203.0.113.21", "limit4@example.com").await;
    assert_eq!(other.status(), StatusCode::OK);

    // One window per address and path; the scheduler's pruning keeps windows still open.
    let ctx = app.ctx();
    assert_eq!(ctx.limits.tracked(), 3);
    let outcome = ask_slot(&ctx.actors.scheduler, ActorKind::Scheduler, WAIT, |reply| {
        SchedulerMsg::RunNow {
            task: "rate_limits".into(),
            reply,
        }
    })
    .await;
    assert_eq!(outcome.expect("the task runs"), RunOutcome::Completed);
    assert_eq!(ctx.limits.tracked(), 3);
}
