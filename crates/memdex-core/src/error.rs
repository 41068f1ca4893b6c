use thiserror::Error;

use crate::tenant_rule::{TenantProblem, TENANT_RULE};

/// Errors from parsing core values (flags, enum names, device strings, tenant names).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// A value that names none of the accepted choices.
    #[error("invalid {what} {value:?}: expected one of {expected}")]
    InvalidChoice {
        what: &'static str,
        value: String,
        expected: &'static str,
    },
    /// A tenant name outside the rule ([`crate::check_tenant_name`]). `name` is clipped to
    /// a short prefix; `bytes` is the full length.
    #[error("invalid tenant name {name:?}: {problem}; a tenant name is {TENANT_RULE}")]
    InvalidTenant {
        name: String,
        bytes: usize,
        problem: TenantProblem,
    },
}
