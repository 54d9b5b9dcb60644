//! [`AppError`]: the one error type every handler, store function and actor reply uses.
//!
//! Each variant maps to exactly one HTTP status in [`AppError::status`], and
//! `http::rejection` renders it once, at the end of the pipeline, as
//! `{ "error": <message>, "requestId": <id> }` plus the extra fields a variant names
//! (`current` on conflicts, `server` on an unreachable federated origin). Errors of the
//! authentication subsystem (`/api/auth/*`) keep better-auth's `{ "message", "code" }` shape
//! instead. A 5xx never carries its cause to the client: the renderer logs the cause chain
//! and sends a fixed text.

use std::borrow::Cow;

use http::StatusCode;
use serde_json::{Map, Value};

/// Text of an error message; static for the common case.
pub type Message = Cow<'static, str>;

/// An error a request can end with.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// 400: the request is malformed or fails validation.
    #[error("{0}")]
    BadRequest(Message),
    /// 401: no valid credential.
    #[error("{0}")]
    Unauthorized(Message),
    /// 403: authenticated, but not allowed.
    #[error("{0}")]
    Forbidden(Message),
    /// 404: no such resource (or route).
    #[error("{0}")]
    NotFound(Message),
    /// 405: the path exists, the method does not.
    #[error("Method not allowed.")]
    MethodNotAllowed,
    /// 409: a compare-and-swap lost; `current` is the state the client must merge with.
    #[error("{error}")]
    Conflict {
        /// Stable code, e.g. `PAGE_CONFLICT`.
        error: Message,
        /// Human-readable explanation.
        message: Message,
        /// The current document.
        current: Option<Value>,
    },
    /// 408: the request's body did not arrive in time.
    #[error("{0}")]
    RequestTimeout(Message),
    /// 413: the body is over the route's limit.
    #[error("{0}")]
    PayloadTooLarge(Message),
    /// 415: the body has a type the route does not take.
    #[error("{0}")]
    UnsupportedMediaType(Message),
    /// 429: a rate limit was hit; the client may retry after that many seconds.
    #[error("Too many requests. Try again later.")]
    TooManyRequests {
        /// Seconds until the window allows another request.
        retry_after_secs: u64,
    },
    /// An authentication-subsystem error in better-auth's wire shape `{message, code}`.
    #[error("{message}")]
    Auth {
        /// Its status.
        status: StatusCode,
        /// better-auth's error code, e.g. `INVALID_EMAIL_OR_PASSWORD` (absent on a few).
        code: Option<&'static str>,
        /// The message.
        message: Message,
    },
    /// better-auth's rate-limit answer: `{message}` and `X-Retry-After`.
    #[error("Too many requests. Please try again later.")]
    AuthRateLimited {
        /// Seconds until another request is allowed.
        retry_after_secs: u64,
    },
    /// 502: an upstream server (federated peer, provider) could not be reached.
    #[error("{error}")]
    BadGateway {
        /// Stable code, e.g. `FederatedServerUnreachable`.
        error: Message,
        /// Human-readable explanation.
        message: Message,
        /// The upstream origin.
        server: Option<String>,
    },
    /// 503: an actor died or did not answer in time; the cause is logged, not sent.
    #[error("service unavailable: {0}")]
    Unavailable(Message),
    /// 500: anything else; the cause is logged, not sent.
    #[error(transparent)]
    Internal(Box<dyn std::error::Error + Send + Sync>),
}

/// The fixed text a 500 carries instead of its cause.
pub const INTERNAL_ERROR_TEXT: &str = "500 - Internal Server Error";
/// The fixed text a 503 carries instead of its cause.
pub const UNAVAILABLE_TEXT: &str = "Service temporarily unavailable. Try again shortly.";

