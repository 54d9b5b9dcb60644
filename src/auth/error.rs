//! better-auth's error codes. Each constructor gives the status and message better-auth
//! 1.7.25 sends for that code; they become [`AppError::Auth`] and render as
//! `{message, code}`.

use std::borrow::Cow;

use http::StatusCode;

use crate::error::AppError;

/// An authentication error with better-auth's status, code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthError {
    /// HTTP status.
    pub status: StatusCode,
    /// better-auth code (`None` for the few code-less answers).
    pub code: Option<&'static str>,
    /// Message.
    pub message: Cow<'static, str>,
}

impl From<AuthError> for AppError {
    fn from(err: AuthError) -> Self {
        AppError::Auth {
            status: err.status,
            code: err.code,
            message: err.message,
        }
    }
}

macro_rules! codes {
    ($($name:ident: $status:ident, $code:literal, $message:literal;)*) => {
        impl AuthError {
            $(
                #[doc = concat!("`", $code, "`: ", $message)]
                pub fn $name() -> Self {
                    Self { status: StatusCode::$status, code: Some($code), message: Cow::Borrowed($message) }
                }
            )*
        }
    };
}

codes! {
    unauthorized: UNAUTHORIZED, "UNAUTHORIZED", "Unauthorized";
    invalid_email_or_password: UNAUTHORIZED, "INVALID_EMAIL_OR_PASSWORD", "Invalid email or password";
    user_already_exists: UNPROCESSABLE_ENTITY, "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL", "User already exists. Use another email.";
    password_too_short: BAD_REQUEST, "PASSWORD_TOO_SHORT", "Password too short";
    password_too_long: BAD_REQUEST, "PASSWORD_TOO_LONG", "Password too long";
    invalid_email: BAD_REQUEST, "INVALID_EMAIL", "Invalid email";
    invalid_password: BAD_REQUEST, "INVALID_PASSWORD", "Invalid password";
    invalid_token: BAD_REQUEST, "INVALID_TOKEN", "Invalid token";
    invalid_otp: BAD_REQUEST, "INVALID_OTP", "Invalid OTP";
    otp_expired: BAD_REQUEST, "OTP_EXPIRED", "OTP expired";
    too_many_attempts: FORBIDDEN, "TOO_MANY_ATTEMPTS", "Too many attempts";
    invalid_id_token: UNAUTHORIZED, "INVALID_TOKEN", "Invalid token";
    token_expired: UNAUTHORIZED, "TOKEN_EXPIRED", "Token expired";
    user_not_found: BAD_REQUEST, "USER_NOT_FOUND", "User not found";
    credential_account_not_found: BAD_REQUEST, "CREDENTIAL_ACCOUNT_NOT_FOUND", "Credential account not found";
    account_not_found: BAD_REQUEST, "ACCOUNT_NOT_FOUND", "Account not found";
    failed_to_unlink_last_account: BAD_REQUEST, "FAILED_TO_UNLINK_LAST_ACCOUNT", "You can't unlink your last account";
    email_can_not_be_updated: BAD_REQUEST, "EMAIL_CAN_NOT_BE_UPDATED", "Email can not be updated";
    email_mismatch: BAD_REQUEST, "EMAIL_MISMATCH", "Email mismatch";
    email_already_verified: BAD_REQUEST, "EMAIL_ALREADY_VERIFIED", "Email is already verified";
    session_expired: BAD_REQUEST, "SESSION_EXPIRED", "Session expired. Re-authenticate to perform this action.";
    session_not_fresh: FORBIDDEN, "SESSION_NOT_FRESH", "Session is not fresh";
    provider_not_found: NOT_FOUND, "PROVIDER_NOT_FOUND", "Provider not found";
    id_token_required: BAD_REQUEST, "ID_TOKEN_REQUIRED", "This server supports native id-token sign-in only; send idToken";
    user_email_not_found: UNAUTHORIZED, "USER_EMAIL_NOT_FOUND", "User email not found";
    account_not_linked: UNAUTHORIZED, "OAUTH_LINK_ERROR", "account not linked";
    social_account_already_linked: CONFLICT, "SOCIAL_ACCOUNT_ALREADY_LINKED", "Social account already linked";
    linking_not_allowed: UNAUTHORIZED, "LINKING_NOT_ALLOWED", "Account not linked - linking not allowed";
    invalid_origin: FORBIDDEN, "INVALID_ORIGIN", "Invalid origin";
    missing_or_null_origin: FORBIDDEN, "MISSING_OR_NULL_ORIGIN", "Missing or null Origin";
    invalid_callback_url: FORBIDDEN, "INVALID_CALLBACK_URL", "Invalid callbackURL";
    invalid_redirect_url: FORBIDDEN, "INVALID_REDIRECT_URL", "Invalid redirectURL";
    invalid_error_callback_url: FORBIDDEN, "INVALID_ERROR_CALLBACK_URL", "Invalid errorCallbackURL";
    invalid_new_user_callback_url: FORBIDDEN, "INVALID_NEW_USER_CALLBACK_URL", "Invalid newUserCallbackURL";
    cross_site_navigation_login_blocked: FORBIDDEN, "CROSS_SITE_NAVIGATION_LOGIN_BLOCKED", "Cross-site navigation login blocked";
    email_not_verified: FORBIDDEN, "EMAIL_NOT_VERIFIED", "Email not verified";
    invalid_json: BAD_REQUEST, "BAD_REQUEST", "Invalid JSON in request body";
    nul_in_body: BAD_REQUEST, "BAD_REQUEST", "Request body must not contain NUL characters (\\u0000).";
    unreadable_body: BAD_REQUEST, "BAD_REQUEST", "The request body could not be read.";
    delete_token_invalid: NOT_FOUND, "INVALID_TOKEN", "Invalid token";
    failed_to_get_user_info: NOT_FOUND, "FAILED_TO_GET_USER_INFO", "Failed to get user info";
    method_not_allowed_defer_session: METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED_DEFER_SESSION_REQUIRED", "POST method requires deferSessionRefresh to be enabled in session config";
    change_email_disabled: BAD_REQUEST, "CHANGE_EMAIL_DISABLED", "Change email is disabled";
}

