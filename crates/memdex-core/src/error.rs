use thiserror::Error;

/// Errors from parsing core values (flags, enum names, device strings).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// A value that names none of the accepted choices.
    #[error("invalid {what} {value:?}: expected one of {expected}")]
    InvalidChoice {
        what: &'static str,
        value: String,
        expected: &'static str,
    },
    /// A tenant name outside the one rule every source and the HTTP API share.
    #[error("invalid tenant name {name:?}: 1 to {max} of A-Z a-z 0-9 . _ - @", max = crate::MAX_TENANT_BYTES)]
    InvalidTenant { name: String },
}
