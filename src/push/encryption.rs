//! Message encryption for web push (RFC 8291) in the `aes128gcm` content coding (RFC 8188).
//!
//! A subscription carries the browser's P-256 public key (`p256dh`) and a 16-byte
//! authentication secret (`auth`). Each message gets a fresh ephemeral key pair and salt;
//! the body is one RFC 8188 record:
//!
//! ```text
//! salt (16) | rs (4, big-endian: 4096) | idlen (1: 65) | keyid (65: ephemeral public key)
//! AES-128-GCM(plaintext || 0x02) with its 16-byte tag
//! ```
//!
//! The request that carries it has `Content-Encoding: aes128gcm`.

use aes_gcm::Aes128Gcm;
use aes_gcm::aead::{Aead, KeyInit};
use hkdf::Hkdf;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::{PublicKey, SecretKey};
use sha2::Sha256;

use super::decode_base64url;

/// The record size written in the header: the 4096 bytes every push service must accept.
pub const RECORD_SIZE: u32 = 4096;

/// Length of an uncompressed P-256 point (`0x04 | x | y`), as `p256dh` and the key id are.
pub const PUBLIC_KEY_LEN: usize = 65;

/// Length of the subscription's authentication secret (`auth`).
pub const AUTH_SECRET_LEN: usize = 16;

/// Length of the random salt at the start of the body.
pub const SALT_LEN: usize = 16;

/// Length of the header before the record: salt, record size, key id length, key id.
pub const HEADER_LEN: usize = SALT_LEN + 4 + 1 + PUBLIC_KEY_LEN;

/// Length of the AES-GCM authentication tag that ends the record.
const TAG_LEN: usize = 16;

/// The longest plaintext that fits: a push service need accept no body over 4096 bytes,
/// which holds the header, the plaintext, the `0x02` delimiter and the tag (3993 bytes).
pub const MAX_PLAINTEXT_LEN: usize = RECORD_SIZE as usize - HEADER_LEN - 1 - TAG_LEN;

/// Why a message could not be encrypted for a subscription.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncryptionError {
    /// `p256dh` is not base64url.
    #[error("the subscription's p256dh key is not base64url")]
    P256dhNotBase64url,
    /// `p256dh` does not decode to an uncompressed point (65 bytes starting with 0x04).
    #[error("the subscription's p256dh key is {0} bytes, not a 65-byte uncompressed P-256 point")]
    P256dhWrongLength(usize),
    /// `p256dh` has the right length but is not a point on P-256.
    #[error("the subscription's p256dh key is not a point on the P-256 curve")]
    P256dhNotOnCurve,
    /// `auth` is not base64url.
    #[error("the subscription's auth secret is not base64url")]
    AuthNotBase64url,
    /// `auth` does not decode to 16 bytes.
    #[error("the subscription's auth secret is {0} bytes, not 16")]
    AuthWrongLength(usize),
    /// The ephemeral private key given is not a valid P-256 scalar (zero, or not below the
    /// group order).
    #[error("the ephemeral private key is not a valid P-256 scalar")]
    InvalidEphemeralKey,
    /// The plaintext does not fit in one 4096-byte record.
    #[error("the push payload is {len} bytes; at most {MAX_PLAINTEXT_LEN} fit in one message")]
    PayloadTooLarge {
        /// The plaintext's length.
        len: usize,
    },
    /// AES-GCM refused the record (not expected for any plaintext that fits).
    #[error("the push payload could not be encrypted")]
    Cipher,
}

/// A subscription's keys, decoded and checked once (when it is stored, or before sending).
#[derive(Clone)]
pub struct SubscriptionKeys {
    /// The browser's public key.
    public_key: PublicKey,
    /// The same key as its 65 uncompressed bytes (part of the key derivation).
    public_bytes: [u8; PUBLIC_KEY_LEN],
    /// The authentication secret.
    auth: [u8; AUTH_SECRET_LEN],
}

impl std::fmt::Debug for SubscriptionKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubscriptionKeys(..)")
    }
}

