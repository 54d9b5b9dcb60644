//! The server's web push identity: VAPID (RFC 8292).
//!
//! Each request to a push service carries `Authorization: vapid t=<JWT>, k=<public key>`.
//! The JWT is ES256 (P-256, SHA-256) over `{"aud": <push service origin>, "exp": <unix
//! seconds>, "sub": <contact>}`; the key is the one browsers were given as
//! `applicationServerKey` when they subscribed, so a push service only forwards messages
//! signed by the server the subscription belongs to.
//!
//! The keys come from `VAPID_PUBLIC_KEY` (base64url of the 65-byte uncompressed point) and
//! `VAPID_PRIVATE_KEY` (base64url of the 32-byte scalar); [`generate_key_pair`] makes a
//! new pair in that form.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::{PublicKey, SecretKey};

use super::decode_base64url;
use super::encryption::random_secret_key;

/// The longest a token may stay valid: push services refuse an `exp` more than 24 hours
/// ahead.
pub const MAX_TOKEN_LIFETIME_SECS: i64 = 24 * 60 * 60;

/// The JWT header of every token, base64url: `{"typ":"JWT","alg":"ES256"}`.
const JWT_HEADER: &str = r#"{"typ":"JWT","alg":"ES256"}"#;

/// Why the configured VAPID identity cannot be used (start-up refuses it with this message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VapidError {
    /// The public key is not base64url.
    #[error("VAPID_PUBLIC_KEY is not base64url")]
    PublicKeyNotBase64url,
    /// The public key does not decode to 65 bytes.
    #[error("VAPID_PUBLIC_KEY is {0} bytes, not a 65-byte uncompressed P-256 point")]
    PublicKeyWrongLength(usize),
    /// The public key is 65 bytes but not an uncompressed point on P-256.
    #[error("VAPID_PUBLIC_KEY is not an uncompressed point on the P-256 curve")]
    PublicKeyNotOnCurve,
    /// The private key is not base64url.
    #[error("VAPID_PRIVATE_KEY is not base64url")]
    PrivateKeyNotBase64url,
    /// The private key does not decode to 32 bytes.
    #[error("VAPID_PRIVATE_KEY is {0} bytes, not a 32-byte P-256 private key")]
    PrivateKeyWrongLength(usize),
    /// The private key is 32 bytes but not a valid scalar (zero, or not below the order).
    #[error("VAPID_PRIVATE_KEY is not a valid P-256 private key")]
    PrivateKeyOutOfRange,
    /// The two keys are valid but not one pair.
    #[error(
        "VAPID_PRIVATE_KEY does not belong to VAPID_PUBLIC_KEY: set both from one generated pair"
    )]
    KeyMismatch,
    /// The subject is neither a `mailto:` address nor an `https:` URL.
    #[error("VAPID_SUBJECT must be a mailto: address or an https: URL, not {0:?}")]
    InvalidSubject(String),
}

/// The server's VAPID key pair and contact, checked: the private key belongs to the public
/// key and the subject is a `mailto:` or `https:` URI.
#[derive(Clone)]
pub struct Vapid {
    /// The private key (ES256 signer).
    signing_key: SigningKey,
    /// The public key, base64url without padding (the `k=` parameter).
    public_key: String,
    /// The contact (`sub` claim).
    subject: String,
}

impl std::fmt::Debug for Vapid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vapid")
            .field("public_key", &self.public_key)
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

