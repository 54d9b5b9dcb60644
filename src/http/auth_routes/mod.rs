//! `/api/auth/*`: the endpoints of better-auth 1.7.25 that the clients use, over the
//! authentication subsystem ([`crate::auth`]).
//!
//! One filter takes every `/api/auth/` request and routes it by method and path (exact
//! match; an unknown path or method is a 404, as in better-auth). Before a handler runs, the
//! request passes the checks better-auth's router applies: rate limit, content type, origin
//! (CSRF) and callback-URL rules.

mod bodies;
mod email;
mod email_code;
mod oauth_link;
mod password;
mod request;
mod session;
mod social;
mod user;
mod verification;
pub mod wire;

pub use request::{AuthRequest, with_query};

use bytes::Bytes;
use http::{HeaderMap, Method};
use warp::filters::BoxedFilter;
use warp::path::Tail;
use warp::reply::Response;
use warp::{Filter, Rejection};

use crate::auth::error::AuthError;
use crate::auth::session::AuthReply;
use crate::context::Ctx;
use crate::error::AppError;
use crate::http::extract::{JSON_BODY_LIMIT, body_bytes, request_ctx, with_ctx};
use crate::http::openapi::schemas::AuthErrorBody;
use crate::http::rejection::reject;
use crate::http::request::RequestCtx;
use crate::rate_limit::{self, Rule};

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
    OAuthCallback,
    ExpoAuthorizationProxy,
    DeleteUser,
    DeleteUserCallback,
    SendVerificationOtp,
    SignInEmailOtp,
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
            "callback/google" | "callback/microsoft" if get => {
                (OAuthCallback, "/api/auth/callback/:id")
            }
            "expo-authorization-proxy" if get => {
                (ExpoAuthorizationProxy, "/api/auth/expo-authorization-proxy")
            }
            "delete-user" if post => (DeleteUser, "/api/auth/delete-user"),
            "delete-user/callback" if get => (DeleteUserCallback, "/api/auth/delete-user/callback"),
            "email-otp/send-verification-otp" if post => (
                SendVerificationOtp,
                "/api/auth/email-otp/send-verification-otp",
            ),
            "sign-in/email-otp" if post => (SignInEmailOtp, "/api/auth/sign-in/email-otp"),
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
            RequestPasswordReset | SendVerificationEmail | SendVerificationOtp | SignInEmailOtp => {
                rate_limit::AUTH_MAIL
            }
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
        Ok => ok(),
        Error => Result::Ok(user::error_page(req)),
        SignUpEmail => email::sign_up(req).await,
        SignInEmail => email::sign_in(req).await,
        SignInSocial => social::sign_in(req).await,
        GetSession => session::get_session(req).await,
        PostGetSession => Err(post_get_session()),
        SignOut => session::sign_out(req).await,
        ListSessions => session::list_sessions(req).await,
        RevokeSession => session::revoke_session(req).await,
        RevokeSessions => session::revoke_sessions(req).await,
        RevokeOtherSessions => session::revoke_other_sessions(req).await,
        ChangePassword => password::change_password(req).await,
        RequestPasswordReset if path == "forget-password" => password::forget_password(req).await,
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
        LinkSocial => link_social(req).await,
        OAuthCallback => {
            oauth_link::callback(req, path.strip_prefix("callback/").unwrap_or_default()).await
        }
        ExpoAuthorizationProxy => oauth_link::expo_proxy(req),
        DeleteUser => user::delete_user(req).await,
        DeleteUserCallback => user::delete_user_callback(req).await,
        SendVerificationOtp => email_code::send_code(req).await,
        SignInEmailOtp => email_code::sign_in(req).await,
    }
}

/// `GET /ok`: the subsystem answers.
#[utoipa::path(
    get,
    path = "/api/auth/ok",
    tag = "auth",
    responses((status = 200, description = "The authentication subsystem answers.", body = wire::Alive))
)]
fn ok() -> Result<AuthReply, AppError> {
    wire::reply(&wire::Alive { ok: true })
}

