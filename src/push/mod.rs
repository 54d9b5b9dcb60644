//! Web push, the wire only: the message encryption of RFC 8291 (`aes128gcm`, RFC 8188) that
//! turns a reminder into the body a push service forwards to a browser, and the VAPID
//! identity of RFC 8292 that signs each request ([`encryption`], [`vapid`]); sending one
//! message through the outbound guard ([`send`]); and one pass of the reminder dispatcher
//! ([`dispatch`]), which the push dispatcher actor runs on its timer.

pub mod dispatch;
pub mod encryption;
pub mod send;
pub mod vapid;

use base64::Engine;
use base64::alphabet::URL_SAFE;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// base64url as browsers and configuration files write it: with or without `=` padding.
const BASE64URL_ANY_PADDING: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The bytes of a base64url text (padded or not); `None` if it is not base64url.
fn decode_base64url(text: &str) -> Option<Vec<u8>> {
    BASE64URL_ANY_PADDING.decode(text).ok()
}
