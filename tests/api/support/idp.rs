//! A stand-in identity provider on 127.0.0.1: serves a JWKS (which keys it publishes can
//! change, to test key rotation; it can hold its answers, to play a slow provider) and signs
//! id tokens with the test keys in `tests/fixtures/idtoken`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::sync::watch;
use warp::Filter;

use crate::helpers::WAIT;

const KEY_A_PEM: &str = include_str!("../../fixtures/idtoken/key-a.pem");
const KEY_B_PEM: &str = include_str!("../../fixtures/idtoken/key-b.pem");
const KEY_A_JWK: &str = include_str!("../../fixtures/idtoken/key-a.jwk.json");
const KEY_B_JWK: &str = include_str!("../../fixtures/idtoken/key-b.jwk.json");

/// The test identity provider.
pub struct IdentityProvider {
    /// Where it listens.
    pub addr: SocketAddr,
    published: Arc<RwLock<Vec<&'static str>>>,
    /// JWKS requests received so far (counted on arrival, held or not).
    fetches: Arc<watch::Sender<usize>>,
    /// `false` while answers are held.
    open: Arc<watch::Sender<bool>>,
}

fn jwk(kid: &str) -> Value {
    let text = match kid {
        "key-a" => KEY_A_JWK,
        "key-b" => KEY_B_JWK,
        other => panic!("unknown test key {other}"),
    };
    serde_json::from_str(text).expect("test JWK")
}

impl IdentityProvider {
    /// Starts serving a JWKS with `key-a`.
    pub async fn start() -> Self {
        let published = Arc::new(RwLock::new(vec!["key-a"]));
        let fetches = Arc::new(watch::Sender::new(0));
        let open = Arc::new(watch::Sender::new(true));
        let route = {
            let published = published.clone();
            let fetches = fetches.clone();
            let open = open.clone();
            warp::path!("jwks").and_then(move || {
                let published = published.clone();
                let open = open.subscribe();
                fetches.send_modify(|n| *n += 1);
                async move {
                    let mut open = open;
                    let _ = open.wait_for(|open| *open).await;
                    let keys: Vec<Value> = published
                        .read()
                        .expect("lock")
                        .iter()
                        .map(|k| jwk(k))
                        .collect();
                    Ok::<_, Infallible>(warp::reply::json(&json!({ "keys": keys })))
                }
            })
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind IdP");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(warp::serve(route).incoming(listener).run());
        Self {
            addr,
            published,
            fetches,
            open,
        }
    }

    /// The JWKS URL.
    pub fn jwks_url(&self) -> String {
        format!("http://{}/jwks", self.addr)
    }

    /// Publishes exactly these keys from now on.
    pub fn publish(&self, keys: &[&'static str]) {
        *self.published.write().expect("lock") = keys.to_vec();
    }

    /// How many times the JWKS was fetched.
    pub fn fetches(&self) -> usize {
        *self.fetches.borrow()
    }

    /// Waits (within the tests' wait) until the JWKS was requested `count` times.
    pub async fn wait_for_fetches(&self, count: usize) {
        let mut fetches = self.fetches.subscribe();
        tokio::time::timeout(WAIT, fetches.wait_for(|n| *n >= count))
            .await
            .expect("the JWKS is requested within the wait")
            .expect("IdP running");
    }

    /// From now on, JWKS requests wait without an answer until [`Self::release`].
    pub fn hold(&self) {
        self.open.send_replace(false);
    }

    /// Answers the held JWKS requests and every later one at once.
    pub fn release(&self) {
        self.open.send_replace(true);
    }

    /// An RS256 token with `claims`, signed by test key `kid`.
    pub fn sign(&self, kid: &str, claims: &Value) -> String {
        let pem = match kid {
            "key-a" => KEY_A_PEM,
            "key-b" => KEY_B_PEM,
            other => panic!("unknown test key {other}"),
        };
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(
            &header,
            claims,
            &EncodingKey::from_rsa_pem(pem.as_bytes()).expect("test key"),
        )
        .expect("sign")
    }
}

/// Claims of a valid Google id token for `sub`/`email` and audience `aud`.
pub fn google_claims(aud: &str, sub: &str, email: &str) -> Value {
    let now = chrono::Utc::now().timestamp();
    json!({
        "iss": "https://accounts.google.com",
        "aud": aud,
        "sub": sub,
        "email": email,
        "email_verified": true,
        "name": "Grace Hopper",
        "picture": "https://example.com/grace.png",
        "iat": now,
        "exp": now + 3600,
    })
}

/// Claims of a valid Apple identity token (`email_verified` as Apple sends it: a string).
pub fn apple_claims(aud: &str, sub: &str, email: &str) -> Value {
    let now = chrono::Utc::now().timestamp();
    json!({
        "iss": "https://appleid.apple.com",
        "aud": aud,
        "sub": sub,
        "email": email,
        "email_verified": "true",
        "iat": now,
        "exp": now + 600,
    })
}
