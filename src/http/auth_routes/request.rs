//! One `/api/auth/*` request, parsed the way better-auth parses it (a JSON object, or a form
//! for the sign-in and sign-up routes), with the checks its router applies before a handler
//! (rate limit, origin, callback URLs) and the field accessors handlers read it through.

use std::collections::HashMap;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http::header::{CONTENT_TYPE, USER_AGENT};
use http::{HeaderMap, Method};
use serde_json::{Map, Value};

use super::Endpoint;
use crate::auth::csrf;
use crate::auth::error::AuthError;
use crate::auth::principal::{self, Identity, Presented, Resolution, SessionIdentity};
use crate::auth::session::{ClientInfo, FRESH_AGE};
use crate::context::Ctx;
use crate::error::AppError;
use crate::http::request::RequestCtx;

/// One `/api/auth/*` request, parsed.
pub struct AuthRequest {
    /// The server.
    pub ctx: Ctx,
    /// The pipeline's request context.
    pub rctx: RequestCtx,
    /// Method.
    pub method: Method,
    /// Headers.
    pub headers: HeaderMap,
    /// Query parameters.
    pub query: HashMap<String, String>,
    /// The body as a JSON object (`{}` when there was none).
    pub body: Map<String, Value>,
    /// The credentials it carries.
    pub presented: Presented,
    /// When it arrived.
    pub now: DateTime<Utc>,
}

impl AuthRequest {
    pub(super) fn new(
        ctx: Ctx,
        rctx: RequestCtx,
        method: Method,
        headers: HeaderMap,
        query: &str,
        body: &Bytes,
        endpoint: Endpoint,
    ) -> Result<Self, AppError> {
        let body = parse_body(&headers, body, endpoint.is_form_route())?;
        let presented = principal::presented(&headers, ctx.auth.secret());
        Ok(Self {
            query: url::form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect(),
            ctx,
            rctx,
            method,
            headers,
            body,
            presented,
            now: Utc::now(),
        })
    }

    /// Rate limit, origin rules, callback URLs. better-auth counts per `<ip>|<path>`, so
    /// every path has its own budget (sign-in and sign-up do not share one); `pattern` stands
    /// for the path, so `/reset-password/:token` is one bucket, not one per token.
    pub(super) fn preflight(&self, endpoint: Endpoint, pattern: &str) -> Result<(), AppError> {
        if self.ctx.settings.auth.rate_limit {
            let key = format!("{}|{pattern}", self.rctx.client_ip());
            self.ctx
                .limits
                .check(endpoint.rate_rule(), &key, std::time::Instant::now())
                .map_err(|retry_after_secs| AppError::AuthRateLimited { retry_after_secs })?;
        }
        let origins = &self.ctx.auth.origins;
        csrf::check_auth_request(
            origins,
            &self.method,
            &self.headers,
            endpoint.is_form_route(),
        )?;
        csrf::check_body_urls(origins, &Value::Object(self.body.clone()))?;
        if let Some(callback) = self.query.get("callbackURL")
            && !callback.is_empty()
            && !origins.is_allowed_target(callback)
        {
            return Err(AuthError::invalid_callback_url().into());
        }
        Ok(())
    }