impl Vapid {
    /// The identity of the configured `public_key` (base64url, 65-byte uncompressed point),
    /// `private_key` (base64url, 32-byte scalar) and `subject` (`mailto:` address or
    /// `https:` URL). Refuses keys that are malformed or not one pair, and any other subject.
    pub fn new(public_key: &str, private_key: &str, subject: &str) -> Result<Self, VapidError> {
        let point = decode_base64url(public_key).ok_or(VapidError::PublicKeyNotBase64url)?;
        if point.len() != 65 {
            return Err(VapidError::PublicKeyWrongLength(point.len()));
        }
        if point[0] != 0x04 {
            return Err(VapidError::PublicKeyNotOnCurve);
        }
        let public =
            PublicKey::from_sec1_bytes(&point).map_err(|_| VapidError::PublicKeyNotOnCurve)?;

        let scalar = decode_base64url(private_key).ok_or(VapidError::PrivateKeyNotBase64url)?;
        let scalar: [u8; 32] = scalar
            .as_slice()
            .try_into()
            .map_err(|_| VapidError::PrivateKeyWrongLength(scalar.len()))?;
        let secret =
            SecretKey::from_bytes(&scalar.into()).map_err(|_| VapidError::PrivateKeyOutOfRange)?;
        if secret.public_key() != public {
            return Err(VapidError::KeyMismatch);
        }

        check_subject(subject)?;
        Ok(Self {
            signing_key: SigningKey::from(&secret),
            public_key: URL_SAFE_NO_PAD.encode(&point),
            subject: subject.to_owned(),
        })
    }

    /// The public key, base64url without padding: the `applicationServerKey` browsers
    /// subscribe with (`pushPublicKey` of `GET /api/v1/server`).
    pub fn public_key(&self) -> &str {
        &self.public_key
    }

    /// The contact push services may use (`sub` claim).
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The `Authorization` header value for a request to the push service at
    /// `endpoint_origin` (scheme, host and port of the subscription's endpoint, as
    /// [`endpoint_origin`] gives it): `vapid t=<JWT>, k=<public key>`. The token expires at
    /// `expires_at` (unix seconds), brought back to 24 hours from now if it is later.
    pub fn authorization(&self, endpoint_origin: &str, expires_at: i64) -> String {
        let latest = chrono::Utc::now()
            .timestamp()
            .saturating_add(MAX_TOKEN_LIFETIME_SECS);
        let token = self.token(endpoint_origin, expires_at.min(latest));
        format!("vapid t={token}, k={}", self.public_key)
    }

    /// The signed JWT (`header.claims.signature`, each part base64url without padding).
    fn token(&self, audience: &str, expires_at: i64) -> String {
        let claims = serde_json::json!({
            "aud": audience,
            "exp": expires_at,
            "sub": self.subject,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(JWT_HEADER),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        // ES256: ECDSA over SHA-256 with an RFC 6979 nonce; JWS wants r || s (64 bytes).
        let signature: Signature = self.signing_key.sign(signing_input.as_bytes());
        format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        )
    }
}

/// The origin (`https://host[:port]`) of a push subscription's endpoint URL, the `aud` of
/// its tokens; `None` if the endpoint is not an absolute URL with a host.
pub fn endpoint_origin(endpoint: &str) -> Option<String> {
    let url = url::Url::parse(endpoint).ok()?;
    let origin = url.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

/// A `mailto:` address or an `https://` URL with a host, without spaces or control
/// characters.
fn check_subject(subject: &str) -> Result<(), VapidError> {
    let invalid = || VapidError::InvalidSubject(subject.to_owned());
    if subject.is_empty() || subject.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid());
    }
    let scheme_end = subject.find(':').ok_or_else(invalid)?;
    let (scheme, rest) = subject.split_at(scheme_end);
    let rest = &rest[1..];
    if scheme.eq_ignore_ascii_case("mailto") {
        let (local, domain) = rest.split_once('@').ok_or_else(invalid)?;
        if local.is_empty() || domain.is_empty() {
            return Err(invalid());
        }
        return Ok(());
    }
    if scheme.eq_ignore_ascii_case("https") && rest.starts_with("//") {
        let url = url::Url::parse(subject).map_err(|_| invalid())?;
        if url.host_str().is_some_and(|host| !host.is_empty()) {
            return Ok(());
        }
    }
    Err(invalid())
}

/// A new VAPID key pair, base64url without padding: what `VAPID_PUBLIC_KEY` and
/// `VAPID_PRIVATE_KEY` take.
#[derive(Clone)]
pub struct VapidKeyPair {
    /// The public key: a 65-byte uncompressed P-256 point.
    pub public_key: String,
    /// The private key: a 32-byte P-256 scalar.
    pub private_key: String,
}

