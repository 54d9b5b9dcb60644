//! The unmodified better-auth client (npm `better-auth@1.7.25`, in Node) signs up, signs
//! in, reads its session and signs out against Bowline.

use serde_json::Value;

use crate::helpers::spawn_app;
use crate::support::node::run_script;

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