/// `POST /get-session`: better-auth answers it only with deferred session refresh, which
/// Bowline does not use.
#[utoipa::path(
    post,
    path = "/api/auth/get-session",
    tag = "auth",
    responses(
        (status = 405, description = "Always: `METHOD_NOT_ALLOWED_DEFER_SESSION_REQUIRED` (use `GET`).", body = AuthErrorBody),
    )
)]
fn post_get_session() -> AppError {
    AuthError::method_not_allowed_defer_session().into()
}

/// `POST /link-social`: an `idToken` links that identity at once
/// ([`social::link_social`]); without one, the calendar-link redirect flow starts
/// ([`oauth_link::start`]).
#[utoipa::path(
    post,
    path = "/api/auth/link-social",
    tag = "auth",
    security(("bearer" = []), ("cookie" = [])),
    request_body = bodies::LinkSocial,
    responses(
        (status = 200, description = "With `idToken`: linked (`status: true`, `url` empty). Without: the provider's authorization URL to open (the `better-auth.state` cookie is set, and `Location` too unless `disableRedirect`). 401 `INVALID_TOKEN`, `LINKING_NOT_ALLOWED`; 404 for a provider not configured.",
         body = wire::LinkSocial, headers(("Location" = Option<String>, description = "The authorization URL (redirect flow, without `disableRedirect`)."))),
        (status = 409, description = "The identity is linked to another user (`SOCIAL_ACCOUNT_ALREADY_LINKED`).", body = AuthErrorBody),
    )
)]
async fn link_social(req: &AuthRequest) -> Result<AuthReply, AppError> {
    if req.body.contains_key("idToken") {
        social::link_social(req).await
    } else {
        oauth_link::start(req).await
    }
}

/// This resource's operations in the OpenAPI document (see [`crate::http::openapi`]).
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(
        ok,
        user::error_page,
        email::sign_up,
        email::sign_in,
        social::sign_in,
        session::get_session,
        post_get_session,
        session::sign_out,
        session::list_sessions,
        session::revoke_session,
        session::revoke_sessions,
        session::revoke_other_sessions,
        password::change_password,
        password::request_reset,
        password::forget_password,
        password::reset_callback,
        password::reset_password,
        verification::send_verification_email,
        verification::verify_email,
        verification::change_email,
        user::update_user,
        user::list_accounts,
        user::unlink_account,
        link_social,
        oauth_link::callback,
        oauth_link::expo_proxy,
        user::delete_user,
        user::delete_user_callback,
        email_code::send_code,
        email_code::sign_in,
    ),
    components(schemas(
        wire::User,
        wire::Session,
        wire::Account,
        wire::TokenAndUser,
        wire::SignedIn,
        wire::SessionAndUser,
        wire::Status,
        wire::StatusMessage,
        wire::Success,
        wire::SuccessMessage,
        wire::Verified,
        wire::LinkSocial,
        wire::Alive,
        bodies::SignUpEmail,
        bodies::SignInEmail,
        bodies::SignInSocial,
        bodies::SocialProvider,
        bodies::IdToken,
        bodies::AppleUser,
        bodies::AppleName,
        bodies::RevokeSession,
        bodies::ChangePassword,
        bodies::RequestPasswordReset,
        bodies::ResetPassword,
        bodies::SendVerificationEmail,
        bodies::ChangeEmail,
        bodies::UpdateUser,
        bodies::UnlinkAccount,
        bodies::LinkSocial,
        bodies::DeleteUser,
        bodies::SendVerificationOtp,
        bodies::SignInEmailOtp,
    )),
    tags((name = "auth", description = "better-auth 1.7.25's wire: sign-up and sign-in (password, native id tokens, emailed codes), sessions, passwords, email verification, profile and linked accounts. Errors are `{message, code}`."))
)]
pub struct Api;
