//! What a handler of the fake answers: a status, headers and a JSON body, and the error
//! bodies of Graph (`{"error":{"code","message","innerError"}}`) and of the identity
//! platform (`{"error","error_description":"AADSTS…","error_codes",…}`).

use serde_json::{Value, json};

use super::times::format_utc;

/// A Graph request refused: status, `error.code` and `error.message`.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) status: u16,
    pub(super) code: String,
    pub(super) message: String,
}

impl Failure {
    pub(super) fn new(status: u16, code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            code: code.to_owned(),
            message: message.into(),
        }
    }

    /// 400 `ErrorInvalidRequest`.
    pub(super) fn invalid(message: impl Into<String>) -> Self {
        Self::new(400, "ErrorInvalidRequest", message)
    }

    /// 403 `ErrorAccessDenied` (a calendar the user cannot write).
    pub(super) fn access_denied() -> Self {
        Self::new(
            403,
            "ErrorAccessDenied",
            "Access is denied. Check credentials and try again.",
        )
    }

    /// 404 `ErrorItemNotFound`.
    pub(super) fn not_found() -> Self {
        Self::new(
            404,
            "ErrorItemNotFound",
            "The specified object was not found in the store.",
        )
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Option<Value>,
}

impl Reply {
    pub(super) fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Some(body),
        }
    }

    pub(super) fn empty(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: None,
        }
    }

    pub(super) fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// Graph's error envelope; `innerError` gets its ids where the request is known.
    pub(super) fn graph_error(failure: Failure) -> Self {
        Self::json(
            failure.status,
            json!({"error": {
                "code": failure.code,
                "message": failure.message,
                "innerError": {
                    "date": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S").to_string(),
                    "request-id": "",
                    "client-request-id": "",
                },
            }}),
        )
    }

    /// The identity platform's error body (`error_description` starts with `AADSTS<code>:`).
    pub(super) fn identity_error(status: u16, error: &str, code: u64, text: &str) -> Self {
        let now = chrono::Utc::now();
        let trace_id = uuid::Uuid::new_v4().to_string();
        let correlation_id = uuid::Uuid::new_v4().to_string();
        let timestamp = now.format("%Y-%m-%d %H:%M:%SZ").to_string();
        Self::json(
            status,
            json!({
                "error": error,
                "error_description": format!(
                    "AADSTS{code}: {text}\r\nTrace ID: {trace_id}\r\nCorrelation ID: {correlation_id}\r\nTimestamp: {}",
                    format_utc(now)
                ),
                "error_codes": [code],
                "timestamp": timestamp,
                "trace_id": trace_id,
                "correlation_id": correlation_id,
                "error_uri": format!("https://login.microsoftonline.com/error?code={code}"),
            }),
        )
    }
}

impl From<Failure> for Reply {
    fn from(failure: Failure) -> Self {
        Self::graph_error(failure)
    }
}
