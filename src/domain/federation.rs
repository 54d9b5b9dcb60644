//! Federation's rules, on both sides of the wire: member tokens (`mt1_<issued-at ms,
//! base36>_<64 hex>`, 90 days, rotated in their final 14), the bare origins a peer may be
//! named by, invite tokens and profiles as another server sends them, the peer version a
//! connection needs, and which paths the gateway forwards.

use chrono::{DateTime, Duration, TimeZone, Utc};
use url::Url;

use super::email;

/// How long a member token authenticates, counted from its row's creation.
pub const MEMBER_TOKEN_DAYS: i64 = 90;
/// A token is rotated once this little of its lifetime is left.
pub const ROTATE_WITHIN_DAYS: i64 = 14;
/// The oldest peer version a connection is made to (older servers lack the accept wire).
pub const MIN_PEER_VERSION: &str = "0.1.3";

/// A member token's text for `issued_at` and 32 random bytes.
pub fn member_token(issued_at: DateTime<Utc>, random: &[u8; 32]) -> String {
    let millis = u64::try_from(issued_at.timestamp_millis()).unwrap_or(0);
    format!("mt1_{}_{}", base36(millis), hex::encode(random))
}

/// When a member token stops authenticating, for a row created at `created_at`.
pub fn member_token_expiry(created_at: DateTime<Utc>) -> DateTime<Utc> {
    created_at + Duration::days(MEMBER_TOKEN_DAYS)
}

/// The issue time a member token carries (`None` for a token without one: a legacy or
/// foreign format, which is rotated at once).
pub fn member_token_issued_at(token: &str) -> Option<DateTime<Utc>> {
    let rest = token.strip_prefix("mt1_")?;
    let (stamp, random) = rest.split_once('_')?;
    if random.len() != 64 || !random.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let millis = i64::try_from(u64::from_str_radix(stamp, 36).ok()?).ok()?;
    Utc.timestamp_millis_opt(millis).single()
}

/// Whether a held token should be exchanged now: within the final 14 days of `expires_at`
/// (the expiry the issuing server announced), or carrying no readable issue time.
pub fn needs_rotation(token: &str, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    member_token_issued_at(token).is_none()
        || expires_at - now <= Duration::days(ROTATE_WITHIN_DAYS)
}

fn base36(mut value: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[usize::try_from(value % 36).unwrap_or(0)]);
        value /= 36;
        if value == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The canonical origin (`scheme://host[:port]`) of `input` when it is a bare http(s)
/// origin: no credentials, no path but `/`, no query, no fragment.
pub fn bare_origin(input: &str) -> Option<String> {
    let input = input.trim();
    if input.is_empty() || input.len() > 2_048 {
        return None;
    }
    let url = Url::parse(input).ok()?;
    let bare = matches!(url.scheme(), "http" | "https")
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none();
    bare.then(|| url.origin().ascii_serialization())
}

/// `host[:port]` of an origin, the label a connection is listed with.
pub fn origin_label(origin: &str) -> String {
    Url::parse(origin)
        .ok()
        .and_then(|url| {
            let host = url.host_str()?.to_owned();
            Some(match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        })
        .unwrap_or_else(|| origin.to_owned())
}

/// Whether `token` has the shape of an invite token (`^[0-9a-f-]{16,64}$`).
pub fn is_invite_token(token: &str) -> bool {
    (16..=64).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-')
}

/// The display claims of a member from another server, as the accept request carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// 1..200 characters.
    pub name: String,
    /// A valid address of at most 320 characters (display only).
    pub email: String,
    /// The member's home server, a canonical bare origin.
    pub home_server: String,
    /// An avatar URL of at most 2,048 characters.
    pub image: Option<String>,
}

/// Why a profile was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileError {
    /// A field is missing or out of bounds.
    Invalid,
    /// `homeServer` is not a bare http(s) origin.
    HomeServer,
}

impl Profile {
    /// Checks the claims; `home_server` comes back canonical.
    pub fn checked(
        name: &str,
        email_address: &str,
        home_server: &str,
        image: Option<&str>,
    ) -> Result<Self, ProfileError> {
        let name = name.trim();
        let email_address = email_address.trim().to_lowercase();
        let name_ok = (1..=200).contains(&name.chars().count());
        if !name_ok || !email::is_valid(&email_address) {
            return Err(ProfileError::Invalid);
        }
        if image.is_some_and(|image| image.len() > 2_048) {
            return Err(ProfileError::Invalid);
        }
        let home_server = bare_origin(home_server).ok_or(ProfileError::HomeServer)?;
        Ok(Self {
            name: name.to_owned(),
            email: email_address,
            home_server,
            image: image.filter(|image| !image.is_empty()).map(str::to_owned),
        })
    }
}

/// The address a shadow user is stored with when its claimed one is taken here:
/// `federated+<8 characters>@<home host>`.
pub fn stand_in_email(home_server: &str, random8: &str) -> String {
    let host = Url::parse(home_server)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_else(|| "federated.invalid".to_owned());
    format!("federated+{random8}@{host}")
}

/// Whether a peer announcing `version` is too old to connect to. Unreadable versions pass
/// (as the original treats them).
pub fn peer_too_old(version: &str) -> bool {
    match (parse_version(version), parse_version(MIN_PEER_VERSION)) {
        (Some(peer), Some(min)) => peer < min,
        _ => false,
    }
}

