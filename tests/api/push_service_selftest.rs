//! The test push service (`support::push_service`) on its own, before Bowline sends to it:
//! the npm `web-push` package (`tests/clients/push-service/send.mjs`) sends pushes over TLS,
//! trusting only the service's test CA; the service checks each VAPID token against the
//! subscription's key, decrypts the aes128gcm body and hands back the plaintext.

use serde_json::Value;

use crate::helpers::WAIT;
use crate::support::node::run_script;
use crate::support::push_service::{PushService, Subscription};

/// A VAPID key pair from web-push: `(public, private)`, base64url.
async fn vapid_keys() -> (String, String) {
    let keys = run_script("push-service", "send.mjs", &["keys"]).await;
    let field = |name: &str| {
        keys[name]
            .as_str()
            .unwrap_or_else(|| panic!("no {name}: {keys}"))
            .to_owned()
    };
    (field("publicKey"), field("privateKey"))
}

/// Sends `payload` with web-push, signed with `keys`; returns `{statusCode, body}`.
async fn send(
    service: &PushService,
    subscription: &Subscription,
    keys: &(String, String),
    payload: &str,
) -> Value {
    let ca_file = service.ca_file().to_str().expect("UTF-8 path");
    let args = [
        "send",
        ca_file,
        &subscription.endpoint,
        &subscription.p256dh,
        &subscription.auth,
        &keys.0,
        &keys.1,
        payload,
    ];
    tokio::time::timeout(WAIT, run_script("push-service", "send.mjs", &args))
        .await
        .unwrap_or_else(|_| panic!("web-push did not finish within {WAIT:?}"))
}

#[tokio::test]
async fn a_push_sent_over_tls_arrives_decrypted() {
    let service = PushService::start().await;
    let keys = vapid_keys().await;
    let subscription = service.subscribe(&keys.0).await;

    assert!(
        service.origin().starts_with("https://127.0.0.1:"),
        "{}",
        service.origin()
    );
    assert_eq!(
        subscription.endpoint,
        format!("{}/notify/{}", service.origin(), subscription.client_hash)
    );
    assert_eq!(service.messages(&subscription).await, Vec::<String>::new());
    // The CA file is one Bowline's OUTBOUND_CA_FILE reader takes.
    let ca_file = service.ca_file().to_str().expect("UTF-8 path");
    let roots = bowline::providers::outbound::read_ca_file(ca_file).expect("CA file");
    assert_eq!(roots.len(), 1);

    let first = r#"{"title":"Standup","body":"in 10 minutes — room 4"}"#;
    let second = "second push";
    for payload in [first, second] {
        let sent = send(&service, &subscription, &keys, payload).await;
        assert_eq!(sent["statusCode"], 201, "{sent}\n{}", service.stderr());
    }

    let messages = service.wait_for_messages(&subscription, 2, WAIT).await;
    assert_eq!(messages, [first, second]);
}

#[tokio::test]
async fn a_push_signed_with_another_key_is_refused_and_an_expired_subscription_answers_410() {
    let service = PushService::start().await;
    let keys = vapid_keys().await;
    let other_keys = vapid_keys().await;
    let subscription = service.subscribe(&keys.0).await;
    let other = service.subscribe(&keys.0).await;
    assert_ne!(subscription.client_hash, other.client_hash);

    let forged = send(&service, &subscription, &other_keys, "forged").await;
    assert_eq!(forged["statusCode"], 400, "{forged}");

    service.expire(&subscription).await;
    let gone = send(&service, &subscription, &keys, "too late").await;
    assert_eq!(gone["statusCode"], 410, "{gone}");

    // The other subscription still takes pushes, and each keeps its own.
    let sent = send(&service, &other, &keys, "still here").await;
    assert_eq!(sent["statusCode"], 201, "{sent}\n{}", service.stderr());
    assert_eq!(
        service.wait_for_messages(&other, 1, WAIT).await,
        ["still here"]
    );
    assert_eq!(service.messages(&subscription).await, Vec::<String>::new());
}
