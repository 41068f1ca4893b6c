use memdex_core::{Role, TextKind};
use memdex_embed::Embedder;
use memdex_store::Store;
use serde::Serialize;

use crate::rank::{rank, Query, RankOptions, Ranking, TenantCache};
use crate::stages::Stages;
use crate::EngineError;

/// One ranked item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    pub rank: usize,
    pub score: f32,
    pub item_id: u64,
    pub tenant: String,
    pub session_id: String,
    pub turn: u32,
    pub position: u64,
    pub timestamp_ms: i64,
    pub role: Role,
    pub value: String,
}

/// Searches one store with the model it was built with.
#[derive(Debug)]
pub struct Searcher {
    store: Store,
    embedder: Embedder,
    cache: TenantCache,
}

impl Searcher {
    /// Pairs a store with an embedder; refused unless the store was built with this model.
    pub fn new(store: Store, embedder: Embedder) -> Result<Searcher, EngineError> {
        store.check_model(embedder.info())?;
        Ok(Searcher {
            store,
            embedder,
            cache: TenantCache::default(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn embedder(&self) -> &Embedder {
        &self.embedder
    }

    /// Embeds `query` (with the model's query prefix) and returns the tenant's top `k` items.
    /// `date_ms` is when the question is asked (recency; default: the newest item's date).
    pub fn search(
        &self,
        tenant: &str,
        query: &str,
        date_ms: Option<i64>,
        k: usize,
        opts: &RankOptions,
    ) -> Result<Vec<SearchHit>, EngineError> {
        if query.trim().is_empty() {
            return Err(EngineError::EmptyQuery);
        }
        let q = self.embedder.embed(&[query], TextKind::Query)?;
        let query = Query {
            text: query,
            vector: q.row(0),
            date_ms,
            dense: None,
        };
        Ok(self.rank(tenant, &query, opts)?.hits(k))
    }

    /// Ranks all of the tenant's items for a query.
    pub fn rank(
        &self,
        tenant: &str,
        query: &Query<'_>,
        opts: &RankOptions,
    ) -> Result<Ranking<'_>, EngineError> {
        check_columns(&self.store, opts)?;
        let slices = self.store.tenant_slices(tenant);
        if slices.is_empty() {
            return Err(EngineError::UnknownTenant {
                tenant: tenant.to_string(),
                store: self.store.dir().display().to_string(),
            });
        }
        Ok(rank(&self.store, slices, tenant, query, opts, &self.cache))
    }
}

impl Ranking<'_> {
    /// The best `k` items as hits.
    pub fn hits(&self, k: usize) -> Vec<SearchHit> {
        self.order
            .iter()
            .take(k)
            .enumerate()
            .map(|(rank, &i)| {
                let it = self.item(i);
                SearchHit {
                    rank: rank + 1,
                    score: self.scores[i] as f32,
                    item_id: it.item_id,
                    tenant: it.tenant.to_string(),
                    session_id: it.session_id.to_string(),
                    turn: it.turn,
                    position: it.position,
                    timestamp_ms: it.timestamp_ms,
                    role: it.role,
                    value: it.value.to_string(),
                }
            })
            .collect()
    }
}

/// Refuses stages whose columns `store` was built without, naming the `index` option.
pub(crate) fn check_columns(store: &Store, opts: &RankOptions) -> Result<(), EngineError> {
    let x = &store.manifest().extraction;
    let missing = |stage, what, option| EngineError::MissingColumns {
        stage,
        what,
        store: store.dir().display().to_string(),
        option,
    };
    if opts.semantic.is_some() && x.neighbors == 0 {
        return Err(missing(
            "FragRel semantic",
            "semantic neighbours",
            "`memdex index --neighbors M`",
        ));
    }
    if opts.time.is_some() && !x.events {
        return Err(missing(
            "time",
            "event dates",
            "`memdex index --extract-events` (the default)",
        ));
    }
    Ok(())
}

/// The default pipeline on a store indexed without event dates: the time stage is dropped
/// unless the user asked for it (then [`check_columns`] names the missing option).
pub fn fit_to_store(opts: &mut RankOptions, stages: &Stages, store: &Store) {
    if stages.time.is_none() && !store.manifest().extraction.events && opts.time.is_some() {
        tracing::warn!("store has no event dates; time stage off");
        opts.time = None;
    }
}
