//! Avatar uploads: base64 text (optionally a `data:` URL) decoded to at most 256 KiB, with the
//! type sniffed from the bytes (JPEG, PNG or WebP), never taken from a name or a header.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// Largest decoded avatar.
pub const MAX_AVATAR_BYTES: usize = 256 * 1024;

/// An accepted avatar image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AvatarImage {
    /// `image/jpeg`, `image/png` or `image/webp`.
    pub mime: &'static str,
    /// The image.
    pub bytes: Vec<u8>,
}

/// Why an upload was refused (each maps to a 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AvatarError {
    /// Not base64.
    #[error("Avatar data must be base64.")]
    NotBase64,
    /// Nothing in it.
    #[error("Avatar data is empty.")]
    Empty,
    /// Over 256 KiB once decoded.
    #[error("Avatar must be at most 256 KB.")]
    TooLarge,
    /// Not one of the accepted image types.
    #[error("Avatar must be a JPEG, PNG or WebP image.")]
    UnsupportedType,
}

/// Decodes and checks an upload.
pub fn decode(data: &str) -> Result<AvatarImage, AvatarError> {
    let data = data.trim();
    // `data:image/png;base64,....` as produced by browsers' FileReader.
    let data = match data.strip_prefix("data:") {
        Some(url) => url.split_once(',').map_or("", |(_, payload)| payload),
        None => data,
    };
    let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if compact.is_empty() {
        return Err(AvatarError::Empty);
    }
    // Reject before decoding what cannot fit (4 base64 characters per 3 bytes).
    if compact.len() / 4 * 3 > MAX_AVATAR_BYTES + 3 {
        return Err(AvatarError::TooLarge);
    }
    let bytes = STANDARD
        .decode(compact.as_bytes())
        .map_err(|_| AvatarError::NotBase64)?;
    if bytes.is_empty() {
        return Err(AvatarError::Empty);
    }
    if bytes.len() > MAX_AVATAR_BYTES {
        return Err(AvatarError::TooLarge);
    }
    let mime = match infer::get(&bytes).map(|kind| kind.mime_type()) {
        Some("image/jpeg") => "image/jpeg",
        Some("image/png") => "image/png",
        Some("image/webp") => "image/webp",
        _ => return Err(AvatarError::UnsupportedType),
    };
    Ok(AvatarImage { mime, bytes })
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    const PNG: &[u8] = &[
        0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D,
    ];
    const GIF: &[u8] = b"GIF89a\x01\x00\x01\x00\x00\x00\x00";

    #[test]
    fn sniffs_the_bytes() {
        let png = decode(&STANDARD.encode(PNG)).unwrap();
        assert_eq!(png.mime, "image/png");
        let url = format!("data:image/gif;base64,{}", STANDARD.encode(PNG));
        assert_eq!(decode(&url).unwrap().mime, "image/png");
        assert_eq!(
            decode(&STANDARD.encode(GIF)),
            Err(AvatarError::UnsupportedType)
        );
        let mut webp = b"RIFF\x10\x00\x00\x00WEBPVP8 ".to_vec();
        webp.extend_from_slice(&[0; 8]);
        assert_eq!(decode(&STANDARD.encode(&webp)).unwrap().mime, "image/webp");
    }

    #[test]
    fn refuses_empty_oversize_and_garbage() {
        assert_eq!(decode("  "), Err(AvatarError::Empty));
        assert_eq!(decode("not base64!"), Err(AvatarError::NotBase64));
        let mut big = PNG.to_vec();
        big.resize(MAX_AVATAR_BYTES + 1, 0);
        assert_eq!(decode(&STANDARD.encode(&big)), Err(AvatarError::TooLarge));
        let mut fits = PNG.to_vec();
        fits.resize(MAX_AVATAR_BYTES, 0);
        assert!(decode(&STANDARD.encode(&fits)).is_ok());
    }
}