impl SubscriptionKeys {
    /// Decodes `p256dh` (base64url of a 65-byte uncompressed P-256 point) and `auth`
    /// (base64url of 16 bytes), as `PushSubscription.toJSON()` gives them; padding is
    /// accepted but not required.
    pub fn from_base64url(p256dh: &str, auth: &str) -> Result<Self, EncryptionError> {
        let point = decode_base64url(p256dh).ok_or(EncryptionError::P256dhNotBase64url)?;
        let public_bytes: [u8; PUBLIC_KEY_LEN] = point
            .as_slice()
            .try_into()
            .map_err(|_| EncryptionError::P256dhWrongLength(point.len()))?;
        if public_bytes[0] != 0x04 {
            // A compressed or hybrid encoding, or no point at all.
            return Err(EncryptionError::P256dhNotOnCurve);
        }
        let public_key = PublicKey::from_sec1_bytes(&public_bytes)
            .map_err(|_| EncryptionError::P256dhNotOnCurve)?;
        let secret = decode_base64url(auth).ok_or(EncryptionError::AuthNotBase64url)?;
        let auth: [u8; AUTH_SECRET_LEN] = secret
            .as_slice()
            .try_into()
            .map_err(|_| EncryptionError::AuthWrongLength(secret.len()))?;
        Ok(Self {
            public_key,
            public_bytes,
            auth,
        })
    }

    /// The request body for `plaintext`, under a fresh random ephemeral key and salt.
    pub fn encrypt(&self, plaintext: &[u8]) -> Result<Vec<u8>, EncryptionError> {
        let salt: [u8; SALT_LEN] = rand::random();
        self.encrypt_with(plaintext, &random_secret_key(), &salt)
    }

    /// The request body for `plaintext` under the given ephemeral private key (a 32-byte
    /// P-256 scalar) and salt. Only tests and known-answer checks choose these; messages
    /// sent for real use [`SubscriptionKeys::encrypt`], since reusing a key and salt with
    /// one subscription reuses the AES-GCM key and nonce.
    pub fn encrypt_with_key(
        &self,
        plaintext: &[u8],
        ephemeral_private: &[u8; 32],
        salt: &[u8; SALT_LEN],
    ) -> Result<Vec<u8>, EncryptionError> {
        let ephemeral = SecretKey::from_bytes(&(*ephemeral_private).into())
            .map_err(|_| EncryptionError::InvalidEphemeralKey)?;
        self.encrypt_with(plaintext, &ephemeral, salt)
    }

    fn encrypt_with(
        &self,
        plaintext: &[u8],
        ephemeral: &SecretKey,
        salt: &[u8; SALT_LEN],
    ) -> Result<Vec<u8>, EncryptionError> {
        if plaintext.len() > MAX_PLAINTEXT_LEN {
            return Err(EncryptionError::PayloadTooLarge {
                len: plaintext.len(),
            });
        }
        let as_public = ephemeral.public_key().to_encoded_point(false);
        let as_public = as_public.as_bytes();
        let shared =
            p256::ecdh::diffie_hellman(ephemeral.to_nonzero_scalar(), self.public_key.as_affine());
        let (cek, nonce) = derive_key_and_nonce(
            shared.raw_secret_bytes(),
            &self.auth,
            &self.public_bytes,
            as_public,
            salt,
        );

        let mut record = Vec::with_capacity(plaintext.len() + 1);
        record.extend_from_slice(plaintext);
        record.push(0x02);
        let cipher = Aes128Gcm::new_from_slice(&cek).map_err(|_| EncryptionError::Cipher)?;
        let sealed = cipher
            .encrypt(&nonce.into(), record.as_slice())
            .map_err(|_| EncryptionError::Cipher)?;

        let mut body = Vec::with_capacity(HEADER_LEN + sealed.len());
        body.extend_from_slice(salt);
        body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
        body.push(PUBLIC_KEY_LEN as u8);
        body.extend_from_slice(as_public);
        body.extend_from_slice(&sealed);
        Ok(body)
    }
}

/// The request body for `plaintext` to the subscription with keys `p256dh` and `auth`
/// (base64url), under a fresh random ephemeral key and salt.
pub fn encrypt(p256dh: &str, auth: &str, plaintext: &[u8]) -> Result<Vec<u8>, EncryptionError> {
    SubscriptionKeys::from_base64url(p256dh, auth)?.encrypt(plaintext)
}

