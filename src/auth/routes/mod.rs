//! `/api/auth/*`: the endpoints of better-auth 1.7.25 that the clients use, owned entirely
//! by this subsystem.
//!
//! One filter takes every `/api/auth/` request and routes it by method and path (exact
//! match; an unknown path or method is a 404, as in better-auth). Before a handler runs, the
//! request passes the checks better-auth's router applies: rate limit, content type, origin
//! (CSRF) and callback-URL rules.

mod email;
mod password;
mod session;
mod social;
mod user;
mod verification;
pub mod wire;

use std::collections::HashMap;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http::header::{CONTENT_TYPE, USER_AGENT};
use http::{HeaderMap, Method};
use serde_json::{Map, Value};
use warp::filters::BoxedFilter;
use warp::path::Tail;
use warp::reply::Response;
use warp::{Filter, Rejection};

use super::csrf;
use super::error::AuthError;
use super::principal::{self, Identity, Presented, Resolution, SessionIdentity};
use super::session::{AuthReply, ClientInfo};
use crate::context::Ctx;
use crate::error::AppError;
use crate::http::extract::{JSON_BODY_LIMIT, body_bytes, request_ctx, with_ctx};
use crate::http::rate_limit::{self, Rule};
use crate::http::rejection::reject;
use crate::http::request::RequestCtx;

/// The endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Ok,
    Error,
    SignUpEmail,
    SignInEmail,
    SignInSocial,
    GetSession,
    PostGetSession,
    SignOut,
    ListSessions,
    RevokeSession,
    RevokeSessions,
    RevokeOtherSessions,
    ChangePassword,
    RequestPasswordReset,
    ResetPasswordCallback,
    ResetPassword,
    SendVerificationEmail,
    VerifyEmail,
    ChangeEmail,
    UpdateUser,
    ListAccounts,
    UnlinkAccount,
    LinkSocial,
    DeleteUser,
    DeleteUserCallback,
}

impl Endpoint {
    /// The endpoint and its route pattern for a method and a path below `/api/auth/`.
    fn find(method: &Method, path: &str) -> Option<(Self, &'static str)> {
        use Endpoint::*;
        let get = *method == Method::GET;
        let post = *method == Method::POST;
        let found = match path {
            "ok" if get => (Ok, "/api/auth/ok"),
            "error" if get => (Error, "/api/auth/error"),
            "sign-up/email" if post => (SignUpEmail, "/api/auth/sign-up/email"),
            "sign-in/email" if post => (SignInEmail, "/api/auth/sign-in/email"),
            "sign-in/social" if post => (SignInSocial, "/api/auth/sign-in/social"),
            "get-session" if get => (GetSession, "/api/auth/get-session"),
            "get-session" if post => (PostGetSession, "/api/auth/get-session"),
            "sign-out" if post => (SignOut, "/api/auth/sign-out"),
            "list-sessions" if get => (ListSessions, "/api/auth/list-sessions"),
            "revoke-session" if post => (RevokeSession, "/api/auth/revoke-session"),
            "revoke-sessions" if post => (RevokeSessions, "/api/auth/revoke-sessions"),
            "revoke-other-sessions" if post => {
                (RevokeOtherSessions, "/api/auth/revoke-other-sessions")
            }
            "change-password" if post => (ChangePassword, "/api/auth/change-password"),
            "request-password-reset" if post => {
                (RequestPasswordReset, "/api/auth/request-password-reset")
            }
            "forget-password" if post => (RequestPasswordReset, "/api/auth/forget-password"),
            "reset-password" if post => (ResetPassword, "/api/auth/reset-password"),
            "send-verification-email" if post => {
                (SendVerificationEmail, "/api/auth/send-verification-email")
            }
            "verify-email" if get => (VerifyEmail, "/api/auth/verify-email"),
            "change-email" if post => (ChangeEmail, "/api/auth/change-email"),
            "update-user" if post => (UpdateUser, "/api/auth/update-user"),
            "list-accounts" if get => (ListAccounts, "/api/auth/list-accounts"),
            "unlink-account" if post => (UnlinkAccount, "/api/auth/unlink-account"),
            "link-social" if post => (LinkSocial, "/api/auth/link-social"),
            "delete-user" if post => (DeleteUser, "/api/auth/delete-user"),
            "delete-user/callback" if get => (DeleteUserCallback, "/api/auth/delete-user/callback"),
            other if get && reset_token_of(other).is_some() => {
                (ResetPasswordCallback, "/api/auth/reset-password/:token")
            }
            _ => return None,
        };
        Some(found)
    }

