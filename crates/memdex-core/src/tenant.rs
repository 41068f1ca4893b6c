//! Tenant names: the one rule shared by every input format and the HTTP API. Names become
//! metric labels and log fields, never file paths.

use crate::CoreError;

/// Longest tenant name, in bytes.
pub const MAX_TENANT_BYTES: usize = 128;

/// Accepts 1 to 128 of `A-Z a-z 0-9 . _ - @`.
pub fn check_tenant(name: &str) -> Result<(), CoreError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_TENANT_BYTES
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'));
    if ok {
        Ok(())
    } else {
        let shown: String = name.chars().take(MAX_TENANT_BYTES + 8).collect();
        Err(CoreError::InvalidTenant { name: shown })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_rule() {
        for ok in ["alice", "conv-26", "a.b_c-d@e", &"x".repeat(128)] {
            assert!(check_tenant(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a/b", "a\"b", "é", &"x".repeat(129), "a\n"] {
            assert!(check_tenant(bad).is_err(), "{bad:?}");
        }
        let long = "y".repeat(10_000);
        let e = check_tenant(&long).unwrap_err().to_string();
        assert!(e.len() < 400, "the message quotes a short prefix");
    }
}
