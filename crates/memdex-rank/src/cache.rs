//! Per-tenant data the ranking derives from a store view and keeps: BM25 indexes, importance
//! values, FragRel session groups and the semantic adjacency, each built on first use. A view
//! of a newer store version takes over the entries of tenants whose live rows did not change.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use memdex_index::bm25::{Bm25, Bm25Params, Idf};
use memdex_index::signals::importance;
use memdex_store::TenantSlice;

use crate::options::Bm25Flavour;

/// Per item (timeline index): its semantic neighbours as (timeline index, weight).
pub(crate) type Adjacency = Vec<Vec<(u32, f32)>>;

/// Per-tenant BM25 indexes and importance values, built on first use.
#[derive(Debug, Default)]
pub struct TenantCache {
    bm25: Mutex<HashMap<(String, Bm25Flavour), Arc<Bm25>>>,
    /// Symmetric semantic adjacency (index in the tenant's timeline, weight) per tenant.
    semantic: Mutex<HashMap<String, Arc<Adjacency>>>,
    importance: Mutex<HashMap<String, Arc<Vec<u8>>>>,
    /// FragRel session groups along the timeline (a new group whenever the session changes).
    groups: Mutex<HashMap<String, Arc<Vec<u64>>>>,
    /// TiM thoughts and MemTree of the tenant, over its live items.
    structures: Mutex<HashMap<String, Arc<memdex_structures::TenantView>>>,
}

impl TenantCache {
    /// The tenant's structures, built by `build` on first use.
    pub(crate) fn structures(
        &self,
        tenant: &str,
        build: impl FnOnce() -> Result<memdex_structures::TenantView, crate::RankError>,
    ) -> Result<Arc<memdex_structures::TenantView>, crate::RankError> {
        if let Some(v) = self
            .structures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(tenant)
        {
            return Ok(v.clone());
        }
        // built outside the lock: other tenants' queries do not wait
        let v = Arc::new(build()?);
        let mut map = self.structures.lock().unwrap_or_else(|p| p.into_inner());
        Ok(map.entry(tenant.to_string()).or_insert(v).clone())
    }

    pub(crate) fn semantic(&self, tenant: &str, slices: &[TenantSlice<'_>]) -> Arc<Adjacency> {
        let mut map = self.semantic.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(tenant.to_string())
            .or_insert_with(|| {
                let positions: Vec<u64> =
                    slices.iter().flat_map(|s| s.positions()).copied().collect();
                let mut adj: Vec<Vec<(u32, f32)>> = vec![Vec::new(); positions.len()];
                let mut i = 0;
                for s in slices {
                    for r in 0..s.rows {
                        for (p, w) in s.neighbors(r) {
                            if let Ok(j) = positions.binary_search(&p) {
                                if j != i {
                                    adj[i].push((j as u32, w));
                                    adj[j].push((i as u32, w));
                                }
                            }
                        }
                        i += 1;
                    }
                }
                for a in &mut adj {
                    // listed by both sides: keep one edge
                    a.sort_by_key(|e| e.0);
                    a.dedup_by_key(|e| e.0);
                }
                Arc::new(adj)
            })
            .clone()
    }

    pub(crate) fn groups(&self, tenant: &str, slices: &[TenantSlice<'_>]) -> Arc<Vec<u64>> {
        let mut map = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(tenant.to_string())
            .or_insert_with(|| {
                let mut groups: Vec<u64> = Vec::new();
                let mut prev: Option<&str> = None;
                for s in slices {
                    for r in 0..s.rows {
                        let sid = s.session_id(r);
                        let new = prev.is_some_and(|p| p != sid);
                        groups.push(groups.last().map_or(0, |&g| g + u64::from(new)));
                        prev = Some(sid);
                    }
                }
                Arc::new(groups)
            })
            .clone()
    }

    pub(crate) fn importance(&self, tenant: &str, slices: &[TenantSlice<'_>]) -> Arc<Vec<u8>> {
        let mut map = self.importance.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(tenant.to_string())
            .or_insert_with(|| {
                Arc::new(
                    slices
                        .iter()
                        .flat_map(|s| (0..s.rows).map(move |r| importance(s.key(r))))
                        .collect(),
                )
            })
            .clone()
    }

    pub(crate) fn bm25(
        &self,
        tenant: &str,
        flavour: Bm25Flavour,
        slices: &[TenantSlice<'_>],
    ) -> Arc<Bm25> {
        let mut map = self.bm25.lock().unwrap_or_else(|p| p.into_inner());
        map.entry((tenant.to_string(), flavour))
            .or_insert_with(|| {
                Arc::new(match flavour {
                    Bm25Flavour::Official => {
                        let keys: Vec<&str> = slices
                            .iter()
                            .flat_map(|s| (0..s.rows).map(move |r| s.key(r)))
                            .collect();
                        Bm25::whitespace(&keys, Bm25Params::default())
                    }
                    // the analysed terms stored at index time: no re-analysis
                    Bm25Flavour::Memdex => Bm25::new(
                        slices.iter().flat_map(|s| (0..s.rows).map(|r| s.terms(r))),
                        Bm25Params::default(),
                        Idf::Lucene,
                    ),
                })
            })
            .clone()
    }

    /// Builds the default pipeline's caches (memdex BM25, importance, session groups) of
    /// `tenant`, and maps the pages of the columns every query reads (embeddings, positions,
    /// timestamps), so the tenant's first query pays neither (a first touch of 5k rows of a
    /// memory-mapped segment costs ~2k page faults).
    pub fn warm(&self, tenant: &str, slices: &[TenantSlice<'_>], dim: usize) {
        let _ = self.bm25(tenant, Bm25Flavour::Memdex, slices);
        let _ = self.importance(tenant, slices);
        let _ = self.groups(tenant, slices);
        let mut touched = 0f64;
        for s in slices {
            // one read per 4 KiB page
            for run in s.vector_runs() {
                touched += (run.data(dim).iter().step_by(1024))
                    .map(|&v| f64::from(v))
                    .sum::<f64>();
            }
            touched += s
                .positions()
                .iter()
                .step_by(512)
                .map(|&v| v as f64)
                .sum::<f64>();
            touched += s
                .timestamps()
                .iter()
                .step_by(512)
                .map(|&v| v as f64)
                .sum::<f64>();
        }
        std::hint::black_box(touched);
    }

    /// Takes over `prev`'s entries for the tenants `keep` accepts (their live rows are the
    /// same in both views), so a commit rebuilds only the tenants it touched.
    pub fn carry_from(&self, prev: &TenantCache, keep: impl Fn(&str) -> bool) {
        carry(&self.bm25, &prev.bm25, |k| keep(&k.0));
        carry(&self.importance, &prev.importance, |k| keep(k));
        carry(&self.semantic, &prev.semantic, |k| keep(k));
        carry(&self.groups, &prev.groups, |k| keep(k));
        carry(&self.structures, &prev.structures, |k| keep(k));
    }
}

/// Copies the entries of `src` whose key `keep` accepts into `dst`.
fn carry<K: Clone + Eq + std::hash::Hash, V: Clone>(
    dst: &Mutex<HashMap<K, V>>,
    src: &Mutex<HashMap<K, V>>,
    keep: impl Fn(&K) -> bool,
) {
    let src = src.lock().unwrap_or_else(|p| p.into_inner());
    let mut dst = dst.lock().unwrap_or_else(|p| p.into_inner());
    dst.extend(
        src.iter()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
}