impl AppError {
    /// The same error for another caller (one failure answering several commands, as in a
    /// group commit); an internal cause is carried as its text.
    pub fn replicate(&self) -> Self {
        match self {
            Self::BadRequest(m) => Self::BadRequest(m.clone()),
            Self::Unauthorized(m) => Self::Unauthorized(m.clone()),
            Self::Forbidden(m) => Self::Forbidden(m.clone()),
            Self::NotFound(m) => Self::NotFound(m.clone()),
            Self::MethodNotAllowed => Self::MethodNotAllowed,
            Self::Conflict {
                error,
                message,
                current,
            } => Self::Conflict {
                error: error.clone(),
                message: message.clone(),
                current: current.clone(),
            },
            Self::RequestTimeout(m) => Self::RequestTimeout(m.clone()),
            Self::PayloadTooLarge(m) => Self::PayloadTooLarge(m.clone()),
            Self::UnsupportedMediaType(m) => Self::UnsupportedMediaType(m.clone()),
            Self::TooManyRequests { retry_after_secs } => Self::TooManyRequests {
                retry_after_secs: *retry_after_secs,
            },
            Self::Auth {
                status,
                code,
                message,
            } => Self::Auth {
                status: *status,
                code: *code,
                message: message.clone(),
            },
            Self::AuthRateLimited { retry_after_secs } => Self::AuthRateLimited {
                retry_after_secs: *retry_after_secs,
            },
            Self::BadGateway {
                error,
                message,
                server,
            } => Self::BadGateway {
                error: error.clone(),
                message: message.clone(),
                server: server.clone(),
            },
            Self::Unavailable(m) => Self::Unavailable(m.clone()),
            Self::Internal(cause) => Self::internal(cause.to_string()),
        }
    }

    /// A 400 with `message`.
    pub fn bad_request(message: impl Into<Message>) -> Self {
        Self::BadRequest(message.into())
    }

    /// A 403 with `message`.
    pub fn forbidden(message: impl Into<Message>) -> Self {
        Self::Forbidden(message.into())
    }

    /// A 404 with `message`.
    pub fn not_found(message: impl Into<Message>) -> Self {
        Self::NotFound(message.into())
    }

    /// A 500 wrapping any error; the cause goes to the log only.
    pub fn internal(err: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Internal(err.into())
    }

    /// The HTTP status of this error: the one table.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::TooManyRequests { .. } | Self::AuthRateLimited { .. } => {
                StatusCode::TOO_MANY_REQUESTS
            }
            Self::Auth { status, .. } => *status,
            Self::BadGateway { .. } => StatusCode::BAD_GATEWAY,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The `error` field clients see. Server-side failures never show their cause.
    pub fn client_message(&self) -> Cow<'_, str> {
        match self {
            Self::Internal(_) => INTERNAL_ERROR_TEXT.into(),
            Self::Unavailable(_) => UNAVAILABLE_TEXT.into(),
            other => other.to_string().into(),
        }
    }

    /// Headers this error's response carries besides the content type.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::TooManyRequests { retry_after_secs } => {
                vec![("retry-after", retry_after_secs.to_string())]
            }
            Self::AuthRateLimited { retry_after_secs } => {
                vec![("x-retry-after", retry_after_secs.to_string())]
            }
            _ => Vec::new(),
        }
    }

    /// The JSON body for `request_id`: `{error, requestId}` plus this variant's fields, or
    /// better-auth's `{message, code}` for authentication errors.
    pub fn body(&self, request_id: &str) -> Map<String, Value> {
        let mut body = Map::new();
        match self {
            Self::Auth { code, message, .. } => {
                body.insert("message".into(), message.to_string().into());
                if let Some(code) = code {
                    body.insert("code".into(), (*code).into());
                }
                return body;
            }
            Self::AuthRateLimited { .. } => {
                body.insert("message".into(), self.to_string().into());
                return body;
            }
            _ => {}
        }
        body.insert("error".into(), self.client_message().into_owned().into());
        body.insert("requestId".into(), request_id.into());
        match self {
            Self::Conflict {
                message, current, ..
            } => {
                body.insert("message".into(), message.to_string().into());
                body.insert("current".into(), current.clone().unwrap_or(Value::Null));
            }
            Self::BadGateway {
                message, server, ..
            } => {
                body.insert("message".into(), message.to_string().into());
                if let Some(server) = server {
                    body.insert("server".into(), server.clone().into());
                }
            }
            _ => {}
        }
        body
    }
}

