//! Email-verification tokens: stateless HS256 JWTs signed with the auth secret, as
//! better-auth issues them (`{email, userId, [updateTo], [requestType], iat, exp}`).

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, errors::ErrorKind};
use serde::{Deserialize, Serialize};

use crate::domain::ids::UserId;

/// How long a verification link works.
pub const EMAIL_VERIFICATION_TTL_SECS: i64 = 3600;

/// The claims of an email-verification token.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct VerificationClaims {
    /// The address being verified (lower-cased).
    pub email: String,
    /// The user.
    #[serde(rename = "userId", default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<UserId>,
    /// For an email change: the new address.
    #[serde(rename = "updateTo", default, skip_serializing_if = "Option::is_none")]
    pub update_to: Option<String>,
    /// For an email change: `change-email-verification`.
    #[serde(
        rename = "requestType",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub request_type: Option<String>,
    /// Issued at (seconds).
    pub iat: i64,
    /// Expires at (seconds).
    pub exp: i64,
}

/// Why a verification token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenProblem {
    /// Bad signature or shape.
    Invalid,
    /// Past its expiry.
    Expired,
}

/// Signs `claims`.
pub fn issue(
    secret: &str,
    claims: &VerificationClaims,
) -> Result<String, jsonwebtoken::errors::Error> {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
}

/// Checks a token's signature and expiry.
pub fn verify(secret: &str, token: &str) -> Result<VerificationClaims, TokenProblem> {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.leeway = 0;
    validation.set_required_spec_claims(&["exp", "iat"]);
    jsonwebtoken::decode::<VerificationClaims>(
        token,
        &DecodingKey::from_secret(secret.as_bytes()),
        &validation,
    )
    .map(|data| data.claims)
    .map_err(|err| match err.kind() {
        ErrorKind::ExpiredSignature => TokenProblem::Expired,
        _ => TokenProblem::Invalid,
    })
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn claims(exp_offset: i64) -> VerificationClaims {
        let now = chrono::Utc::now().timestamp();
        VerificationClaims {
            email: "a@b.example".into(),
            user_id: Some("u1".into()),
            update_to: None,
            request_type: None,
            iat: now,
            exp: now + exp_offset,
        }
    }

    #[test]
    fn round_trip_expiry_and_signature() {
        let token = issue("secret", &claims(60)).expect("issue");
        assert_eq!(
            verify("secret", &token).expect("valid").email,
            "a@b.example"
        );
        assert_eq!(verify("other", &token), Err(TokenProblem::Invalid));
        let expired = issue("secret", &claims(-10)).expect("issue");
        assert_eq!(verify("secret", &expired), Err(TokenProblem::Expired));
        assert_eq!(verify("secret", "garbage"), Err(TokenProblem::Invalid));
    }
}
