//! A stand-in identity provider on 127.0.0.1: serves a JWKS (which keys it publishes can
//! change, to test key rotation) and signs id tokens with the test keys in
//! `tests/fixtures/idtoken`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use warp::Filter;

const KEY_A_PEM: &str = include_str!("../../fixtures/idtoken/key-a.pem");
const KEY_B_PEM: &str = include_str!("../../fixtures/idtoken/key-b.pem");
const KEY_A_JWK: &str = include_str!("../../fixtures/idtoken/key-a.jwk.json");
const KEY_B_JWK: &str = include_str!("../../fixtures/idtoken/key-b.jwk.json");

/// The test identity provider.
pub struct IdentityProvider {
    /// Where it listens.
    pub addr: SocketAddr,
    published: Arc<RwLock<Vec<&'static str>>>,
    fetches: Arc<AtomicUsize>,
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
        let fetches = Arc::new(AtomicUsize::new(0));
        let route = {
            let published = published.clone();
            let fetches = fetches.clone();
            warp::path!("jwks").map(move || {
                fetches.fetch_add(1, Ordering::SeqCst);
                let keys: Vec<Value> = published
                    .read()
                    .expect("lock")
                    .iter()
                    .map(|k| jwk(k))
                    .collect();
                warp::reply::json(&json!({ "keys": keys }))
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
        self.fetches.load(Ordering::SeqCst)
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
