//! What readers get: an immutable [`View`] of one committed store version (the store owns
//! which rows are live) with the ranking's per-tenant caches. The writer publishes a new one
//! after each commit, before it answers.

use std::collections::HashSet;
use std::sync::Arc;

use memdex_rank::{
    top_one, BatchQuery, BatchRanker, CacheStats, Query, RankOptions, SearchHit, TenantCache, TopK,
};
use memdex_store::Store;
use serde::Serialize;

use crate::RuntimeError;

/// Store size (live rows).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StoreSummary {
    pub manifest_version: u64,
    pub segments: usize,
    pub bytes: u64,
    /// Live rows.
    pub rows: u64,
    /// Deleted rows whose bytes compaction has not removed yet.
    pub deleted_pending: u64,
    pub tenants: usize,
}

/// An immutable view of one committed store version.
#[derive(Debug)]
pub struct View {
    store: Store,
    cache: TenantCache,
}

impl View {
    /// A view whose ranking caches hold at most `cache_bytes` (least recently used tenants
    /// go first).
    pub(crate) fn new(store: Store, cache_bytes: usize) -> View {
        View {
            store,
            cache: TenantCache::with_budget(cache_bytes),
        }
    }

    /// A view of `store` that keeps `prev`'s ranking caches of every tenant but `changed`
    /// (None: all changed).
    pub(crate) fn succeed(store: Store, prev: &View, changed: Option<&HashSet<String>>) -> View {
        let next = View::new(store, prev.cache.budget());
        if let Some(changed) = changed {
            next.cache.carry_from(&prev.cache, |t| !changed.contains(t));
        }
        next
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) fn cache(&self) -> &TenantCache {
        &self.cache
    }

    /// What the ranking caches of this view hold now (tenants, estimated bytes, budget).
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Whether `tenant` has live items.
    pub fn has_tenant(&self, tenant: &str) -> bool {
        !self.store.tenant_slices(tenant).is_empty()
    }

    /// Builds the default pipeline's per-tenant caches of `tenant` and maps its column pages
    /// now, so its first query does not pay.
    pub(crate) fn warm(&self, tenant: &str) {
        let slices = self.store.tenant_slices(tenant);
        if !slices.is_empty() {
            self.cache.warm(tenant, &slices, self.store.dim());
        }
    }

    /// [`Self::warm`] for every tenant until the caches fill their budget, on a background
    /// thread (first queries of a tenant not warmed yet build its caches themselves).
    pub(crate) fn warm_all_in_background(self: &Arc<Self>) {
        let view = self.clone();
        let spawned = std::thread::Builder::new()
            .name("memdex-warm".into())
            .spawn(move || {
                let tenants: Vec<String> =
                    view.store.tenants().keys().map(|t| t.to_string()).collect();
                for t in tenants {
                    if view.cache.is_full() {
                        break;
                    }
                    view.warm(&t);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cache warm-up thread not started: {e}");
        }
    }

    /// Ranks the tenant's live items for a query through `ranker` and returns the top
    /// `top.k` (each explained with `top.explain`).
    pub fn search(
        &self,
        ranker: &dyn BatchRanker,
        tenant: &str,
        query: &Query<'_>,
        opts: &RankOptions,
        top: TopK,
    ) -> Result<Vec<SearchHit>, RuntimeError> {
        let q = BatchQuery {
            tenant,
            query: *query,
        };
        Ok(top_one(ranker, &self.store, &self.cache, q, opts, top)
            .map_err(memdex_pipeline::EngineError::from)?)
    }

    pub fn summary(&self) -> StoreSummary {
        let m = self.store.manifest();
        StoreSummary {
            manifest_version: m.version,
            segments: m.segments.len(),
            bytes: m.bytes(),
            rows: self.store.rows(),
            deleted_pending: self.store.stored_rows() - self.store.rows(),
            tenants: self.store.tenants().len(),
        }
    }
}