impl std::fmt::Debug for VapidKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VapidKeyPair")
            .field("public_key", &self.public_key)
            .finish_non_exhaustive()
    }
}

/// A fresh random VAPID key pair (from the thread's CSPRNG).
pub fn generate_key_pair() -> VapidKeyPair {
    let secret = random_secret_key();
    VapidKeyPair {
        public_key: URL_SAFE_NO_PAD.encode(secret.public_key().to_encoded_point(false)),
        private_key: URL_SAFE_NO_PAD.encode(secret.to_bytes()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier;

    const SUBJECT: &str = "mailto:ops@example.org";
    const ORIGIN: &str = "https://updates.push.services.mozilla.com";

    fn decode(part: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(part).unwrap()
    }

    /// The token of an `Authorization` value and its key, checked for form.
    fn split(header: &str) -> (String, String) {
        let rest = header.strip_prefix("vapid t=").unwrap();
        let (token, key) = rest.split_once(", k=").unwrap();
        (token.to_owned(), key.to_owned())
    }

    #[test]
    fn generated_pairs_load_and_differ() {
        let one = generate_key_pair();
        let two = generate_key_pair();
        assert_ne!(one.private_key, two.private_key);
        assert_eq!(decode(&one.public_key).len(), 65);
        assert_eq!(decode(&one.public_key)[0], 0x04);
        assert_eq!(decode(&one.private_key).len(), 32);
        let vapid = Vapid::new(&one.public_key, &one.private_key, SUBJECT).unwrap();
        assert_eq!(vapid.public_key(), one.public_key);
        assert_eq!(vapid.subject(), SUBJECT);
        assert!(!format!("{vapid:?}").contains(&one.private_key));
        assert!(!format!("{one:?}").contains(&one.private_key));
    }

    #[test]
    fn the_token_is_an_es256_jwt_the_public_key_verifies() {
        let pair = generate_key_pair();
        let vapid = Vapid::new(&pair.public_key, &pair.private_key, SUBJECT).unwrap();
        let exp = chrono::Utc::now().timestamp() + 12 * 60 * 60;
        let header = vapid.authorization(ORIGIN, exp);
        let (token, key) = split(&header);
        assert_eq!(key, pair.public_key);

        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| !p.contains('=')), "no padding");
        assert_eq!(decode(parts[0]), br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims: serde_json::Value = serde_json::from_slice(&decode(parts[1])).unwrap();
        assert_eq!(
            claims,
            serde_json::json!({"aud": ORIGIN, "exp": exp, "sub": SUBJECT})
        );

        let signature = decode(parts[2]);
        assert_eq!(signature.len(), 64, "raw r || s");
        let verifying = VerifyingKey::from_sec1_bytes(&decode(&key)).unwrap();
        let signature = Signature::from_slice(&signature).unwrap();
        let signing_input = format!("{}.{}", parts[0], parts[1]);
        verifying
            .verify(signing_input.as_bytes(), &signature)
            .expect("the signature verifies with the public key");
        assert!(
            verifying
                .verify(format!("{signing_input}x").as_bytes(), &signature)
                .is_err()
        );

        // A second implementation (the one that checks identity providers' tokens) agrees.
        let point = decode(&key);
        let decoding = jsonwebtoken::DecodingKey::from_ec_components(
            &URL_SAFE_NO_PAD.encode(&point[1..33]),
            &URL_SAFE_NO_PAD.encode(&point[33..]),
        )
        .unwrap();
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
        validation.set_audience(&[ORIGIN]);
        let data = jsonwebtoken::decode::<serde_json::Value>(&token, &decoding, &validation)
            .expect("jsonwebtoken accepts the token");
        assert_eq!(data.claims["sub"], SUBJECT);

        // Another key does not verify it.
        let other = generate_key_pair();
        let other = VerifyingKey::from_sec1_bytes(&decode(&other.public_key)).unwrap();
        assert!(other.verify(signing_input.as_bytes(), &signature).is_err());
    }

    #[test]
    fn expiry_is_at_most_24_hours_ahead() {
        let pair = generate_key_pair();
        let vapid = Vapid::new(&pair.public_key, &pair.private_key, SUBJECT).unwrap();
        let before = chrono::Utc::now().timestamp();
        let (token, _) = split(&vapid.authorization(ORIGIN, i64::MAX));
        let after = chrono::Utc::now().timestamp();
        let claims = token.split('.').nth(1).unwrap();
        let claims: serde_json::Value = serde_json::from_slice(&decode(claims)).unwrap();
        let exp = claims["exp"].as_i64().unwrap();
        assert!(exp >= before + MAX_TOKEN_LIFETIME_SECS);
        assert!(exp <= after + MAX_TOKEN_LIFETIME_SECS);
    }

    #[test]
    fn a_mismatched_or_malformed_pair_is_refused() {
        let one = generate_key_pair();
        let two = generate_key_pair();
        let err = Vapid::new(&one.public_key, &two.private_key, SUBJECT).unwrap_err();
        assert_eq!(err, VapidError::KeyMismatch);
        assert!(
            err.to_string()
                .contains("does not belong to VAPID_PUBLIC_KEY")
        );

        let new = |public: &str, private: &str| Vapid::new(public, private, SUBJECT).unwrap_err();
        assert_eq!(
            new("not base64!", &one.private_key),
            VapidError::PublicKeyNotBase64url
        );
        assert_eq!(
            new(&one.private_key, &one.private_key),
            VapidError::PublicKeyWrongLength(32)
        );
        let mut off_curve = decode(&one.public_key);
        off_curve[64] ^= 1;
        assert_eq!(
            new(&URL_SAFE_NO_PAD.encode(&off_curve), &one.private_key),
            VapidError::PublicKeyNotOnCurve
        );
        assert_eq!(
            new(&one.public_key, "***"),
            VapidError::PrivateKeyNotBase64url
        );
        assert_eq!(
            new(&one.public_key, &one.public_key),
            VapidError::PrivateKeyWrongLength(65)
        );
        assert_eq!(
            new(&one.public_key, &URL_SAFE_NO_PAD.encode([0u8; 32])),
            VapidError::PrivateKeyOutOfRange
        );
        assert_eq!(
            new(&one.public_key, &URL_SAFE_NO_PAD.encode([0xffu8; 32])),
            VapidError::PrivateKeyOutOfRange
        );
        // Padded keys (as some generators print them) are the same keys.
        assert!(
            Vapid::new(
                &format!("{}=", one.public_key),
                &format!("{}=", one.private_key),
                SUBJECT
            )
            .is_ok()
        );
    }

    #[test]
    fn subjects_are_mailto_or_https() {
        let pair = generate_key_pair();
        let new = |subject: &str| Vapid::new(&pair.public_key, &pair.private_key, subject);
        for good in [
            "mailto:ops@example.org",
            "MAILTO:ops@example.org",
            "https://calendar.example.org",
            "https://calendar.example.org/contact",
        ] {
            assert!(new(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "ops@example.org",
            "mailto:",
            "mailto:ops",
            "mailto:@example.org",
            "mailto: ops@example.org",
            "http://calendar.example.org",
            "https://",
            "https:calendar",
            "ftp://example.org",
            "https://calendar.example.org\n",
        ] {
            assert_eq!(
                new(bad).unwrap_err(),
                VapidError::InvalidSubject(bad.to_owned()),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn endpoint_origins() {
        assert_eq!(
            endpoint_origin("https://fcm.googleapis.com/fcm/send/abc:def").as_deref(),
            Some("https://fcm.googleapis.com")
        );
        assert_eq!(
            endpoint_origin("https://push.example.org:8443/p/1?x=y").as_deref(),
            Some("https://push.example.org:8443")
        );
        assert_eq!(
            endpoint_origin("https://web.push.apple.com:443/QO").as_deref(),
            Some("https://web.push.apple.com")
        );
        assert_eq!(endpoint_origin("not a url"), None);
        assert_eq!(endpoint_origin("data:text/plain,x"), None);
    }
}
