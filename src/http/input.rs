//! Why a JSON body does not fit the type a route reads it into, said without repeating the
//! value: the field's path and what it should be (`calendars[0]: expected a string`), never
//! what was sent (`invalid type: integer 987654321012` would reach the response and the
//! access log). Only run once parsing failed: it parses the body a second time through
//! serde-value, whose errors keep the expectation apart from the value.

use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_value::DeserializerError;

/// A body field (or a whole body) whose wrong kind a route refuses in its own words rather
/// than with the parser's: the value when it has the expected kind, or the mark that it was
/// something else (never kept, never echoed).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Lenient<T> {
    /// The expected kind of value.
    Valid(T),
    /// Anything else.
    Invalid(IgnoredAny),
}

impl<T> Lenient<T> {
    /// The value, if it had the expected kind.
    pub fn valid(self) -> Option<T> {
        match self {
            Self::Valid(value) => Some(value),
            Self::Invalid(_) => None,
        }
    }
}

impl<T: Default> Lenient<T> {
    /// The value, or the default when it was something else (a body that is not an object
    /// reads as an object without fields).
    pub fn or_default(self) -> T {
        self.valid().unwrap_or_default()
    }
}

/// A body field told apart in three: absent, present with the expected kind of value, or
/// present with anything else, `null` included (use it with `#[serde(default)]`).
#[derive(Debug, Clone, Default)]
pub enum Field<T> {
    /// Not sent.
    #[default]
    Absent,
    /// Sent, of the expected kind.
    Valid(T),
    /// Sent as anything else.
    Invalid,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Field<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Lenient::<T>::deserialize(deserializer)? {
            Lenient::Valid(value) => Self::Valid(value),
            Lenient::Invalid(_) => Self::Invalid,
        })
    }
}

/// What is wrong with `body` for `T`, naming the field and the expected kind of value.
pub fn shape_problem<T: DeserializeOwned>(body: &serde_json::Value) -> String {
    let Ok(value) = serde_value::to_value(body) else {
        return "the body does not have the expected shape".into();
    };
    let deserializer = serde_value::ValueDeserializer::<DeserializerError>::new(value);
    match serde_path_to_error::deserialize::<_, T>(deserializer) {
        Ok(_) => "the body does not have the expected shape".into(),
        Err(err) => {
            let segments: Vec<_> = err.path().iter().collect();
            // An unknown field is named by its parent: its name is the client's text.
            let named = match err.inner() {
                DeserializerError::UnknownField(_, _) => segments.len().saturating_sub(1),
                _ => segments.len(),
            };
            describe(&path_text(&segments[..named]), err.inner())
        }
    }
}

/// `a.b[2].c`.
fn path_text(segments: &[&serde_path_to_error::Segment]) -> String {
    let mut text = String::new();
    for segment in segments {
        match segment {
            serde_path_to_error::Segment::Seq { index } => text.push_str(&format!("[{index}]")),
            other => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(&other.to_string());
            }
        }
    }
    text
}

fn describe(path: &str, err: &DeserializerError) -> String {
    let at_root = path.is_empty() || path == ".";
    let field = |what: String| {
        if at_root {
            format!("the body {what}")
        } else {
            format!("{path} {what}")
        }
    };
    match err {
        DeserializerError::InvalidType(_, _) if at_root => "the body must be a JSON object".into(),
        DeserializerError::InvalidType(_, expected)
        | DeserializerError::InvalidValue(_, expected)
        | DeserializerError::InvalidLength(_, expected) => field(format!("must be {expected}")),
        DeserializerError::UnknownVariant(_, expected) => field(format!(
            "must be one of {}",
            expected
                .iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        DeserializerError::UnknownField(_, _) => field("has a field it does not take".into()),
        DeserializerError::MissingField(name) if at_root => format!("{name} is required"),
        DeserializerError::MissingField(name) => format!("{path}.{name} is required"),
        DeserializerError::DuplicateField(name) => format!("{name} is given twice"),
        DeserializerError::Custom(_) => field("has a value of the wrong kind".into()),
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Body {
        id: String,
        calendars: Vec<String>,
        is_all_day: bool,
        #[serde(default)]
        role: Option<Role>,
        #[serde(default)]
        count: Option<u8>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Role {
        Viewer,
        Editor,
    }

    fn problem(body: serde_json::Value) -> String {
        shape_problem::<Body>(&body)
    }

    #[test]
    fn problems_name_the_field_and_the_expectation_never_the_value() {
        let base = json!({ "id": "a", "calendars": ["b"], "isAllDay": false });
        let with = |key: &str, value: serde_json::Value| {
            let mut body = base.clone();
            body[key] = value;
            body
        };
        let cases = [
            (
                with("id", json!(987_654_321_012_u64)),
                "id must be a string",
            ),
            (
                with("calendars", json!(["b", 987_654_321_012_u64])),
                "calendars[1] must be a string",
            ),
            (
                with("isAllDay", json!("secret words")),
                "isAllDay must be a boolean",
            ),
            (
                with("role", json!("secret words")),
                "role must be one of `viewer`, `editor`",
            ),
            (
                with("count", json!(987_654_321_012_u64)),
                "count must be u8",
            ),
            (
                with("secret words", json!(1)),
                "the body has a field it does not take",
            ),
            (json!({ "id": "a" }), "calendars is required"),
            (json!(987_654_321_012_u64), "the body must be a JSON object"),
        ];
        for (body, expected) in cases {
            let text = problem(body);
            assert!(text.contains(expected), "{text} / {expected}");
            assert!(!text.contains("987654321012"), "{text}");
            assert!(!text.contains("secret"), "{text}");
        }
    }
}