impl From<crate::domain::profile::ProfileProblem> for AuthError {
    /// The profile rules' refusals, in better-auth's validation shape.
    fn from(problem: crate::domain::profile::ProfileProblem) -> Self {
        use crate::domain::profile::{MAX_NAME_CHARS, ProfileProblem};
        match problem {
            ProfileProblem::NameTooLong => Self::validation(
                "name",
                &format!("Too big: expected string to have <={MAX_NAME_CHARS} characters"),
            ),
            ProfileProblem::ImageNotWebUrl => {
                Self::validation("image", "Invalid URL: expected an http(s) URL")
            }
        }
    }
}

impl AuthError {
    /// `400 VALIDATION_ERROR` with better-auth's `[body.<field>] <problem>` message
    /// (`[body] <problem>` for the body itself).
    pub fn validation(field: &str, problem: &str) -> Self {
        Self::validation_in("body", field, problem)
    }

    /// `400 VALIDATION_ERROR` for a field of `part` (`body` or `query`).
    pub fn validation_in(part: &str, field: &str, problem: &str) -> Self {
        let path = if field.is_empty() {
            part.to_owned()
        } else {
            format!("{part}.{field}")
        };
        Self {
            status: StatusCode::BAD_REQUEST,
            code: Some("VALIDATION_ERROR"),
            message: Cow::Owned(format!("[{path}] {problem}")),
        }
    }

    /// A code-less `{message}` answer (e.g. "No fields to update").
    pub fn message_only(status: StatusCode, message: &'static str) -> Self {
        Self {
            status,
            code: None,
            message: Cow::Borrowed(message),
        }
    }

    /// `415 UNSUPPORTED_MEDIA_TYPE` naming the refused type.
    pub fn unsupported_media_type(content_type: &str, allowed: &str) -> Self {
        Self {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code: Some("UNSUPPORTED_MEDIA_TYPE"),
            message: Cow::Owned(format!(
                "Content-Type \"{content_type}\" is not allowed. Allowed types: {allowed}"
            )),
        }
    }
}
