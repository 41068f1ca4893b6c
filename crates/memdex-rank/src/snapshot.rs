//! [`Snapshot`]: one committed store version with the ranking's per-tenant caches, the one
//! thing every ranking reads. The serving engine publishes a new one after each commit (its
//! searches and its rank stage read the one they took); an offline reader keeps one for its
//! life. Both rank through [`Snapshot::top`] / [`Snapshot::all`], one call into the
//! [`BatchRanker`] seam.

use std::collections::HashSet;
use std::sync::Arc;

use memdex_store::Store;
use serde::Serialize;

use crate::{
    Batch, BatchHits, BatchQuery, BatchRanker, BatchRankings, CacheStats, RankError, RankOptions,
    TenantCache, TopK,
};

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

/// An immutable view of one committed store version and its ranking caches.
#[derive(Debug)]
pub struct Snapshot {
    store: Store,
    cache: TenantCache,
}

impl Snapshot {
    /// A snapshot whose ranking caches hold at most `cache_bytes` (least recently used
    /// tenants go first).
    pub fn new(store: Store, cache_bytes: usize) -> Snapshot {
        Snapshot {
            store,
            cache: TenantCache::with_budget(cache_bytes),
        }
    }

    /// A snapshot of `store` that keeps `prev`'s ranking caches of every tenant but
    /// `changed` (None: all changed).
    pub fn succeed(store: Store, prev: &Snapshot, changed: Option<&HashSet<String>>) -> Snapshot {
        let next = Snapshot::new(store, prev.cache.budget());
        if let Some(changed) = changed {
            next.cache.carry_from(&prev.cache, |t| !changed.contains(t));
        }
        next
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn cache(&self) -> &TenantCache {
        &self.cache
    }

    /// What the ranking caches hold now (tenants, estimated bytes, budget).
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Whether `tenant` has live items (hashing none of its files: callers ask this on their
    /// own thread before a search is queued).
    pub fn has_tenant(&self, tenant: &str) -> bool {
        self.store.has_live_rows(tenant)
    }

    /// A batch of `queries` over this snapshot.
    pub fn batch<'a, 's: 'a>(
        &'s self,
        queries: &'a [BatchQuery<'a>],
        opts: &'a RankOptions,
    ) -> Batch<'a, 's> {
        Batch {
            store: &self.store,
            cache: &self.cache,
            queries,
            opts,
        }
    }

    /// Every query's top `top.k` through `ranker`; a query whose tenant the store does not
    /// hold fails alone.
    pub fn top(
        &self,
        ranker: &dyn BatchRanker,
        queries: &[BatchQuery<'_>],
        opts: &RankOptions,
        top: TopK,
    ) -> Result<BatchHits, RankError> {
        ranker.top(&self.batch(queries, opts), top)
    }

    /// Every query's whole ranking through `ranker`.
    pub fn all<'s>(
        &'s self,
        ranker: &dyn BatchRanker,
        queries: &[BatchQuery<'_>],
        opts: &RankOptions,
    ) -> Result<BatchRankings<'s>, RankError> {
        ranker.all(&self.batch(queries, opts))
    }

    /// Builds the default pipeline's per-tenant caches of `tenant` and maps its column pages
    /// now, so its first query does not pay.
    pub fn warm(&self, tenant: &str) {
        let slices = self.store.tenant_slices(tenant);
        if !slices.is_empty() {
            self.cache.warm(tenant, &slices, self.store.dim());
        }
    }

    /// [`Self::warm`] for every tenant until the caches fill their budget, on a background
    /// thread (first queries of a tenant not warmed yet build its caches themselves).
    pub fn warm_all_in_background(self: &Arc<Self>) {
        let snapshot = self.clone();
        let spawned = std::thread::Builder::new()
            .name("memdex-warm".into())
            .spawn(move || {
                let tenants: Vec<String> = (snapshot.store.tenants().keys())
                    .map(|t| t.to_string())
                    .collect();
                for t in tenants {
                    if snapshot.cache.is_full() {
                        break;
                    }
                    snapshot.warm(&t);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cache warm-up thread not started: {e}");
        }
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
