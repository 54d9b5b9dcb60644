//! Password hashing: argon2id (the crate's recommended parameters, about 20 ms of CPU per
//! hash here), computed on the blocking pool behind a small semaphore so that a burst of
//! sign-ins never stalls other requests.

use std::sync::Arc;

use argon2::{Argon2, PasswordHasher as _, PasswordVerifier as _};
use tokio::sync::Semaphore;

use super::error::AuthError;
use crate::error::AppError;

/// better-auth's password length rules.
pub const MIN_PASSWORD_LENGTH: usize = 8;
/// Upper bound (also applied to passwords presented at sign-in).
pub const MAX_PASSWORD_LENGTH: usize = 128;

/// Checks a new password's length.
pub fn check_length(password: &str) -> Result<(), AuthError> {
    let length = password.chars().count();
    if length < MIN_PASSWORD_LENGTH {
        Err(AuthError::password_too_short())
    } else if length > MAX_PASSWORD_LENGTH {
        Err(AuthError::password_too_long())
    } else {
        Ok(())
    }
}

/// Hashes and verifies passwords off the async runtime.
#[derive(Debug, Clone)]
pub struct PasswordHasher {
    permits: Arc<Semaphore>,
}

impl PasswordHasher {
    /// A hasher computing at most `concurrency` hashes at once.
    pub fn new(concurrency: u32) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(concurrency.max(1) as usize)),
        }
    }

    /// The PHC string of `password`.
    pub async fn hash(&self, password: String) -> Result<String, AppError> {
        self.run(move || {
            Argon2::default()
                .hash_password(password.as_bytes())
                .map(|hash| hash.to_string())
                .map_err(|err| AppError::internal(format!("password hashing failed: {err}")))
        })
        .await?
    }

    /// Whether `password` matches `phc`. A malformed stored hash never matches.
    pub async fn verify(&self, password: String, phc: String) -> Result<bool, AppError> {
        self.run(move || {
            Argon2::default()
                .verify_password(password.as_bytes(), phc.as_str())
                .is_ok()
        })
        .await
    }

    /// Spends the time of one verification without a stored hash, so that an unknown email
    /// answers as slowly as a wrong password.
    pub async fn verify_nothing(&self, password: String) -> Result<(), AppError> {
        self.hash(password).await.map(|_| ())
    }

    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, AppError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| AppError::Unavailable("password hasher closed".into()))?;
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|err| AppError::internal(format!("password hashing task failed: {err}")))
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_verify_and_are_salted() {
        let hasher = PasswordHasher::new(2);
        let first = hasher.hash("correct horse".into()).await.expect("hash");
        let second = hasher.hash("correct horse".into()).await.expect("hash");
        assert!(first.starts_with("$argon2id$"));
        assert_ne!(first, second);
        assert!(
            hasher
                .verify("correct horse".into(), first.clone())
                .await
                .expect("verify")
        );
        assert!(
            !hasher
                .verify("wrong horse".into(), first)
                .await
                .expect("verify")
        );
        assert!(
            !hasher
                .verify("x".into(), "not a hash".into())
                .await
                .expect("verify")
        );
    }

    #[test]
    fn length_rules() {
        assert!(check_length("1234567").is_err());
        assert!(check_length("12345678").is_ok());
        assert!(check_length(&"x".repeat(128)).is_ok());
        assert!(check_length(&"x".repeat(129)).is_err());
    }
}
