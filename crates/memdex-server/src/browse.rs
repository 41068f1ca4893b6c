//! Reading what a memory holds: the tenants a key may see, a tenant's sessions, a session's
//! items (what the inspector page shows, and what an operator's script reads). The `GET`
//! twins of the routes that append and forget: the same paths, the same key rules (a tenant
//! key lists only its own tenant), answers through the front door
//! ([`memdex_memory::Memory::tenants`], `sessions`, `items`).

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::routing::get;
use axum::Json;
use memdex_memory::{ItemInfo, MemoryError, SessionInfo};
use serde::Serialize;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::AppState;

/// Tenants listed at most per call by default, and the most a caller may ask for.
pub const DEFAULT_TENANT_LIMIT: usize = 1000;
pub const MAX_TENANT_LIMIT: usize = 10_000;

/// One tenant and its live items.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TenantOut {
    pub tenant: String,
    /// Live items (0 for a tenant key's tenant that holds nothing yet).
    pub items: u64,
}

/// `GET /v1/tenants`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TenantsOut {
    /// `admin` (the admin key, or a server without keys: every tenant) or `tenant` (a tenant
    /// key: its own tenant only).
    pub access: String,
    /// By name.
    pub tenants: Vec<TenantOut>,
    /// Present when more tenants follow: pass it as `after` for the next page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `GET /v1/tenants/{tenant}/sessions`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SessionsOut {
    pub tenant: String,
    /// What one item covers in this store: `session`, `round` (a user message and the reply
    /// that follows it; the default) or `turn`.
    pub granularity: String,
    /// Oldest first.
    pub sessions: Vec<SessionInfo>,
}

/// `GET /v1/tenants/{tenant}/sessions/{session_id}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SessionOut {
    pub tenant: String,
    pub session_id: String,
    /// As in [`SessionsOut`].
    pub granularity: String,
    /// In the session's order (with the default granularity, one item per round).
    pub items: Vec<ItemInfo>,
}

/// The query of `GET /v1/tenants`.
#[derive(Debug, Default, PartialEq, Eq)]
struct ListQuery {
    prefix: Option<String>,
    after: Option<String>,
    limit: Option<usize>,
}

/// The listing routes (merged with the append and forget routes of the same paths).
pub(crate) fn routes() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/v1/tenants", get(tenants))
        .route("/v1/tenants/{tenant}/sessions", get(sessions))
        .route("/v1/tenants/{tenant}/sessions/{session_id}", get(session))
}

/// `GET /v1/tenants` (any key): the tenants the key may read, with their live items; the
/// admin key sees every tenant with memory, a tenant key its own tenant.
#[utoipa::path(get, path = "/v1/tenants",
    params(
        ("prefix" = Option<String>, Query, description = "only tenants whose name starts with this"),
        ("after" = Option<String>, Query, description = "only tenants named after this (the previous page's `next`)"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 10000, description = "tenants per page, default 1000")),
    responses((status = 200, body = TenantsOut)))]
pub async fn tenants(
    State(st): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<TenantsOut>, ApiError> {
    let q = parse_query(uri.query())?;
    let caller = st.keys.caller(&headers)?;
    let memory = st.memory.clone();
    let all = blocking(move || Ok(memory.tenants())).await?;
    let (access, rows) = match caller {
        Caller::Admin => ("admin", all),
        Caller::Tenant(t) => {
            let n = all.iter().find(|(name, _)| *name == t).map_or(0, |r| r.1);
            ("tenant", vec![(t, n)])
        }
    };
    let (tenants, next) = page(rows, &q);
    Ok(Json(TenantsOut {
        access: access.into(),
        tenants,
        next,
    }))
}

/// The page of `rows` (sorted by name) that `q` asks for, and the `next` cursor.
fn page(rows: Vec<(String, u64)>, q: &ListQuery) -> (Vec<TenantOut>, Option<String>) {
    let limit = q.limit.unwrap_or(DEFAULT_TENANT_LIMIT);
    let mut kept = rows.into_iter().filter(|(t, _)| {
        q.prefix.as_deref().is_none_or(|p| t.starts_with(p))
            && q.after.as_deref().is_none_or(|a| t.as_str() > a)
    });
    let out: Vec<TenantOut> = kept
        .by_ref()
        .take(limit)
        .map(|(tenant, items)| TenantOut { tenant, items })
        .collect();
    let next = match kept.next() {
        Some(_) => out.last().map(|t| t.tenant.clone()),
        None => None,
    };
    (out, next)
}

/// `GET /v1/tenants/{tenant}/sessions`: the tenant's live sessions, oldest first.
#[utoipa::path(get, path = "/v1/tenants/{tenant}/sessions",
    params(("tenant" = String, Path, description = "1-128 of A-Z a-z 0-9 . _ - @")),
    responses((status = 200, body = SessionsOut),
              (status = 404, body = crate::error::ErrorBody, description = "tenant has no memory")))]
