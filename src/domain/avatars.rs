//! Avatar uploads: base64 text (optionally a `data:` URL) decoded to at most 256 KiB, with the
//! type sniffed from the bytes (JPEG, PNG or WebP), never taken from a name or a header, and
//! the width and height the image's own header declares at most [`MAX_AVATAR_SIDE`] (read
//! without decoding a pixel: a small file may declare a huge image that would take
//! gigabytes to decode wherever it is shown).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// Largest decoded avatar.
pub const MAX_AVATAR_BYTES: usize = 256 * 1024;
/// Widest and tallest avatar, in pixels.
pub const MAX_AVATAR_SIDE: usize = 4_096;

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
    /// Its header declares no readable size.
    #[error("Avatar image is damaged: its size cannot be read.")]
    Unreadable,
    /// Wider or taller than [`MAX_AVATAR_SIDE`].
    #[error("Avatar must be at most 4096 × 4096 pixels.")]
    TooManyPixels,
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
    let size = imagesize::blob_size(&bytes).map_err(|_| AvatarError::Unreadable)?;
    if size.width == 0 || size.height == 0 {
        return Err(AvatarError::Unreadable);
    }
    if size.width > MAX_AVATAR_SIDE || size.height > MAX_AVATAR_SIDE {
        return Err(AvatarError::TooManyPixels);
    }
    Ok(AvatarImage { mime, bytes })
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A PNG header declaring `width` × `height` (signature and IHDR; no pixels).
    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = vec![
            0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D,
        ];
        bytes.extend_from_slice(b"IHDR");
        bytes.extend_from_slice(&width.to_be_bytes());
        bytes.extend_from_slice(&height.to_be_bytes());
        bytes.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        bytes
    }

    /// A JPEG header declaring `width` × `height` (SOI and a baseline SOF0).
    fn jpeg(width: u16, height: u16) -> Vec<u8> {
        let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08];
        bytes.extend_from_slice(&height.to_be_bytes());
        bytes.extend_from_slice(&width.to_be_bytes());
        bytes.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1, 0xFF, 0xD9]);
        bytes
    }

    /// An extended WebP header (VP8X) declaring `width` × `height`.
    fn webp(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = b"RIFF\x1e\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00".to_vec();
        bytes.extend_from_slice(&(width - 1).to_le_bytes()[..3]);
        bytes.extend_from_slice(&(height - 1).to_le_bytes()[..3]);
        bytes.extend_from_slice(&[0; 8]);
        bytes
    }

    const GIF: &[u8] = b"GIF89a\x01\x00\x01\x00\x00\x00\x00";

    #[test]
    fn sniffs_the_bytes() {
        let image = decode(&STANDARD.encode(png(64, 64))).unwrap();
        assert_eq!(image.mime, "image/png");
        let url = format!("data:image/gif;base64,{}", STANDARD.encode(png(1, 1)));
        assert_eq!(decode(&url).unwrap().mime, "image/png");
        assert_eq!(
            decode(&STANDARD.encode(GIF)),
            Err(AvatarError::UnsupportedType)
        );
        assert_eq!(
            decode(&STANDARD.encode(webp(32, 16))).unwrap().mime,
            "image/webp"
        );
        assert_eq!(
            decode(&STANDARD.encode(jpeg(640, 480))).unwrap().mime,
            "image/jpeg"
        );
    }

    #[test]
    fn refuses_empty_oversize_and_garbage() {
        assert_eq!(decode("  "), Err(AvatarError::Empty));
        assert_eq!(decode("not base64!"), Err(AvatarError::NotBase64));
        let mut big = png(1, 1);
        big.resize(MAX_AVATAR_BYTES + 1, 0);
        assert_eq!(decode(&STANDARD.encode(&big)), Err(AvatarError::TooLarge));
        let mut fits = png(1, 1);
        fits.resize(MAX_AVATAR_BYTES, 0);
        assert!(decode(&STANDARD.encode(&fits)).is_ok());
    }

    #[test]
    fn refuses_what_declares_more_than_4096_pixels_a_side() {
        for (bytes, side) in [
            (png(4_096, 4_096), None),
            (png(60_000, 60_000), Some(())),
            (png(4_097, 1), Some(())),
            (jpeg(4_096, 4_096), None),
            (jpeg(60_000, 60_000), Some(())),
            (webp(4_096, 4_096), None),
            (webp(16_000, 16_000), Some(())),
        ] {
            let answer = decode(&STANDARD.encode(&bytes));
            match side {
                None => assert!(answer.is_ok(), "{answer:?}"),
                Some(()) => assert_eq!(answer, Err(AvatarError::TooManyPixels)),
            }
        }
        // A PNG signature with no readable header.
        let truncated = png(1, 1)[..14].to_vec();
        assert_eq!(
            decode(&STANDARD.encode(truncated)),
            Err(AvatarError::Unreadable)
        );
    }
}
