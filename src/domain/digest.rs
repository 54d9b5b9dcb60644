//! Digests of secrets, as they are stored: a token is kept as its SHA-256 only, so whoever
//! reads the database cannot present it.

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `value`: how tokens are stored.
pub fn sha256_hex(value: &str) -> String {
    hex::encode(Sha256::digest(value.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_the_lower_case_hex_sha256() {
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
