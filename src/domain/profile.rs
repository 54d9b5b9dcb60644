//! A user's display profile, `name` and `image`, on every path that sets them (sign-up,
//! profile updates, provider sign-in, avatars): a name of at most [`MAX_NAME_CHARS`]
//! characters, and an image that is an `https:` or `http:` URL with a host, of at most
//! [`MAX_IMAGE_CHARS`] (never `javascript:`, `data:` or a relative path, which clients would
//! put into an `<img>` or open). What a client sends is refused with the rule it breaks;
//! what an identity provider claims is fitted to the rules instead.

/// The longest display name.
pub const MAX_NAME_CHARS: usize = 200;
/// The longest image URL.
pub const MAX_IMAGE_CHARS: usize = 2_048;

/// Why a profile value is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileProblem {
    /// The name is longer than [`MAX_NAME_CHARS`].
    NameTooLong,
    /// The image is not an http(s) URL of at most [`MAX_IMAGE_CHARS`].
    ImageNotWebUrl,
}

/// Checks a display name.
pub fn check_name(name: &str) -> Result<(), ProfileProblem> {
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ProfileProblem::NameTooLong);
    }
    Ok(())
}

/// Checks an image URL.
pub fn check_image(image: &str) -> Result<(), ProfileProblem> {
    let web = image.chars().count() <= MAX_IMAGE_CHARS
        && url::Url::parse(image).is_ok_and(|url| {
            matches!(url.scheme(), "https" | "http")
                && url.host_str().is_some_and(|h| !h.is_empty())
        });
    if web {
        Ok(())
    } else {
        Err(ProfileProblem::ImageNotWebUrl)
    }
}

/// A name an identity provider claims, cut to [`MAX_NAME_CHARS`].
pub fn claimed_name(name: &str) -> String {
    match name.char_indices().nth(MAX_NAME_CHARS) {
        Some((at, _)) => name[..at].to_owned(),
        None => name.to_owned(),
    }
}

/// An image an identity provider claims, if it follows the rules.
pub fn claimed_image(image: Option<&str>) -> Option<String> {
    image
        .filter(|image| check_image(image).is_ok())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_images() {
        assert_eq!(check_name(&"é".repeat(200)), Ok(()));
        assert_eq!(
            check_name(&"é".repeat(201)),
            Err(ProfileProblem::NameTooLong)
        );
        for good in [
            "https://cdn.example.com/a.png",
            "http://127.0.0.1:7531/api/v1/users/x/avatar?v=1",
        ] {
            assert_eq!(check_image(good), Ok(()), "{good}");
        }
        let long = format!("https://example.com/{}", "a".repeat(2_048));
        for bad in [
            "javascript:alert(1)",
            "data:image/png;base64,AAAA",
            "/avatar.png",
            "ftp://example.com/a",
            "https://",
            long.as_str(),
        ] {
            assert_eq!(
                check_image(bad),
                Err(ProfileProblem::ImageNotWebUrl),
                "{bad:.40}"
            );
        }
        assert_eq!(claimed_name(&"x".repeat(300)).len(), 200);
        assert_eq!(claimed_image(Some("javascript:alert(1)")), None);
        assert_eq!(
            claimed_image(Some("https://lh3.example.com/p.jpg")).as_deref(),
            Some("https://lh3.example.com/p.jpg")
        );
    }
}
