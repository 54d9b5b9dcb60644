//! What a JSON body must be before any route reads it: well-formed, and free of U+0000 in
//! every string (keys included). PostgreSQL's `TEXT` and `jsonb` cannot store NUL, so a
//! `"\u0000"` that reached the store would fail the insert (a 500); refusing it at the edge
//! makes it a clear 400 on every route and on both databases alike.
//!
//! The check walks the document with a visitor that keeps nothing, so it costs about what
//! parsing into [`serde::de::IgnoredAny`] does. A raw NUL byte is already invalid JSON.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

/// Why a body is not acceptable JSON.
#[derive(Debug)]
pub enum JsonProblem {
    /// Not JSON at all (the parser's message).
    Malformed(serde_json::Error),
    /// A string holds U+0000.
    Nul,
}

/// The client-facing text of [`JsonProblem::Nul`].
pub const NUL_MESSAGE: &str = "Request body must not contain NUL characters (\\u0000).";

/// Checks that `bytes` is one JSON document whose strings hold no NUL. Blank bodies are the
/// caller's business (they are not checked here).
pub fn check(bytes: &[u8]) -> Result<(), JsonProblem> {
    match serde_json::from_slice::<NoNul>(bytes) {
        Ok(NoNul) => Ok(()),
        // The visitor's only data error is the NUL; everything else is syntax or EOF.
        Err(err) if err.classify() == serde_json::error::Category::Data => Err(JsonProblem::Nul),
        Err(err) => Err(JsonProblem::Malformed(err)),
    }
}

/// A JSON value of any shape without NUL in its strings.
struct NoNul;

impl<'de> Deserialize<'de> for NoNul {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NoNulVisitor)
    }
}

struct NoNulVisitor;

impl<'de> Visitor<'de> for NoNulVisitor {
    type Value = NoNul;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value without NUL characters")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<NoNul, E> {
        Ok(NoNul)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<NoNul, E> {
        Ok(NoNul)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<NoNul, E> {
        Ok(NoNul)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<NoNul, E> {
        Ok(NoNul)
    }

    fn visit_unit<E: de::Error>(self) -> Result<NoNul, E> {
        Ok(NoNul)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<NoNul, E> {
        if value.contains('\0') {
            Err(E::custom("NUL character in a string"))
        } else {
            Ok(NoNul)
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NoNul, A::Error> {
        while seq.next_element::<NoNul>()?.is_some() {}
        Ok(NoNul)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NoNul, A::Error> {
        while map.next_entry::<NoNul, NoNul>()?.is_some() {}
        Ok(NoNul)
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn accepts_any_json_without_nul() {
        for ok in [
            r#"{"a": [1, -2, 3.5, true, null, "x\u0001y", {"b": "\\u0000"}]}"#,
            "\"plain\"",
            "[]",
        ] {
            assert!(check(ok.as_bytes()).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_nul_in_values_and_keys_at_any_depth() {
        for nul in [
            r#"{"title": "a\u0000b"}"#,
            r#"{"a": {"b": ["x", "\u0000"]}}"#,
            r#"{"ke\u0000y": 1}"#,
            r#""\u0000""#,
        ] {
            assert!(
                matches!(check(nul.as_bytes()), Err(JsonProblem::Nul)),
                "{nul}"
            );
        }
    }

    #[test]
    fn malformed_json_is_told_apart() {
        for bad in ["{", "{\"a\": 1,}", "nope", "\"raw \0 byte\"", "{} {}"] {
            assert!(
                matches!(check(bad.as_bytes()), Err(JsonProblem::Malformed(_))),
                "{bad:?}"
            );
        }
    }
}
