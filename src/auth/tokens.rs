//! Random identifiers and tokens, hashes for storage, and better-auth's cookie signatures:
//! `<token>.<base64(HMAC-SHA256(secret, token))>`.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

pub use crate::domain::ids::{new_id, random_alphanumeric};

/// A new session token.
pub fn new_session_token() -> String {
    random_alphanumeric(32)
}

/// HMAC-SHA256 over `value` (HMAC takes keys of any length, so this is always `Some`).
fn mac(secret: &str, value: &str) -> Option<HmacSha256> {
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(secret.as_bytes()).ok()?;
    mac.update(value.as_bytes());
    Some(mac)
}

/// The signature better-auth appends to a cookie value: standard base64 with padding.
pub fn sign(secret: &str, value: &str) -> String {
    mac(secret, value)
        .map(|mac| STANDARD.encode(mac.finalize().into_bytes()))
        .unwrap_or_default()
}

/// HMAC-SHA256 of `value` under `secret`, in hex: how a short secret (an emailed code) is
/// stored, so that whoever reads the database cannot test guesses against it.
pub fn keyed_digest(secret: &str, value: &str) -> String {
    mac(secret, value)
        .map(|mac| hex::encode(mac.finalize().into_bytes()))
        .unwrap_or_default()
}

/// Whether `digest` is [`keyed_digest`] of `value`, compared in constant time.
pub fn keyed_digest_matches(secret: &str, value: &str, digest: &str) -> bool {
    match (hex::decode(digest), mac(secret, value)) {
        (Ok(bytes), Some(mac)) => mac.verify_slice(&bytes).is_ok(),
        _ => false,
    }
}

/// `<token>.<signature>`.
pub fn signed(secret: &str, token: &str) -> String {
    format!("{token}.{}", sign(secret, token))
}

/// Checks a `<value>.<signature>` string (split at the last `.`, signature in standard or
/// URL-safe base64) and returns the value when the signature is right.
pub fn verify_signed<'a>(secret: &str, signed: &'a str) -> Option<&'a str> {
    let (value, signature) = signed.rsplit_once('.')?;
    let bytes = STANDARD
        .decode(signature)
        .or_else(|_| URL_SAFE.decode(signature))
        .or_else(|_| URL_SAFE_NO_PAD.decode(signature))
        .ok()?;
    mac(secret, value)?.verify_slice(&bytes).ok()?;
    Some(value)
}

/// Percent-decodes `value` when it contains `%` (cookie and bearer values may be encoded).
pub fn percent_decoded(value: &str) -> String {
    if value.contains('%') {
        percent_encoding::percent_decode_str(value)
            .decode_utf8_lossy()
            .into_owned()
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keyed_digests_match_only_their_value_and_secret() {
        let digest = keyed_digest("secret", "a@example.com:123456");
        assert_eq!(digest.len(), 64);
        assert!(keyed_digest_matches(
            "secret",
            "a@example.com:123456",
            &digest
        ));
        assert!(!keyed_digest_matches(
            "secret",
            "a@example.com:123457",
            &digest
        ));
        assert!(!keyed_digest_matches(
            "other",
            "a@example.com:123456",
            &digest
        ));
        assert!(!keyed_digest_matches(
            "secret",
            "a@example.com:123456",
            "not hex"
        ));
    }

    #[test]
    fn signatures_round_trip_and_reject_tampering() {
        let signed_value = signed("secret", "abc");
        let (_, signature) = signed_value.rsplit_once('.').expect("dot");
        assert_eq!(signature.len(), 44);
        assert!(signature.ends_with('='));
        assert_eq!(verify_signed("secret", &signed_value), Some("abc"));
        assert_eq!(verify_signed("other", &signed_value), None);
        assert_eq!(verify_signed("secret", "abd.".to_owned().as_str()), None);
        let tampered = signed_value.replace("abc", "abd");
        assert_eq!(verify_signed("secret", &tampered), None);
        let url_safe = signed_value.replace('+', "-").replace('/', "_");
        assert_eq!(verify_signed("secret", &url_safe), Some("abc"));
    }

    #[test]
    fn ids_are_32_alphanumerics() {
        let id = new_id();
        assert_eq!(id.len(), 32);
        assert!(id.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(new_id(), id);
    }
}
