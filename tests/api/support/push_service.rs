//! A real web push service for the tests: the npm package `web-push-testing` (its express
//! app, served over TLS by `tests/clients/push-service/serve.mjs`) on 127.0.0.1, port 0. It
//! hands out subscriptions bound to a VAPID public key, checks each push's VAPID token
//! (RFC 8292) against that key, decrypts its aes128gcm (RFC 8291) or aesgcm body and keeps the
//! plaintext for the test to read. Pushes answer 201, 400 when anything is wrong (headers,
//! token, decryption; the reason goes to the service's stderr) and 410 once the subscription
//! has been expired.
//!
//! Its certificate (for `127.0.0.1` and `localhost`) chains to a test CA made for each
//! service, written to [`PushService::ca_file`]: Bowline trusts it through
//! `OUTBOUND_CA_FILE` (`outbound.ca_file`). A push's body is read as bytes only when its
//! `Content-Type` is `application/octet-stream`, as web push senders send it.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use super::node::{client_dir, ensure_installed};

/// How long the service may take to start listening (Node loads express first).
const START_WAIT: Duration = Duration::from_secs(30);
/// The time limit of one request to the service.
const REQUEST_WAIT: Duration = Duration::from_secs(10);
/// How often [`PushService::wait_for_messages`] asks.
const POLL_EVERY: Duration = Duration::from_millis(25);

/// A push subscription the service handed out (what a browser's `PushSubscription` holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// `https://127.0.0.1:<port>/notify/<client_hash>`.
    pub endpoint: String,
    /// The user agent's P-256 public key, uncompressed point, base64url without padding.
    pub p256dh: String,
    /// The 16-byte authentication secret, base64url without padding.
    pub auth: String,
    /// The service's name for the subscription.
    pub client_hash: String,
}

/// The running service; stopped when dropped (and when the test process ends, as its
/// standard input closes).
#[derive(Debug)]
pub struct PushService {
    origin: String,
    ca_file: PathBuf,
    http: reqwest::Client,
    stderr: Arc<Mutex<String>>,
    _child: Child,
    _stdin: ChildStdin,
    _dir: tempfile::TempDir,
}

#[derive(Deserialize)]
struct Data<T> {
    data: T,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Subscribed {
    endpoint: String,
    keys: Keys,
    client_hash: String,
}

#[derive(Deserialize)]
struct Keys {
    p256dh: String,
    auth: String,
}

#[derive(Deserialize)]
struct Notifications {
    messages: Vec<String>,
}

impl PushService {
    /// Makes a test CA and the service's certificate, installs the npm package if needed and
    /// starts the service; returns once it listens.
    pub async fn start() -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        ensure_installed("push-service").await;

        let dir = tempfile::Builder::new()
            .prefix("bowline-push-service-")
            .tempdir()
            .expect("temporary directory for the push service");
        let (ca_pem, cert_pem, key_pem) = certificates();
        let ca_file = dir.path().join("ca.pem");
        let cert_file = dir.path().join("cert.pem");
        let key_file = dir.path().join("key.pem");
        std::fs::write(&ca_file, &ca_pem).expect("write ca.pem");
        std::fs::write(&cert_file, &cert_pem).expect("write cert.pem");
        std::fs::write(&key_file, &key_pem).expect("write key.pem");

        let client = client_dir("push-service");
        let mut child = Command::new("node")
            .arg(client.join("serve.mjs"))
            .arg(&key_file)
            .arg(&cert_file)
            .current_dir(&client)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs (the push service needs Node.js)");
        let stdin = child.stdin.take().expect("piped stdin");
        let stderr = Arc::new(Mutex::new(String::new()));
        let stderr_done = tokio::spawn(collect(
            child.stderr.take().expect("piped stderr"),
            stderr.clone(),
        ));
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();

        let first = tokio::time::timeout(START_WAIT, stdout.next_line()).await;
        let port = match &first {
            Ok(Ok(Some(line))) => serde_json::from_str::<Value>(line)
                .ok()
                .and_then(|value| value["port"].as_u64())
                .and_then(|port| u16::try_from(port).ok()),
            _ => None,
        };
        let Some(port) = port else {
            let _ = child.kill().await;
            let _ = tokio::time::timeout(REQUEST_WAIT, stderr_done).await;
            panic!(
                "the push service did not start ({first:?}); its stderr:\n{}",
                stderr.lock().expect("stderr buffer")
            );
        };
        // Anything else it prints is the package's own logging: keep it with stderr.
        tokio::spawn(async move {
            while let Ok(Some(line)) = stdout.next_line().await {
                eprintln!("push service: {line}");
            }
        });