pub async fn sessions(
    State(st): State<AppState>,
    tenant: Result<Path<String>, PathRejection>,
) -> Result<Json<SessionsOut>, ApiError> {
    let tenant = tenant
        .map(|Path(t)| t)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let (memory, t) = (st.memory.clone(), tenant.clone());
    let sessions = blocking(move || memory.sessions(&t)).await?;
    Ok(Json(SessionsOut {
        tenant,
        granularity: granularity(&st),
        sessions,
    }))
}

/// `GET /v1/tenants/{tenant}/sessions/{session_id}`: the session's live items, in order.
#[utoipa::path(get, path = "/v1/tenants/{tenant}/sessions/{session_id}",
    params(("tenant" = String, Path), ("session_id" = String, Path)),
    responses((status = 200, body = SessionOut),
              (status = 404, body = crate::error::ErrorBody, description = "no such live session")))]
pub async fn session(
    State(st): State<AppState>,
    p: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<SessionOut>, ApiError> {
    let (tenant, session_id) = p
        .map(|Path(v)| v)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let (memory, t, id) = (st.memory.clone(), tenant.clone(), session_id.clone());
    let items = blocking(move || memory.items(&t, Some(&id))).await?;
    Ok(Json(SessionOut {
        tenant,
        session_id,
        granularity: granularity(&st),
        items,
    }))
}

fn granularity(st: &AppState) -> String {
    st.memory
        .snapshot()
        .store()
        .manifest()
        .granularity
        .to_string()
}

/// Runs a read of the memory's current view off the async threads (a large tenant's items
/// take a while to copy).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, MemoryError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(format!("a listing failed: {e}")))?
        .map_err(ApiError::from)
}

/// `prefix`, `after` and `limit` from a query string; anything else is a 400.
fn parse_query(query: Option<&str>) -> Result<ListQuery, ApiError> {
    let mut q = ListQuery::default();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = decode(v).ok_or_else(|| {
            ApiError::BadRequest(format!("query parameter {k:?}: bad percent-encoding"))
        })?;
        match k {
            "prefix" => q.prefix = Some(v),
            "after" => q.after = Some(v),
            "limit" => {
                let n = v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_TENANT_LIMIT).contains(n));
                q.limit = Some(n.ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "limit must be 1 to {MAX_TENANT_LIMIT}, got {:?}",
                        memdex_core::clip(&v, 32)
                    ))
                })?);
            }
            k => {
                return Err(ApiError::BadRequest(format!(
                    "unknown query parameter {:?}: expected prefix, after, limit",
                    memdex_core::clip(k, 64)
                )))
            }
        }
    }
    Ok(q)
}

/// A query value with `+` as a space and `%XX` escapes decoded (None: a broken escape or
/// bytes that are not UTF-8).
fn decode(v: &str) -> Option<String> {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse_and_bad_ones_are_named() {
        assert_eq!(parse_query(None).unwrap(), ListQuery::default());
        let q = parse_query(Some("prefix=al&after=a%40x&limit=2")).unwrap();
        assert_eq!(q.prefix.as_deref(), Some("al"));
        assert_eq!(q.after.as_deref(), Some("a@x"));
        assert_eq!(q.limit, Some(2));
        for (bad, says) in [
            ("limit=0", "limit must be 1 to 10000"),
            ("limit=x", "limit must be"),
            ("limit=10001", "limit must be"),
            ("sort=name", "unknown query parameter \"sort\""),
            ("prefix=%zz", "bad percent-encoding"),
            ("prefix=%ff", "bad percent-encoding"),
            ("prefix=%4", "bad percent-encoding"),
        ] {
            match parse_query(Some(bad)) {
                Err(ApiError::BadRequest(m)) => assert!(m.contains(says), "{bad}: {m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn pages_follow_the_cursor() {
        let rows = |names: &[&str]| -> Vec<(String, u64)> {
            names.iter().map(|n| (n.to_string(), 1)).collect()
        };
        let all = rows(&["al", "alice", "bob", "carol"]);
        let names = |p: &[TenantOut]| p.iter().map(|t| t.tenant.clone()).collect::<Vec<_>>();
        let q = ListQuery {
            limit: Some(2),
            ..ListQuery::default()
        };
        let (p, next) = page(all.clone(), &q);
        assert_eq!(
            (names(&p), next.as_deref()),
            (vec!["al".into(), "alice".into()], Some("alice"))
        );
        let q = ListQuery {
            limit: Some(2),
            after: next,
            ..ListQuery::default()
        };
        let (p, next) = page(all.clone(), &q);
        assert_eq!(
            (names(&p), next),
            (vec!["bob".into(), "carol".into()], None)
        );
        let q = ListQuery {
            prefix: Some("al".into()),
            ..ListQuery::default()
        };
        assert_eq!(names(&page(all, &q).0), ["al", "alice"]);
    }
}