/// [`encrypt`] with the ephemeral private key (a 32-byte P-256 scalar) and salt chosen by
/// the caller: for known-answer tests such as RFC 8291's Appendix A, never for real
/// messages.
pub fn encrypt_with_key(
    p256dh: &str,
    auth: &str,
    plaintext: &[u8],
    ephemeral_private: &[u8; 32],
    salt: &[u8; SALT_LEN],
) -> Result<Vec<u8>, EncryptionError> {
    SubscriptionKeys::from_base64url(p256dh, auth)?.encrypt_with_key(
        plaintext,
        ephemeral_private,
        salt,
    )
}

/// A random P-256 private key from the thread's CSPRNG. A random 32-byte string is a valid
/// scalar unless it is zero or not below the group order (odds about 2^-32), so the loop
/// all but never runs twice.
pub(crate) fn random_secret_key() -> SecretKey {
    loop {
        let bytes: [u8; 32] = rand::random();
        if let Ok(key) = SecretKey::from_bytes(&bytes.into()) {
            return key;
        }
    }
}

/// RFC 8291 §3.3-3.4: the content-encryption key and nonce of the record.
fn derive_key_and_nonce(
    ecdh_secret: &[u8],
    auth: &[u8; AUTH_SECRET_LEN],
    ua_public: &[u8],
    as_public: &[u8],
    salt: &[u8; SALT_LEN],
) -> ([u8; 16], [u8; 12]) {
    let ikm = derive_ikm(ecdh_secret, auth, ua_public, as_public);
    let hkdf = Hkdf::<Sha256>::new(Some(salt), &ikm);
    let mut cek = [0u8; 16];
    let mut nonce = [0u8; 12];
    // HKDF-SHA256 can expand to 255 * 32 bytes; 16 and 12 always succeed.
    let _ = hkdf.expand(b"Content-Encoding: aes128gcm\0", &mut cek);
    let _ = hkdf.expand(b"Content-Encoding: nonce\0", &mut nonce);
    (cek, nonce)
}

