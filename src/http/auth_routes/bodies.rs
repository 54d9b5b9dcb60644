//! The request bodies of `/api/auth/*` as the OpenAPI document describes them. Handlers
//! read their fields one by one through [`super::AuthRequest`] (for better-auth's exact
//! validation messages), so these types only describe: the fields each handler reads, with
//! the rules it applies. Like better-auth, every body takes unknown fields and ignores them;
//! `null` stands for an absent optional field, and boolean fields also take `"true"` and
//! `"false"` (form bodies).

// Described, never built: the handlers read the fields themselves.
#![allow(dead_code)]

use utoipa::ToSchema;

/// `POST /api/auth/sign-up/email`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignUpEmail {
    /// Display name, at most 200 characters.
    #[schema(max_length = 200)]
    name: String,
    /// The sign-in address (compared and stored lower-case).
    #[schema(format = Email)]
    email: String,
    /// 8 to 128 characters.
    #[schema(min_length = 8, max_length = 128)]
    password: String,
    /// Avatar: an `https:` or `http:` URL with a host, at most 2048 characters.
    #[schema(max_length = 2048)]
    image: Option<String>,
    /// `false` gives a one-day session that is never extended (default `true`).
    remember_me: Option<bool>,
}

/// `POST /api/auth/email-otp/send-verification-otp`.
#[derive(ToSchema)]
pub struct SendVerificationOtp {
    /// The address to mail the code to.
    #[schema(format = Email)]
    email: String,
    /// `sign-in` (the plugin's other types are refused).
    #[serde(rename = "type")]
    #[schema(pattern = "^sign-in$")]
    kind: String,
}

/// `POST /api/auth/sign-in/email-otp`.
#[derive(ToSchema)]
pub struct SignInEmailOtp {
    /// The address the code was mailed to.
    #[schema(format = Email)]
    email: String,
    /// The mailed code (six digits).
    otp: String,
    /// Display name of a user created by this sign-in, at most 200 characters.
    #[schema(max_length = 200)]
    name: Option<String>,
    /// Avatar of a user created by this sign-in: an `https:` or `http:` URL with a host.
    #[schema(max_length = 2048)]
    image: Option<String>,
}

/// `POST /api/auth/sign-in/email`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignInEmail {
    /// The sign-in address.
    #[schema(format = Email)]
    email: String,
    /// The password (at most 128 characters).
    #[schema(max_length = 128)]
    password: String,
    /// `false` gives a one-day session that is never extended (default `true`).
    remember_me: Option<bool>,
    /// Where the client goes next (a trusted origin): echoed as `url` and `Location`.
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// The id token of a native sign-in or link.
#[derive(ToSchema)]
pub struct IdToken {
    /// The provider's id token (a JWT), checked against its keys, issuer and audience.
    token: String,
    /// The nonce the client gave the provider, if any.
    nonce: Option<String>,
    /// Apple's first-sign-in name, sent beside the token.
    user: Option<AppleUser>,
}

/// What Apple tells about the user on their first sign-in.
#[derive(ToSchema)]
pub struct AppleUser {
    /// The user's name.
    name: Option<AppleName>,
}

/// A name as Apple sends it.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppleName {
    /// Given name.
    first_name: Option<String>,
    /// Family name.
    last_name: Option<String>,
}

/// The identity providers of native sign-in.
#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SocialProvider {
    /// Google.
    Google,
    /// Apple.
    Apple,
    /// Microsoft.
    Microsoft,
}

/// `POST /api/auth/sign-in/social`: native id-token sign-in only.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignInSocial {
    /// The provider (404 when it is not configured).
    provider: SocialProvider,
    /// The provider's id token (without one: 400 `ID_TOKEN_REQUIRED`).
    id_token: IdToken,
}

/// `POST /api/auth/revoke-session`.
#[derive(ToSchema)]
pub struct RevokeSession {
    /// The session's token, or the `revoke_<id>` handle `/list-sessions` gave.
    token: String,
}

/// `POST /api/auth/change-password`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangePassword {
    /// 8 to 128 characters.
    #[schema(min_length = 8, max_length = 128)]
    new_password: String,
    /// The password now (at most 128 characters).
    #[schema(max_length = 128)]
    current_password: String,
    /// End every session and hand back a new one (default `false`).
    revoke_other_sessions: Option<bool>,
}

/// `POST /api/auth/request-password-reset` (and `/forget-password`).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestPasswordReset {
    /// The account's address (the answer is the same for unknown ones).
    #[schema(format = Email)]
    email: String,
    /// Where the mailed link leads, through `GET /reset-password/{token}` (a trusted
    /// origin); absent: the server's own reset page.
    redirect_to: Option<String>,
}

/// `POST /api/auth/reset-password`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResetPassword {
    /// 8 to 128 characters.
    #[schema(min_length = 8, max_length = 128)]
    new_password: String,
    /// The mailed reset token (or the `token` query parameter).
    token: Option<String>,
}

/// `POST /api/auth/send-verification-email`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendVerificationEmail {
    /// The address to verify (the caller's own when signed in).
    #[schema(format = Email)]
    email: String,
    /// Where the mailed link lands (a trusted origin); absent: the server's
    /// `/email-verified` page.
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `POST /api/auth/change-email`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeEmail {
    /// The new address (a verification link goes there; it must differ from the current).
    #[schema(format = Email)]
    new_email: String,
    /// Where the mailed link lands (a trusted origin).
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
}

/// `POST /api/auth/update-user`: at least one of `name` and `image`; `email` is refused
/// (400 `EMAIL_CAN_NOT_BE_UPDATED`).
#[derive(ToSchema)]
pub struct UpdateUser {
    /// Display name, at most 200 characters.
    #[schema(max_length = 200)]
    name: Option<String>,
    /// Avatar: an `https:` or `http:` URL with a host, at most 2048 characters; `null`
    /// removes it.
    #[schema(max_length = 2048)]
    image: Option<String>,
}

/// `POST /api/auth/unlink-account`: the account row's `accountId`, or `providerId` with
/// an optional provider `accountId`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnlinkAccount {
    /// The provider whose account goes (older clients).
    provider_id: Option<String>,
    /// The account's id (`id` of `/list-accounts`), or with `providerId` the identity at
    /// the provider; required without `providerId`.
    account_id: Option<String>,
}

/// `POST /api/auth/link-social`: with `idToken`, links that identity at once (Google,
/// Apple, Microsoft); without, starts the calendar-link redirect flow (Google, Microsoft).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AuthLinkSocialBody)]
pub struct LinkSocial {
    /// The provider (404 when it is not configured).
    provider: SocialProvider,
    /// The identity to link.
    id_token: Option<IdToken>,
    /// Where the browser goes after the provider (a trusted origin).
    #[serde(rename = "callbackURL")]
    callback_url: Option<String>,
    /// Where the browser goes when linking fails, with `?error=CODE` (a trusted origin).
    #[serde(rename = "errorCallbackURL")]
    error_callback_url: Option<String>,
    /// Extra scopes to ask for.
    scopes: Option<Vec<String>>,
    /// Answer without `Location` and with `redirect: false`.
    disable_redirect: Option<bool>,
}

/// `POST /api/auth/delete-user`: with `password` or a mailed `token` the account goes at
/// once; with neither, a confirmation link is mailed.
#[derive(ToSchema)]
pub struct DeleteUser {
    /// The account's password.
    password: Option<String>,
    /// The mailed deletion token.
    token: Option<String>,
}
