use memdex_core::{Role, TextKind};
use memdex_embed::Embedder;
use memdex_store::Store;
use serde::Serialize;

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
}

impl Searcher {
    /// Pairs a store with an embedder; refused unless the store was built with this model.
    pub fn new(store: Store, embedder: Embedder) -> Result<Searcher, EngineError> {
        store.check_model(embedder.info())?;
        Ok(Searcher { store, embedder })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn embedder(&self) -> &Embedder {
        &self.embedder
    }

    /// Embeds `query` (with the model's query prefix) and returns the tenant's top `k` items.
    pub fn search(
        &self,
        tenant: &str,
        query: &str,
        k: usize,
    ) -> Result<Vec<SearchHit>, EngineError> {
        if query.trim().is_empty() {
            return Err(EngineError::EmptyQuery);
        }
        let q = self.embedder.embed(&[query], TextKind::Query)?;
        self.search_vector(tenant, q.row(0), k)
    }

    /// Exact cosine top-k of a ready query vector over the tenant's items.
    pub fn search_vector(
        &self,
        tenant: &str,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<SearchHit>, EngineError> {
        let slices = self.store.tenant_slices(tenant);
        if slices.is_empty() {
            return Err(EngineError::UnknownTenant {
                tenant: tenant.to_string(),
                store: self.store.dir().display().to_string(),
            });
        }
        let dim = self.store.dim();
        let blocks: Vec<&[f32]> = slices.iter().map(|s| s.embeddings(dim)).collect();
        let hits = memdex_index::top_k(query, &blocks, dim, k);
        Ok(hits
            .iter()
            .enumerate()
            .map(|(rank, h)| {
                let it = slices[h.block as usize].item(h.row as usize);
                SearchHit {
                    rank: rank + 1,
                    score: h.score,
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
            .collect())
    }
}