/// RFC 8291 §3.3: IKM = HKDF(auth_secret, ecdh_secret, "WebPush: info" || 0x00 ||
/// ua_public || as_public, 32).
fn derive_ikm(
    ecdh_secret: &[u8],
    auth: &[u8; AUTH_SECRET_LEN],
    ua_public: &[u8],
    as_public: &[u8],
) -> [u8; 32] {
    let hkdf = Hkdf::<Sha256>::new(Some(auth), ecdh_secret);
    let mut ikm = [0u8; 32];
    // 32 bytes is one HKDF-SHA256 block: always within bounds.
    let _ = hkdf.expand_multi_info(&[b"WebPush: info\0", ua_public, as_public], &mut ikm);
    ikm
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    // RFC 8291, Appendix A.
    const PLAINTEXT: &str = "When I grow up, I want to be a watermelon";
    const AS_PRIVATE: &str = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw";
    const AS_PUBLIC: &str =
        "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8";
    const UA_PRIVATE: &str = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94";
    const UA_PUBLIC: &str =
        "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
    const SALT: &str = "DGv6ra1nlYgDCS1FRnbzlw";
    const AUTH: &str = "BTBZMqHH6r4Tts7J_aSIgg";
    const ECDH_SECRET: &str = "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs";
    const IKM: &str = "S4lYMb_L0FxCeq0WhDx813KgSYqU26kOyzWUdsXYyrg";
    const CEK: &str = "oIhVW04MRdy2XN9CiKLxTg";
    const NONCE: &str = "4h_95klXJ5E_qnoN";
    const BODY: &str = concat!(
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27ml",
        "mlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPT",
        "pK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
    );

    fn bytes(text: &str) -> Vec<u8> {
        decode_base64url(text).unwrap()
    }

    fn b64(bytes: &[u8]) -> String {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    fn array<const N: usize>(text: &str) -> [u8; N] {
        bytes(text).try_into().unwrap()
    }

    /// The browser's side (RFC 8291 §3.4, RFC 8188 §2): the plaintext of a one-record body.
    fn decrypt(body: &[u8], ua_private: &[u8; 32], auth: &[u8; 16]) -> Vec<u8> {
        let salt: [u8; SALT_LEN] = body[..16].try_into().unwrap();
        let rs = u32::from_be_bytes(body[16..20].try_into().unwrap());
        assert_eq!(rs, RECORD_SIZE);
        let idlen = usize::from(body[20]);
        assert_eq!(idlen, PUBLIC_KEY_LEN);
        let as_public = &body[21..21 + idlen];
        let record = &body[21 + idlen..];
        assert!(record.len() <= rs as usize);

        let ua_secret = SecretKey::from_bytes(&(*ua_private).into()).unwrap();
        let ua_public = ua_secret.public_key().to_encoded_point(false);
        let sender = PublicKey::from_sec1_bytes(as_public).unwrap();
        let shared = p256::ecdh::diffie_hellman(ua_secret.to_nonzero_scalar(), sender.as_affine());
        let (cek, nonce) = derive_key_and_nonce(
            shared.raw_secret_bytes(),
            auth,
            ua_public.as_bytes(),
            as_public,
            &salt,
        );
        let mut plain = Aes128Gcm::new_from_slice(&cek)
            .unwrap()
            .decrypt(&nonce.into(), record)
            .expect("the record authenticates");
        // Padding: zeros after the last record's 0x02 delimiter.
        while plain.last() == Some(&0) {
            plain.pop();
        }
        assert_eq!(plain.pop(), Some(0x02), "the last record's delimiter");
        plain
    }

    #[test]
    fn rfc_8291_appendix_a_intermediate_values() {
        let ua_public = bytes(UA_PUBLIC);
        let as_public = bytes(AS_PUBLIC);
        let as_secret = SecretKey::from_bytes(&array::<32>(AS_PRIVATE).into()).unwrap();
        assert_eq!(
            as_secret.public_key().to_encoded_point(false).as_bytes(),
            as_public.as_slice()
        );
        let keys = SubscriptionKeys::from_base64url(UA_PUBLIC, AUTH).unwrap();
        let shared =
            p256::ecdh::diffie_hellman(as_secret.to_nonzero_scalar(), keys.public_key.as_affine());
        assert_eq!(b64(shared.raw_secret_bytes()), ECDH_SECRET);

        let auth = array::<16>(AUTH);
        let ikm = derive_ikm(shared.raw_secret_bytes(), &auth, &ua_public, &as_public);
        assert_eq!(b64(&ikm), IKM);
        let (cek, nonce) = derive_key_and_nonce(
            shared.raw_secret_bytes(),
            &auth,
            &ua_public,
            &as_public,
            &array(SALT),
        );
        assert_eq!(b64(&cek), CEK);
        assert_eq!(b64(&nonce), NONCE);
    }

    #[test]
    fn rfc_8291_appendix_a_body_is_reproduced_byte_for_byte() {
        let body = encrypt_with_key(
            UA_PUBLIC,
            AUTH,
            PLAINTEXT.as_bytes(),
            &array(AS_PRIVATE),
            &array(SALT),
        )
        .unwrap();
        assert_eq!(body, bytes(BODY));
        assert_eq!(b64(&body), BODY);
        assert_eq!(body.len(), 144);
    }

    #[test]
    fn the_appendix_a_receiver_decrypts_the_appendix_a_body() {
        let plain = decrypt(&bytes(BODY), &array(UA_PRIVATE), &array(AUTH));
        assert_eq!(plain, PLAINTEXT.as_bytes());
    }

    #[test]
    fn random_messages_round_trip_and_differ_each_time() {
        let ua_secret = random_secret_key();
        let ua_public = b64(ua_secret.public_key().to_encoded_point(false).as_bytes());
        let auth: [u8; 16] = rand::random();
        let keys = SubscriptionKeys::from_base64url(&ua_public, &b64(&auth)).unwrap();
        let ua_private: [u8; 32] = ua_secret.to_bytes().into();

        let payload = br#"{"title":"Dentist","body":"in 15 minutes"}"#;
        let one = keys.encrypt(payload).unwrap();
        let two = encrypt(&ua_public, &b64(&auth), payload).unwrap();
        assert_ne!(one, two, "a fresh salt and ephemeral key per message");
        assert_ne!(one[..16], two[..16]);
        assert_ne!(one[21..86], two[21..86]);
        assert_eq!(one.len(), HEADER_LEN + payload.len() + 1 + TAG_LEN);
        assert_eq!(decrypt(&one, &ua_private, &auth), payload);
        assert_eq!(decrypt(&two, &ua_private, &auth), payload);

        assert_eq!(
            decrypt(&keys.encrypt(b"").unwrap(), &ua_private, &auth),
            b""
        );
        let largest = vec![0xa5; MAX_PLAINTEXT_LEN];
        let body = keys.encrypt(&largest).unwrap();
        assert_eq!(body.len(), RECORD_SIZE as usize);
        assert_eq!(decrypt(&body, &ua_private, &auth), largest);
    }

    #[test]
    fn a_damaged_body_does_not_decrypt() {
        let mut body = bytes(BODY);
        let last = body.len() - 1;
        body[last] ^= 1;
        let as_public = &body[21..86];
        let ua_secret = SecretKey::from_bytes(&array::<32>(UA_PRIVATE).into()).unwrap();
        let sender = PublicKey::from_sec1_bytes(as_public).unwrap();
        let shared = p256::ecdh::diffie_hellman(ua_secret.to_nonzero_scalar(), sender.as_affine());
        let (cek, nonce) = derive_key_and_nonce(
            shared.raw_secret_bytes(),
            &array(AUTH),
            &bytes(UA_PUBLIC),
            as_public,
            &array(SALT),
        );
        let cipher = Aes128Gcm::new_from_slice(&cek).unwrap();
        assert!(cipher.decrypt(&nonce.into(), &body[86..]).is_err());
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let salt = array(SALT);
        let key = array(AS_PRIVATE);
        let plain = PLAINTEXT.as_bytes();
        let err =
            |p256dh: &str, auth: &str| SubscriptionKeys::from_base64url(p256dh, auth).map(|_| ());

        assert_eq!(
            err("not base64!", AUTH),
            Err(EncryptionError::P256dhNotBase64url)
        );
        assert_eq!(
            err(&b64(&bytes(UA_PUBLIC)[..32]), AUTH),
            Err(EncryptionError::P256dhWrongLength(32))
        );
        // The compressed form of a valid point is not what browsers send.
        let ua = SubscriptionKeys::from_base64url(UA_PUBLIC, AUTH).unwrap();
        let compressed = b64(ua.public_key.to_encoded_point(true).as_bytes());
        assert_eq!(
            err(&compressed, AUTH),
            Err(EncryptionError::P256dhWrongLength(33))
        );
        // 65 bytes, uncompressed tag, but y is wrong: not on the curve.
        let mut off_curve = bytes(UA_PUBLIC);
        off_curve[64] ^= 1;
        assert_eq!(
            err(&b64(&off_curve), AUTH),
            Err(EncryptionError::P256dhNotOnCurve)
        );
        let mut wrong_tag = bytes(UA_PUBLIC);
        wrong_tag[0] = 0x06;
        assert_eq!(
            err(&b64(&wrong_tag), AUTH),
            Err(EncryptionError::P256dhNotOnCurve)
        );
        assert_eq!(
            err(&b64(&[0u8; 65]), AUTH),
            Err(EncryptionError::P256dhNotOnCurve)
        );

        assert_eq!(
            err(UA_PUBLIC, "***"),
            Err(EncryptionError::AuthNotBase64url)
        );
        assert_eq!(
            err(UA_PUBLIC, &b64(&[7u8; 15])),
            Err(EncryptionError::AuthWrongLength(15))
        );
        assert_eq!(err(UA_PUBLIC, ""), Err(EncryptionError::AuthWrongLength(0)));
        // Padding is tolerated.
        assert_eq!(err(&format!("{UA_PUBLIC}="), &format!("{AUTH}==")), Ok(()));

        assert_eq!(
            encrypt_with_key(UA_PUBLIC, AUTH, plain, &[0u8; 32], &salt),
            Err(EncryptionError::InvalidEphemeralKey)
        );
        assert_eq!(
            encrypt_with_key(UA_PUBLIC, AUTH, plain, &[0xff; 32], &salt),
            Err(EncryptionError::InvalidEphemeralKey)
        );
        let too_large = vec![b'x'; MAX_PLAINTEXT_LEN + 1];
        assert_eq!(
            encrypt_with_key(UA_PUBLIC, AUTH, &too_large, &key, &salt),
            Err(EncryptionError::PayloadTooLarge {
                len: MAX_PLAINTEXT_LEN + 1
            })
        );
        assert_eq!(
            encrypt(UA_PUBLIC, AUTH, &too_large),
            Err(EncryptionError::PayloadTooLarge {
                len: MAX_PLAINTEXT_LEN + 1
            })
        );
        assert_eq!(MAX_PLAINTEXT_LEN, 3993);
    }
}