fn parse_version(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.trim().trim_start_matches('v');
    let core = core.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|part| part.parse::<u64>().ok());
    let major = parts.next()??;
    let minor = parts.next().unwrap_or(Some(0))?;
    let patch = parts.next().unwrap_or(Some(0))?;
    Some((major, minor, patch))
}

/// The path the gateway forwards for the raw (still percent-encoded) rest of a gateway
/// path, `api/v1/…`: `None` when it leaves `/api/v1/` or could once decoded — dot segments,
/// encoded dots, slashes or backslashes, empty segments, backslashes, control characters.
pub fn forwarded_path(rest: &str) -> Option<String> {
    let tail = rest.strip_prefix("api/v1/")?;
    if tail.is_empty() || tail.len() > 2_048 {
        return None;
    }
    let lowered = tail.to_ascii_lowercase();
    let encoded_escape = ["%2e", "%2f", "%5c", "%00", "%25"]
        .iter()
        .any(|escape| lowered.contains(escape));
    let escapes = encoded_escape
        || tail.contains('\\')
        || tail.bytes().any(|b| b.is_ascii_control() || b == b' ')
        || tail
            .split('/')
            .any(|segment| segment.is_empty() || segment == "." || segment == "..");
    (!escapes).then(|| format!("/api/v1/{tail}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn member_tokens_carry_their_issue_time() {
        let issued = Utc.timestamp_millis_opt(1_764_115_200_123).unwrap();
        let token = member_token(issued, &[0xab; 32]);
        assert!(token.starts_with("mt1_"));
        assert_eq!(token.len(), 4 + base36(1_764_115_200_123).len() + 1 + 64);
        assert_eq!(member_token_issued_at(&token), Some(issued));
        assert_eq!(member_token_issued_at("legacy-token"), None);
        assert_eq!(member_token_issued_at("mt1_zz_abc"), None);
    }

    #[test]
    fn rotation_is_due_in_the_final_fourteen_days_or_without_a_time() {
        let now = Utc::now();
        let token = member_token(now, &[1; 32]);
        assert!(!needs_rotation(&token, now + Duration::days(15), now));
        assert!(needs_rotation(&token, now + Duration::days(14), now));
        assert!(needs_rotation("opaque", now + Duration::days(80), now));
    }

    #[test]
    fn only_bare_http_origins_pass() {
        assert_eq!(
            bare_origin("https://Cal.Example.com/").as_deref(),
            Some("https://cal.example.com")
        );
        assert_eq!(
            bare_origin("http://127.0.0.1:8080").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            bare_origin("https://example.com:443").as_deref(),
            Some("https://example.com")
        );
        for bad in [
            "",
            "example.com",
            "ftp://example.com",
            "file:///etc/passwd",
            "https://user:pw@example.com",
            "https://example.com/path",
            "https://example.com/?q=1",
            "https://example.com/#x",
            "javascript:alert(1)",
        ] {
            assert_eq!(bare_origin(bad), None, "{bad}");
        }
        assert_eq!(origin_label("http://127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(origin_label("https://cal.example.com"), "cal.example.com");
    }

    #[test]
    fn invite_tokens_and_profiles() {
        assert!(is_invite_token("0b6f8c9e-3f7a-4d2b-9a41-5c1e2d3f4a5b"));
        assert!(!is_invite_token("short"));
        assert!(!is_invite_token("0B6F8C9E-3F7A-4D2B-9A41-5C1E2D3F4A5B"));
        assert!(!is_invite_token("../../../etc/passwd-abcdef"));
        let profile =
            Profile::checked(" Ana ", "Ana@Example.com", "https://b.example/", None).unwrap();
        assert_eq!(profile.email, "ana@example.com");
        assert_eq!(profile.home_server, "https://b.example");
        assert_eq!(
            Profile::checked("", "a@b.co", "https://b.example", None),
            Err(ProfileError::Invalid)
        );
        assert_eq!(
            Profile::checked("Ana", "a@b.co", "https://b.example/x", None),
            Err(ProfileError::HomeServer)
        );
        assert_eq!(
            stand_in_email("https://b.example:8443", "abcdefgh"),
            "federated+abcdefgh@b.example"
        );
    }

    #[test]
    fn peers_older_than_the_accept_wire_are_refused() {
        assert!(peer_too_old("0.1.2"));
        assert!(!peer_too_old("0.1.3"));
        assert!(!peer_too_old("0.2.0-beta"));
        assert!(!peer_too_old("not a version"));
    }

    #[test]
    fn the_gateway_forwards_api_v1_paths_only() {
        assert_eq!(
            forwarded_path("api/v1/calendars").as_deref(),
            Some("/api/v1/calendars")
        );
        assert_eq!(
            forwarded_path("api/v1/events/abc/attendees").as_deref(),
            Some("/api/v1/events/abc/attendees")
        );
        for bad in [
            "api/v1/",
            "api/auth/get-session",
            "api/v1/../auth/get-session",
            "api/v1/%2e%2e/auth",
            "api/v1/%2E%2E/auth",
            "api/v1/calendars%2f..%2fauth",
            "api/v1//calendars",
            "api/v1/calendars/./x",
            "api/v1/a\\..\\b",
            "api/v1/a%5c..",
            "api/v1/a%252e%252e",
            "api/stream",
            "/api/v1/calendars",
        ] {
            assert_eq!(forwarded_path(bad), None, "{bad}");
        }
    }
}