    /// better-auth's rate-limit rule for the path.
    fn rate_rule(self) -> Rule {
        use Endpoint::*;
        match self {
            SignUpEmail | SignInEmail | SignInSocial | ChangePassword | ChangeEmail => {
                rate_limit::AUTH_CREDENTIALS
            }
            RequestPasswordReset | SendVerificationEmail => rate_limit::AUTH_MAIL,
            _ => rate_limit::AUTH_DEFAULT,
        }
    }

    /// Sign-in and sign-up also take form bodies and apply the Fetch-Metadata CSRF rules.
    fn is_form_route(self) -> bool {
        matches!(self, Endpoint::SignInEmail | Endpoint::SignUpEmail)
    }
}

/// The token of a `reset-password/<token>` path.
fn reset_token_of(path: &str) -> Option<&str> {
    path.strip_prefix("reset-password/")
        .filter(|token| !token.is_empty() && !token.contains('/'))
}

/// Every `/api/auth/*` route.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    let query = warp::query::raw().or(warp::any().map(String::new)).unify();
    warp::path("api")
        .and(warp::path("auth"))
        .and(warp::path::tail())
        .and(warp::method())
        .and(warp::header::headers_cloned())
        .and(query)
        .and(body_bytes(JSON_BODY_LIMIT))
        .and(with_ctx(ctx))
        .and(request_ctx())
        .and_then(dispatch)
        .boxed()
}

#[allow(clippy::too_many_arguments)]
async fn dispatch(
    tail: Tail,
    method: Method,
    headers: HeaderMap,
    query: String,
    body: Bytes,
    ctx: Ctx,
    rctx: RequestCtx,
) -> Result<Response, Rejection> {
    let path = tail.as_str().to_owned();
    let Some((endpoint, pattern)) = Endpoint::find(&method, &path) else {
        return Err(reject(AppError::not_found("Not found.")));
    };
    rctx.set_route(pattern);
    let result = async {
        let request = AuthRequest::new(ctx, rctx, method, headers, &query, &body, endpoint)?;
        request.preflight(endpoint, pattern)?;
        handle(endpoint, &request, &path).await
    }
    .await;
    result.map(AuthReply::into_response).map_err(reject)
}

async fn handle(endpoint: Endpoint, req: &AuthRequest, path: &str) -> Result<AuthReply, AppError> {
    use Endpoint::*;
    match endpoint {
        Ok => Result::Ok(AuthReply::json(serde_json::json!({ "ok": true }))),
        Error => Result::Ok(user::error_page(req)),
        SignUpEmail => email::sign_up(req).await,
        SignInEmail => email::sign_in(req).await,
        SignInSocial => social::sign_in(req).await,
        GetSession => session::get_session(req).await,
        PostGetSession => Err(AuthError::method_not_allowed_defer_session().into()),
        SignOut => session::sign_out(req).await,
        ListSessions => session::list_sessions(req).await,
        RevokeSession => session::revoke_session(req).await,
        RevokeSessions => session::revoke_sessions(req, false).await,
        RevokeOtherSessions => session::revoke_sessions(req, true).await,
        ChangePassword => password::change_password(req).await,
        RequestPasswordReset => password::request_reset(req).await,
        ResetPasswordCallback => {
            password::reset_callback(req, reset_token_of(path).unwrap_or_default()).await
        }
        ResetPassword => password::reset_password(req).await,
        SendVerificationEmail => verification::send_verification_email(req).await,
        VerifyEmail => verification::verify_email(req).await,
        ChangeEmail => verification::change_email(req).await,
        UpdateUser => user::update_user(req).await,
        ListAccounts => user::list_accounts(req).await,
        UnlinkAccount => user::unlink_account(req).await,
        LinkSocial => social::link_social(req).await,
        DeleteUser => user::delete_user(req).await,
        DeleteUserCallback => user::delete_user_callback(req).await,
    }
}

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
    fn new(
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
    fn preflight(&self, endpoint: Endpoint, pattern: &str) -> Result<(), AppError> {
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
        if self.now - session.session.created_at >= super::session::FRESH_AGE {
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
