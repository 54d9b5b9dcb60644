//! Conditional reads (RFC 9110, section 13): a read route names what its answer was built
//! from (the versions the store keeps, the rows' revisions) in an entity tag, and a client
//! that sends that tag back in `If-None-Match` gets `304 Not Modified` without a body. Tags
//! are weak: two answers with one tag carry the same data, though a field such as
//! `serverTime` may differ. Answers are per user (`Cache-Control: private, no-cache`: a
//! browser keeps them and asks again every time).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::StatusCode;
use http::header::{CACHE_CONTROL, ETAG, HeaderValue};
use sha2::{Digest, Sha256};
use warp::reply::Response;
use warp::{Filter, Rejection};

use crate::domain::ids::UserId;

/// An entity tag: what one user's answer of one resource was built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityTag(String);

impl EntityTag {
    /// The weak tag of `resource` as `user` reads it at `versions` (any text that changes
    /// whenever the answer's data does). The user is part of it, so that one browser signed
    /// in as two users never mixes their answers.
    pub fn weak(resource: &str, user: &UserId, versions: &str) -> Self {
        Self::digest(resource, user.as_str(), versions)
    }

    /// The weak tag of `resource`, the same for every reader (no user), at `versions`.
    pub fn public(resource: &str, versions: &str) -> Self {
        Self::digest(resource, "", versions)
    }

    fn digest(resource: &str, user: &str, versions: &str) -> Self {
        let mut digest = Sha256::new();
        for part in [resource, user, versions] {
            digest.update(part.len().to_le_bytes());
            digest.update(part.as_bytes());
        }
        let digest = digest.finalize();
        Self(format!("W/\"{}\"", URL_SAFE_NO_PAD.encode(&digest[..18])))
    }

    /// Whether an `If-None-Match` header names this tag (weak comparison; `*` names any).
    pub fn matched_by(&self, if_none_match: Option<&str>) -> bool {
        let Some(header) = if_none_match else {
            return false;
        };
        let mine = opaque(&self.0);
        header.split(',').map(str::trim).any(|candidate| {
            candidate == "*" || (!candidate.is_empty() && opaque(candidate) == mine)
        })
    }
}

/// A tag without its weakness indicator.
fn opaque(tag: &str) -> &str {
    tag.strip_prefix("W/").unwrap_or(tag)
}

/// The request's `If-None-Match` header, if any.
pub fn if_none_match() -> impl Filter<Extract = (Option<String>,), Error = Rejection> + Clone {
    warp::header::optional::<String>("if-none-match")
}

/// `304 Not Modified` for a client that holds the answer tagged `tag`.
pub fn not_modified(tag: &EntityTag) -> Response {
    let response = warp::reply::with_status(warp::reply(), StatusCode::NOT_MODIFIED);
    tagged(warp::Reply::into_response(response), tag)
}

/// `response` with its tag and the caching rule of per-user reads.
pub fn tagged(mut response: Response, tag: &EntityTag) -> Response {
    if let Ok(value) = HeaderValue::from_str(&tag.0) {
        response.headers_mut().insert(ETAG, value);
    }
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("private, no-cache"));
    response
}

/// `build`'s answer tagged `tag`, or 304 when `if_none_match` names the tag (then `build`
/// does not run).
pub fn answer(
    tag: &EntityTag,
    if_none_match: Option<&str>,
    build: impl FnOnce() -> Response,
) -> Response {
    if tag.matched_by(if_none_match) {
        not_modified(tag)
    } else {
        tagged(build(), tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_name_resource_user_and_versions() {
        let (u1, u2) = (UserId::from("u1"), UserId::from("u2"));
        let tag = EntityTag::weak("events", &u1, "c1:4");
        assert_eq!(tag, EntityTag::weak("events", &u1, "c1:4"));
        assert_ne!(tag, EntityTag::weak("events", &u1, "c1:5"));
        assert_ne!(tag, EntityTag::weak("events", &u2, "c1:4"));
        assert_ne!(tag, EntityTag::weak("calendars", &u1, "c1:4"));
        assert_ne!(tag, EntityTag::public("events", "c1:4"));
        // Parts cannot run into each other.
        assert_ne!(
            EntityTag::weak("a", &UserId::from("bc"), ""),
            EntityTag::weak("ab", &UserId::from("c"), "")
        );
        assert_ne!(EntityTag::public("ab", "c"), EntityTag::public("a", "bc"));
        assert!(tag.0.starts_with("W/\"") && tag.0.ends_with('"'));
    }

    #[test]
    fn if_none_match_compares_weakly_and_lists() {
        let tag = EntityTag::weak("events", &UserId::from("u1"), "c1:4");
        let strong = tag.0.trim_start_matches("W/").to_owned();
        assert!(tag.matched_by(Some(&tag.0)));
        assert!(tag.matched_by(Some(&strong)));
        assert!(tag.matched_by(Some(&format!("W/\"other\", {}", tag.0))));
        assert!(tag.matched_by(Some("*")));
        assert!(!tag.matched_by(Some("W/\"other\"")));
        assert!(!tag.matched_by(Some("")));
        assert!(!tag.matched_by(None));
    }
}
