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

/// What a route needs: nothing, any valid key, the named tenant's key (or the admin key), or
/// the admin key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access<'a> {
    Public,
    AnyKey,
    Tenant(&'a str),
    Admin,
}

/// The access a request path needs (the router decides later whether the route exists).
fn access(path: &str) -> Access<'_> {
    match path {
        "/healthz" | "/openapi.json" => Access::Public,
        // the inspector page's files hold no data; its calls carry the key
        p if crate::ui::is_page(p) => Access::Public,
        "/metrics" => Access::Admin,
        p if p.starts_with("/v1/admin/") => Access::Admin,
        p => match p.strip_prefix("/v1/tenants/") {
            Some(rest) => Access::Tenant(rest.split('/').next().unwrap_or("")),
            None => Access::AnyKey,
        },
    }
}

/// Authenticates a request from its path and headers alone — what the route guard runs before
/// any body is read or permit taken. A tenant route's name must pass the tenant rule (in its
/// raw form: a percent-encoded name never does).
/// Returns the access the route needed.
pub(crate) fn authorize<'p>(
    keys: &Keys,
    path: &'p str,
    headers: &HeaderMap,
) -> Result<Access<'p>, ApiError> {
    let a = access(path);
    match a {
        Access::Public => {}
        Access::AnyKey => drop(keys.caller(headers)?),
        Access::Admin => keys.admin(headers)?,
        Access::Tenant(t) => {
            memdex_core::check_tenant_name(t).map_err(|e| ApiError::BadRequest(e.to_string()))?;
            drop(keys.for_tenant(headers, t)?);
        }
    }
    Ok(a)
}

/// Comparison whose time does not depend on where the strings differ.
fn ct_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_need_the_right_key() {
        assert_eq!(access("/healthz"), Access::Public);
        assert_eq!(access("/metrics"), Access::Admin);
        assert_eq!(access("/v1/admin/compact"), Access::Admin);
        assert_eq!(access("/v1/tenants/alice/search"), Access::Tenant("alice"));
        assert_eq!(access("/v1/tenants/alice"), Access::Tenant("alice"));
        assert_eq!(access("/v1/embeddings"), Access::AnyKey);
        assert_eq!(access("/v1/tenants"), Access::AnyKey);
        assert_eq!(access("/ui/app.js"), Access::Public);
        let keys = Keys {
            admin: Some("A".into()),
            tenants: [("alice".to_string(), "K".to_string())].into(),
        };
        let with = |k: &str| {
            let mut h = HeaderMap::new();
            h.insert(
                axum::http::header::AUTHORIZATION,
                format!("Bearer {k}").parse().unwrap(),
            );
            h
        };
        let none = HeaderMap::new();
        assert!(authorize(&keys, "/healthz", &none).is_ok());
        assert!(matches!(
            authorize(&keys, "/v1/tenants/alice/search", &none),
            Err(ApiError::Unauthorized)
        ));
        assert!(authorize(&keys, "/v1/tenants/alice/search", &with("K")).is_ok());
        assert!(matches!(
            authorize(&keys, "/v1/tenants/bob/search", &with("K")),
            Err(ApiError::Forbidden(_))
        ));
        assert!(authorize(&keys, "/v1/tenants/bob/search", &with("A")).is_ok());
        assert!(matches!(
            authorize(&keys, "/metrics", &with("K")),
            Err(ApiError::Forbidden(_))
        ));
        assert!(matches!(
            authorize(&keys, "/v1/tenants/%61lice/search", &with("K")),
            Err(ApiError::BadRequest(_))
        ));
    }
}
