//! Password hashing: argon2id, computed on the blocking pool a few at a time
//! ([`CpuWork`] of its own, `PASSWORD_HASH_CONCURRENCY`) so that a burst of sign-ins never
//! stalls other requests.
//!
//! Parameters: 7 MiB of memory, 5 passes, 1 lane — one of OWASP's equivalent argon2id
//! configurations (the crate's default is 19 MiB and 2 passes), about 20 ms of CPU here. The
//! smaller buffer matters to a small server: each hash allocates it whole, and the allocator
//! may keep it after the hash. Stored hashes carry their parameters, so hashes made with
//! other parameters still verify.

use std::sync::Arc;
use std::time::Duration;

use argon2::{Algorithm, Argon2, Params, PasswordHasher as _, PasswordVerifier as _, Version};

use super::error::AuthError;
use crate::cpu::CpuWork;
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

/// Memory of one hash, in KiB.
const MEMORY_KIB: u32 = 7 * 1024;
/// Passes over the memory.
const PASSES: u32 = 5;

/// The hasher with Bowline's parameters.
fn argon2() -> Result<Argon2<'static>, AppError> {
    let params = Params::new(MEMORY_KIB, PASSES, 1, None)
        .map_err(|err| AppError::internal(format!("argon2 parameters: {err}")))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// Hashes and verifies passwords off the async runtime.
#[derive(Debug, Clone)]
pub struct PasswordHasher {
    work: Arc<CpuWork>,
}

impl PasswordHasher {
    /// A hasher computing at most `concurrency` hashes at once; a hash that waits longer
    /// than `queue_timeout` for its turn is refused (503).
    pub fn new(concurrency: u32, queue_timeout: Duration) -> Self {
        Self {
            work: Arc::new(CpuWork::new(concurrency as usize, queue_timeout)),
        }
    }

    /// The PHC string of `password`.
    pub async fn hash(&self, password: String) -> Result<String, AppError> {
        self.run(move || {
            argon2()?
                .hash_password(password.as_bytes())
                .map(|hash| hash.to_string())
                .map_err(|err| AppError::internal(format!("password hashing failed: {err}")))
        })
        .await?
    }

    /// Whether `password` matches `phc`. A malformed stored hash never matches.
    pub async fn verify(&self, password: String, phc: String) -> Result<bool, AppError> {
        self.run(move || {
            // The stored hash names its own parameters.
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
        self.work.run("password hashing", work).await
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_verify_and_are_salted() {
        let hasher = PasswordHasher::new(2, Duration::from_secs(10));
        let first = hasher.hash("correct horse".into()).await.expect("hash");
        let second = hasher.hash("correct horse".into()).await.expect("hash");
        assert!(
            first.starts_with("$argon2id$v=19$m=7168,t=5,p=1$"),
            "{first}"
        );
        assert_ne!(first, second);
        // A hash made with other parameters (the crate's defaults) still verifies.
        let older = Argon2::default()
            .hash_password(b"correct horse")
            .expect("hash")
            .to_string();
        assert!(older.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert!(
            hasher
                .verify("correct horse".into(), older)
                .await
                .expect("verify")
        );
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
