//! Sign-in by emailed code (better-auth's `emailOTP` plugin, as the original's clients call
//! it): a six-digit code, valid for ten minutes, used once, given up after three wrong tries.
//! One code per address at a time: a new one replaces the last. Stored so that the database
//! alone gives away neither: the row is found by the address's SHA-256 and holds the HMAC
//! of address and code under the server's secret, with the tries used so far.

use chrono::{DateTime, Duration, Utc};
use rand::Rng;

use super::tokens::{keyed_digest, keyed_digest_matches};
use crate::domain::digest::sha256_hex;
use crate::store::{Database, DbErr, verifications};

/// How long a code works.
pub const CODE_TTL: Duration = Duration::minutes(10);
/// Wrong tries a code survives; the next try, right or wrong, is refused.
pub const ALLOWED_ATTEMPTS: u32 = 3;

fn identifier(email: &str) -> String {
    format!("sign-in-otp:{}", sha256_hex(email))
}

/// What is hashed: the address and the code, so a code proves nothing for another address.
fn keyed(email: &str, code: &str) -> String {
    format!("{email}\n{code}")
}

/// Six random decimal digits.
fn new_code() -> String {
    format!("{:06}", rand::rng().random_range(0..1_000_000u32))
}

/// Stores a new code for `email` (replacing an earlier one) and returns it, to be mailed.
pub async fn issue(
    db: &Database,
    secret: &str,
    email: &str,
    now: DateTime<Utc>,
) -> Result<String, DbErr> {
    let code = new_code();
    let value = format!("{}:0", keyed_digest(secret, &keyed(email, &code)));
    verifications::replace(db, &identifier(email), &value, now + CODE_TTL, now).await?;
    Ok(code)
}

/// What a presented code turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The code of the address: used up now.
    Accepted,
    /// No code, or a wrong one (which counts a try).
    Invalid,
    /// The code had expired (and is removed).
    Expired,
    /// The code's tries were spent (and it is removed).
    TooManyAttempts,
}

/// Checks `code` for `email`, in one transaction: a right code is used up, a wrong one
/// counts a try and stays for the tries left, an expired or spent one is removed. Two
/// requests racing on one code cannot both have it.
pub async fn check(
    db: &Database,
    secret: &str,
    email: &str,
    code: &str,
    now: DateTime<Utc>,
) -> Result<Check, DbErr> {
    let identifier = identifier(email);
    db.write(async |txn| {
        let Some(row) = verifications::take(txn, &identifier).await? else {
            return Ok(Check::Invalid);
        };
        if row.expires_at <= now {
            return Ok(Check::Expired);
        }
        let (digest, tries) = row
            .value
            .rsplit_once(':')
            .unwrap_or((row.value.as_str(), ""));
        let tries: u32 = tries.parse().unwrap_or(ALLOWED_ATTEMPTS);
        if tries >= ALLOWED_ATTEMPTS {
            return Ok(Check::TooManyAttempts);
        }
        if keyed_digest_matches(secret, &keyed(email, code), digest) {
            return Ok(Check::Accepted);
        }
        let counted = format!("{digest}:{}", tries + 1);
        verifications::insert(txn, &identifier, &counted, row.expires_at, now).await?;
        Ok(Check::Invalid)
    })
    .await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_six_digits() {
        for _ in 0..1_000 {
            let code = new_code();
            assert_eq!(code.len(), 6);
            assert!(code.bytes().all(|b| b.is_ascii_digit()));
        }
    }

    #[test]
    fn the_row_names_the_address_only_by_its_digest() {
        let id = identifier("a@example.com");
        assert!(!id.contains("example"));
        assert_eq!(id, format!("sign-in-otp:{}", sha256_hex("a@example.com")));
    }
}