impl From<sea_orm::DbErr> for AppError {
    fn from(err: sea_orm::DbErr) -> Self {
        Self::Internal(Box::new(err))
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body(err: &AppError) -> Value {
        Value::Object(err.body("req-1"))
    }

    #[test]
    fn status_table() {
        let cases = [
            (AppError::bad_request("x"), 400),
            (AppError::Unauthorized("x".into()), 401),
            (AppError::forbidden("x"), 403),
            (AppError::not_found("x"), 404),
            (AppError::MethodNotAllowed, 405),
            (
                AppError::Conflict {
                    error: "x".into(),
                    message: "y".into(),
                    current: None,
                },
                409,
            ),
            (AppError::PayloadTooLarge("x".into()), 413),
            (AppError::UnsupportedMediaType("x".into()), 415),
            (
                AppError::TooManyRequests {
                    retry_after_secs: 1,
                },
                429,
            ),
            (
                AppError::AuthRateLimited {
                    retry_after_secs: 1,
                },
                429,
            ),
            (
                AppError::Auth {
                    status: StatusCode::UNPROCESSABLE_ENTITY,
                    code: Some("X"),
                    message: "x".into(),
                },
                422,
            ),
            (
                AppError::BadGateway {
                    error: "x".into(),
                    message: "y".into(),
                    server: None,
                },
                502,
            ),
            (AppError::Unavailable("x".into()), 503),
            (AppError::internal("x"), 500),
        ];
        for (err, status) in cases {
            assert_eq!(err.status().as_u16(), status, "{err:?}");
        }
    }

    #[test]
    fn client_errors_keep_their_message() {
        assert_eq!(
            body(&AppError::bad_request("since must be a valid timestamp.")),
            json!({"error": "since must be a valid timestamp.", "requestId": "req-1"})
        );
    }

    #[test]
    fn server_errors_hide_their_cause() {
        let err = AppError::internal("password authentication failed for user bowline");
        assert_eq!(
            body(&err),
            json!({"error": INTERNAL_ERROR_TEXT, "requestId": "req-1"})
        );
        let err = AppError::Unavailable("calendar actor timed out".into());
        assert_eq!(
            body(&err),
            json!({"error": UNAVAILABLE_TEXT, "requestId": "req-1"})
        );
    }

    #[test]
    fn conflicts_carry_current() {
        let err = AppError::Conflict {
            error: "PAGE_CONFLICT".into(),
            message: "Page changed on another device.".into(),
            current: Some(json!({"revision": 3})),
        };
        assert_eq!(
            body(&err),
            json!({
                "error": "PAGE_CONFLICT",
                "message": "Page changed on another device.",
                "current": {"revision": 3},
                "requestId": "req-1"
            })
        );
    }

    #[test]
    fn auth_errors_use_the_better_auth_shape() {
        let err = AppError::Auth {
            status: StatusCode::UNAUTHORIZED,
            code: Some("INVALID_EMAIL_OR_PASSWORD"),
            message: "Invalid email or password".into(),
        };
        assert_eq!(
            body(&err),
            json!({"message": "Invalid email or password", "code": "INVALID_EMAIL_OR_PASSWORD"})
        );
        let limited = AppError::AuthRateLimited {
            retry_after_secs: 7,
        };
        assert_eq!(
            body(&limited),
            json!({"message": "Too many requests. Please try again later."})
        );
        assert_eq!(limited.headers(), vec![("x-retry-after", "7".to_owned())]);
    }

    #[test]
    fn bad_gateway_names_the_server() {
        let err = AppError::BadGateway {
            error: "FederatedServerUnreachable".into(),
            message: "The connected server could not be reached.".into(),
            server: Some("https://peer.example".into()),
        };
        assert_eq!(body(&err)["server"], "https://peer.example");
        assert_eq!(err.status(), StatusCode::BAD_GATEWAY);
    }
}
