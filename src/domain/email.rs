//! Email address shape checks (the zod `email()` rule the clients share, approximately:
//! `local@domain.tld`, no spaces, at most 320 characters).

/// Whether `email` looks like a deliverable address.
pub fn is_valid(email: &str) -> bool {
    if email.len() > 320 || email.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let Some((local, domain)) = email.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && !local.contains('@')
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains("..")
        && domain
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '.')
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::is_valid;

    #[test]
    fn accepts_and_refuses() {
        for ok in ["a@b.co", "first.last+tag@example.com", "x@sub.example.org"] {
            assert!(is_valid(ok), "{ok}");
        }
        for bad in [
            "", "a", "a@b", "@b.co", "a@.co", "a b@c.co", "a@b..co", "a@@b.co", ".a@b.co",
        ] {
            assert!(!is_valid(bad), "{bad}");
        }
    }
}
