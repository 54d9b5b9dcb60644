//! [`SecretBox`]: AES-256-GCM sealing of the credentials Bowline must be able to read back
//! (CalDAV passwords, federation roaming tokens), under the key `CALDAV_ENC_KEY`.
//!
//! Each value gets a fresh random 12-byte nonce and is stored as
//! `base64(iv):base64(tag):base64(ciphertext)`, the form the original implementation uses,
//! so a database moved between the two stays readable.

use aes_gcm::aead::{AeadInOut, Generate, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// Seals and opens values under one key.
#[derive(Clone)]
pub struct SecretBox {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

/// A sealed value could not be opened (another key, or damaged).
#[derive(Debug, thiserror::Error)]
#[error("the stored credential cannot be decrypted with the configured key")]
pub struct Unreadable;

impl SecretBox {
    /// A box for the key given as 64 hex characters (checked when the configuration loads);
    /// `None` if it is not one.
    pub fn from_hex(key: &str) -> Option<Self> {
        if key.len() != 64 {
            return None;
        }
        let bytes = (0..32)
            .map(|i| u8::from_str_radix(key.get(i * 2..i * 2 + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()?;
        let cipher = Aes256Gcm::new_from_slice(&bytes).ok()?;
        Some(Self { cipher })
    }

    /// Seals `plain` with a fresh nonce.
    pub fn seal(&self, plain: &str) -> String {
        let nonce = Nonce::generate();
        let mut buffer = plain.as_bytes().to_vec();
        // Encryption fails only for messages longer than GCM's 64 GiB bound.
        let tag = self
            .cipher
            .encrypt_inout_detached(&nonce, b"", buffer.as_mut_slice().into())
            .unwrap_or_default();
        format!(
            "{}:{}:{}",
            STANDARD.encode(nonce.as_slice()),
            STANDARD.encode(tag.as_slice()),
            STANDARD.encode(&buffer)
        )
    }

    /// Opens a value [`SecretBox::seal`] made.
    pub fn open(&self, sealed: &str) -> Result<String, Unreadable> {
        let mut parts = sealed.split(':');
        let (Some(iv), Some(tag), Some(body), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Unreadable);
        };
        let iv = STANDARD.decode(iv).map_err(|_| Unreadable)?;
        let tag = STANDARD.decode(tag).map_err(|_| Unreadable)?;
        let mut buffer = STANDARD.decode(body).map_err(|_| Unreadable)?;
        let nonce = Nonce::try_from(iv.as_slice()).map_err(|_| Unreadable)?;
        let tag = Tag::try_from(tag.as_slice()).map_err(|_| Unreadable)?;
        self.cipher
            .decrypt_inout_detached(&nonce, b"", buffer.as_mut_slice().into(), &tag)
            .map_err(|_| Unreadable)?;
        String::from_utf8(buffer).map_err(|_| Unreadable)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    #[test]
    fn sealed_values_open_again_and_differ_each_time() {
        let sealed_box = SecretBox::from_hex(KEY).unwrap();
        let one = sealed_box.seal("app-specific password");
        let two = sealed_box.seal("app-specific password");
        assert_ne!(one, two, "a fresh nonce per value");
        assert_eq!(one.split(':').count(), 3);
        assert!(!one.contains("password"));
        assert_eq!(sealed_box.open(&one).unwrap(), "app-specific password");
        assert_eq!(sealed_box.open(&two).unwrap(), "app-specific password");
    }

    #[test]
    fn another_key_or_a_damaged_value_does_not_open() {
        let sealed = SecretBox::from_hex(KEY).unwrap().seal("secret");
        let other = SecretBox::from_hex(&KEY.replace('0', "f")).unwrap();
        assert!(other.open(&sealed).is_err());
        let mut damaged = sealed.clone();
        damaged.replace_range(damaged.len() - 2.., "AA");
        assert!(SecretBox::from_hex(KEY).unwrap().open(&damaged).is_err());
        assert!(SecretBox::from_hex(KEY).unwrap().open("nonsense").is_err());
        assert!(SecretBox::from_hex("abc").is_none());
    }
}
