//! API keys: one admin key for everything, optional per-tenant keys that reach only their
//! tenant. With no key configured at all, every request is allowed (the server then binds to
//! loopback only; see `ServerConfig::check_bind`).

use std::collections::HashMap;

use axum::http::HeaderMap;

use crate::error::ApiError;

/// The configured keys.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    pub admin: Option<String>,
    /// tenant → key.
    pub tenants: HashMap<String, String>,
}

/// Who a request authenticated as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The admin key, or no keys configured.
    Admin,
    Tenant(String),
}

impl Keys {
    pub fn open(&self) -> bool {
        self.admin.is_none() && self.tenants.is_empty()
    }

    /// Authenticates the bearer token of `headers`.
    pub fn caller(&self, headers: &HeaderMap) -> Result<Caller, ApiError> {
        if self.open() {
            return Ok(Caller::Admin);
        }
        let token = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or(ApiError::Unauthorized)?;
        if self.admin.as_deref().is_some_and(|k| ct_eq(k, token)) {
            return Ok(Caller::Admin);
        }
        self.tenants
            .iter()
            .find(|(_, k)| ct_eq(k, token))
            .map(|(t, _)| Caller::Tenant(t.clone()))
            .ok_or(ApiError::Unauthorized)
    }

    /// Authenticates and checks that the caller may touch `tenant`.
    pub fn for_tenant(&self, headers: &HeaderMap, tenant: &str) -> Result<Caller, ApiError> {
        match self.caller(headers)? {
            Caller::Admin => Ok(Caller::Admin),
            Caller::Tenant(t) if t == tenant => Ok(Caller::Tenant(t)),
            Caller::Tenant(_) => Err(ApiError::Forbidden(format!(
                "this key may not access tenant {tenant:?}"
            ))),
        }
    }

    /// Authenticates and requires the admin key.
    pub fn admin(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        match self.caller(headers)? {
            Caller::Admin => Ok(()),
            Caller::Tenant(_) => Err(ApiError::Forbidden("this needs the admin key".into())),
        }
    }
}

/// Comparison whose time does not depend on where the strings differ.
fn ct_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
