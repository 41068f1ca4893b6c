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
}