        let http = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("test CA")])
            .no_proxy()
            .timeout(REQUEST_WAIT)
            .build()
            .expect("HTTP client for the push service");
        Self {
            origin: format!("https://127.0.0.1:{port}"),
            ca_file,
            http,
            stderr,
            _child: child,
            _stdin: stdin,
            _dir: dir,
        }
    }

    /// The PEM file of the test CA the service's certificate chains to (`OUTBOUND_CA_FILE`).
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// `https://127.0.0.1:<port>`, the origin of every endpoint.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// A new subscription for pushes signed with the VAPID key pair whose public key
    /// (uncompressed P-256 point, base64url) is `vapid_public_key`.
    pub async fn subscribe(&self, vapid_public_key: &str) -> Subscription {
        let subscribed: Subscribed = self
            .call(
                "/subscribe",
                json!({ "applicationServerKey": vapid_public_key }),
            )
            .await;
        Subscription {
            endpoint: subscribed.endpoint,
            p256dh: subscribed.keys.p256dh,
            auth: subscribed.keys.auth,
            client_hash: subscribed.client_hash,
        }
    }

    /// The decrypted payloads (UTF-8 text) the subscription received so far, oldest first.
    pub async fn messages(&self, subscription: &Subscription) -> Vec<String> {
        let notifications: Notifications = self
            .call(
                "/get-notifications",
                json!({ "clientHash": subscription.client_hash }),
            )
            .await;
        notifications.messages
    }

    /// Waits until the subscription has received at least `count` pushes and returns all of
    /// them (decrypted, oldest first); panics with what did arrive after `timeout`.
    pub async fn wait_for_messages(
        &self,
        subscription: &Subscription,
        count: usize,
        timeout: Duration,
    ) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let messages = self.messages(subscription).await;
            if messages.len() >= count {
                return messages;
            }
            if Instant::now() >= deadline {
                panic!(
                    "{} of {count} pushes reached {} within {timeout:?}: {messages:#?}\n\
                     push service stderr:\n{}",
                    messages.len(),
                    subscription.endpoint,
                    self.stderr()
                );
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// Expires the subscription: pushes to it answer 410 Gone from now on.
    pub async fn expire(&self, subscription: &Subscription) {
        let url = format!(
            "{}/expire-subscription/{}",
            self.origin, subscription.client_hash
        );
        let response = self.http.post(&url).send().await;
        match response {
            Ok(response) if response.status() == reqwest::StatusCode::OK => {}
            other => panic!(
                "POST {url}: {other:?}\npush service stderr:\n{}",
                self.stderr()
            ),
        }
    }

    /// What the service wrote to stderr so far (the reasons of its 400 answers).
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("stderr buffer").clone()
    }

    /// POSTs `body` to `path` and returns the answer's `data`.
    async fn call<T: for<'de> Deserialize<'de>>(&self, path: &str, body: Value) -> T {
        let url = format!("{}{path}", self.origin);
        let result = async {
            let response = self.http.post(&url).json(&body).send().await?;
            let status = response.status();
            let text = response.text().await?;
            Ok::<_, reqwest::Error>((status, text))
        }
        .await;
        match result {
            Ok((status, text)) if status.is_success() => {
                match serde_json::from_str::<Data<T>>(&text) {
                    Ok(answer) => answer.data,
                    Err(err) => panic!("POST {url}: unexpected answer ({err}): {text}"),
                }
            }
            other => panic!(
                "POST {url} {body}: {other:?}\npush service stderr:\n{}",
                self.stderr()
            ),
        }
    }
}

/// A new test CA, and a certificate it signed for `127.0.0.1` and `localhost` with its key:
/// `(ca.pem, cert.pem, key.pem)`.
fn certificates() -> (String, String, String) {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "Bowline test push service CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
    let issuer = Issuer::new(ca, ca_key);

    let key = KeyPair::generate().expect("service key");
    let mut leaf = CertificateParams::new(vec!["localhost".to_owned()]).expect("parameters");
    leaf.subject_alt_names
        .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    leaf.distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    leaf.is_ca = IsCa::ExplicitNoCa;
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.use_authority_key_identifier_extension = true;
    let cert = leaf.signed_by(&key, &issuer).expect("service certificate");

    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

/// Appends everything `from` yields to `into`, line by line, until it closes.
async fn collect(from: impl AsyncRead + Unpin, into: Arc<Mutex<String>>) {
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut buffer = into.lock().expect("stderr buffer");
        buffer.push_str(&line);
        buffer.push('\n');
    }
}
