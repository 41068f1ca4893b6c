//! The tenant-name rule's constants and what can break it: a leaf, so the error type can name
//! a problem ([`crate::CoreError::InvalidTenant`]) without importing the check in `tenant`.

/// The longest tenant name, in bytes (= characters: the alphabet is ASCII).
pub const MAX_TENANT_BYTES: usize = 128;

/// The rule, as error messages state it.
pub const TENANT_RULE: &str = "1 to 128 of A-Z a-z 0-9 . _ - @";

/// What is wrong with a tenant name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenantProblem {
    Empty,
    /// Longer than [`MAX_TENANT_BYTES`].
    TooLong,
    /// A character outside the alphabet, at this byte offset.
    BadChar {
        ch: char,
        at: usize,
    },
}

impl std::fmt::Display for TenantProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TenantProblem::Empty => f.write_str("it is empty"),
            TenantProblem::TooLong => write!(f, "it is over {MAX_TENANT_BYTES} bytes"),
            TenantProblem::BadChar { ch, at } => {
                write!(f, "character {ch:?} at byte {at} is not allowed")
            }
        }
    }
}