    /// A string field: `None` when absent or null, a validation error for other types.
    pub fn str_field(&self, name: &str) -> Result<Option<&str>, AuthError> {
        match self.body.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(value)) => Ok(Some(value)),
            Some(other) => Err(AuthError::validation(
                name,
                &format!(
                    "Invalid input: expected string, received {}",
                    type_name(other)
                ),
            )),
        }
    }

    /// A required string field.
    pub fn required_str(&self, name: &str) -> Result<&str, AuthError> {
        self.str_field(name)?.ok_or_else(|| {
            AuthError::validation(name, "Invalid input: expected string, received undefined")
        })
    }

    /// A required, well-formed email field, lower-cased.
    pub fn required_email(&self, name: &str) -> Result<String, AuthError> {
        let email = self.required_str(name)?.trim().to_lowercase();
        if crate::domain::email::is_valid(&email) {
            Ok(email)
        } else {
            Err(AuthError::validation(name, "Invalid email address"))
        }
    }

    /// The `email` field as better-auth's sign-in routes read it: missing, not text or not an
    /// address alike is `INVALID_EMAIL`.
    pub fn sign_in_email(&self) -> Result<String, AuthError> {
        self.required_email("email")
            .map_err(|_| AuthError::invalid_email())
    }

    /// A boolean field.
    pub fn bool_field(&self, name: &str) -> Result<Option<bool>, AuthError> {
        match self.body.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(value)) => Ok(Some(*value)),
            Some(Value::String(value)) if value == "true" => Ok(Some(true)),
            Some(Value::String(value)) if value == "false" => Ok(Some(false)),
            Some(other) => Err(AuthError::validation(
                name,
                &format!(
                    "Invalid input: expected boolean, received {}",
                    type_name(other)
                ),
            )),
        }
    }

    /// Who the request is.
    pub async fn resolve(&self) -> Result<Resolution, AppError> {
        principal::resolve(&self.ctx.db, &self.presented, self.now).await
    }

    /// The caller's session, or 401.
    pub async fn session(&self) -> Result<SessionIdentity, AppError> {
        match self.resolve().await? {
            Resolution::Authenticated(Identity::Session(session)) => {
                self.rctx.set_user(&session.user.id);
                Ok(*session)
            }
            _ => Err(AuthError::unauthorized().into()),
        }
    }

    /// The caller's session, which must be younger than a day (sensitive listings).
    pub async fn fresh_session(&self) -> Result<SessionIdentity, AppError> {
        let session = self.session().await?;
        if self.now - session.session.created_at >= FRESH_AGE {
            return Err(AuthError::session_not_fresh().into());
        }
        Ok(session)
    }

    /// Address and user agent, for a new session.
    pub fn client(&self) -> ClientInfo {
        ClientInfo {
            ip: self.rctx.client_ip().to_string(),
            user_agent: self
                .headers
                .get(USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// A query parameter.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }
}

/// Appends `key=value` (encoded) to `target`'s query string.
pub fn with_query(target: &str, key: &str, value: &str) -> String {
    let separator = if target.contains('?') { '&' } else { '?' };
    let value: String = url::form_urlencoded::byte_serialize(value.as_bytes()).collect();
    format!("{target}{separator}{key}={value}")
}

/// The JSON type name zod uses in its messages.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The body as an object: JSON, or a form for sign-in and sign-up; 415 for other types.
fn parse_body(
    headers: &HeaderMap,
    body: &Bytes,
    accepts_form: bool,
) -> Result<Map<String, Value>, AppError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let allowed = if accepts_form {
        "application/json, application/x-www-form-urlencoded"
    } else {
        "application/json"
    };
    if mime == "application/json" {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(other) => Err(AuthError::validation(
                "",
                &format!(
                    "Invalid input: expected object, received {}",
                    type_name(&other)
                ),
            )
            .into()),
            Err(_) => Err(AuthError::invalid_json().into()),
        }
    } else if accepts_form && mime == "application/x-www-form-urlencoded" {
        let fields: Map<String, Value> = url::form_urlencoded::parse(body)
            .map(|(key, value)| (key.into_owned(), Value::String(value.into_owned())))
            .collect();
        // JSON bodies were checked by the pipeline; a form's `%00` is the same NUL.
        let nul = fields.iter().any(|(key, value)| {
            key.contains('\0') || value.as_str().is_some_and(|v| v.contains('\0'))
        });
        if nul {
            return Err(AuthError::nul_in_body().into());
        }
        Ok(fields)
    } else {
        Err(AuthError::unsupported_media_type(content_type, allowed).into())
    }
}
