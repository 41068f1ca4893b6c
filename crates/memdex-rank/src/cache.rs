//! Per-tenant data the ranking derives from a store view and keeps: BM25 indexes, importance
//! values, FragRel session groups and the semantic adjacency, each built on first use. A view
//! of a newer store version takes over the entries of tenants whose live rows did not change.
//!
//! The cache holds at most a budget of bytes (estimated per entry): when a new entry takes it
//! past the budget, whole tenants go, least recently used first, so a server with many
//! tenants or an evaluation over thousands of haystacks stays bounded. An evicted tenant's
//! next query builds its entries again. Entries are built outside the lock: other tenants'
//! queries do not wait.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use memdex_score::bm25::{Bm25, Bm25Params, Idf};
use memdex_score::signals::importance;
use memdex_store::TenantSlice;

use crate::kernel_rows::FusedText;
use crate::options::Bm25Flavour;

/// Per item (timeline index): its semantic neighbours as (timeline index, weight).
pub(crate) type Adjacency = Vec<Vec<(u32, f32)>>;

/// Bytes a [`TenantCache`] holds at most by default (1 GiB).
pub const DEFAULT_CACHE_BYTES: usize = 1 << 30;

/// One tenant's entries.
#[derive(Debug, Default, Clone)]
struct Entry {
    bm25_official: Option<Arc<Bm25>>,
    bm25_memdex: Option<Arc<Bm25>>,
    /// Symmetric semantic adjacency (index in the tenant's timeline, weight).
    semantic: Option<Arc<Adjacency>>,
    importance: Option<Arc<Vec<u8>>>,
    /// FragRel session groups along the timeline (a new group whenever the session changes).
    groups: Option<Arc<Vec<u64>>>,
    /// TiM thoughts and MemTree of the tenant, over its live items.
    structures: Option<Arc<memdex_structures::TenantView>>,
    /// The live rows as the fused kernels read them (f16 embeddings, timeline, groups).
    fused: Option<Arc<crate::kernel_rows::FusedRows>>,
    /// The rows' text side as a device reads it (per BM25 flavour).
    fused_text_official: Option<Arc<crate::kernel_rows::FusedText>>,
    fused_text_memdex: Option<Arc<crate::kernel_rows::FusedText>>,
    /// Query expansion's candidate terms.
    vocab: Option<Arc<crate::expand::Vocab>>,
    /// The candidates as a device reads them (term ids of the memdex postings).
    fused_vocab: Option<Arc<crate::kernel_rows::FusedVocab>>,
    bytes: usize,
    /// Tick of the last use (the key of the tenant in `State::lru`).
    used: u64,
}

#[derive(Debug, Default)]
struct State {
    tenants: HashMap<String, Entry>,
    /// Last-use tick → tenant, oldest first.
    lru: BTreeMap<u64, String>,
    tick: u64,
    bytes: usize,
    evicted: u64,
}

/// What a [`TenantCache`] holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    pub tenants: usize,
    /// Estimated heap bytes of the entries.
    pub bytes: usize,
    pub budget: usize,
    /// Tenants evicted so far to stay within the budget.
    pub evicted: u64,
}

/// Per-tenant BM25 indexes, importance values, session groups, adjacency and structures,
/// built on first use, within a byte budget.
#[derive(Debug)]
pub struct TenantCache {
    state: Mutex<State>,
    budget: usize,
}

impl Default for TenantCache {
    fn default() -> Self {
        TenantCache::with_budget(DEFAULT_CACHE_BYTES)
    }
}

/// A cached value's estimated heap bytes.
trait HeapBytes {
    fn heap_bytes(&self) -> usize;
}

impl HeapBytes for Bm25 {
    fn heap_bytes(&self) -> usize {
        Bm25::heap_bytes(self)
    }
}

impl HeapBytes for Adjacency {
    fn heap_bytes(&self) -> usize {
        self.iter().map(|a| 24 + 8 * a.capacity()).sum()
    }
}

impl HeapBytes for Vec<u8> {
    fn heap_bytes(&self) -> usize {
        self.capacity()
    }
}

impl HeapBytes for Vec<u64> {
    fn heap_bytes(&self) -> usize {
        8 * self.capacity()
    }
}

impl HeapBytes for crate::kernel_rows::FusedRows {
    fn heap_bytes(&self) -> usize {
        crate::kernel_rows::FusedRows::heap_bytes(self)
    }
}

impl HeapBytes for crate::kernel_rows::FusedText {
    fn heap_bytes(&self) -> usize {
        crate::kernel_rows::FusedText::heap_bytes(self)
    }
}

impl HeapBytes for crate::kernel_rows::FusedVocab {
    fn heap_bytes(&self) -> usize {
        crate::kernel_rows::FusedVocab::heap_bytes(self)
    }
}

impl HeapBytes for crate::expand::Vocab {
    fn heap_bytes(&self) -> usize {
        crate::expand::Vocab::heap_bytes(self)
    }
}

impl HeapBytes for memdex_structures::TenantView {
    fn heap_bytes(&self) -> usize {
        memdex_structures::TenantView::heap_bytes(self)
    }
}

impl TenantCache {
    /// A cache that holds at most about `budget` bytes (one tenant's entries always fit).
    pub fn with_budget(budget: usize) -> TenantCache {
        TenantCache {
            state: Mutex::default(),
            budget,
        }
    }

    /// Bytes it holds at most.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Tenants, bytes and evictions now.
    pub fn stats(&self) -> CacheStats {
        let st = self.lock();
        CacheStats {
            tenants: st.tenants.len(),
            bytes: st.bytes,
            budget: self.budget,
            evicted: st.evicted,
        }
    }

    /// Whether the entries fill the budget (warming more tenants would evict others).
    pub fn is_full(&self) -> bool {
        self.lock().bytes >= self.budget
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The entry `get` picks from `tenant`'s entries, else `build`'s value, stored (built
    /// outside the lock; if another query stored one meanwhile, that one is kept).
    fn entry<V: HeapBytes, E>(
        &self,
        tenant: &str,
        get: impl Fn(&mut Entry) -> &mut Option<Arc<V>>,
        build: impl FnOnce() -> Result<V, E>,
    ) -> Result<Arc<V>, E> {
        if let Some(v) = self.touch(tenant, |e| get(e).clone()) {
            return Ok(v);
        }
        let v = Arc::new(build()?);
        let bytes = v.heap_bytes();
        let mut st = self.lock();
        let st = &mut *st;
        st.tick += 1;
        let tick = st.tick;
        let e = st.tenants.entry(tenant.to_string()).or_default();
        let slot = get(e);
        let kept = match slot {
            Some(v) => v.clone(),
            None => {
                *slot = Some(v.clone());
                e.bytes += bytes;
                st.bytes += bytes;
                v
            }
        };
        st.lru.remove(&e.used);
        e.used = tick;
        st.lru.insert(tick, tenant.to_string());
        st.evict(self.budget, tenant);
        Ok(kept)
    }

    /// Reads `tenant`'s entry with `f` and marks it used, if the tenant is cached.
    fn touch<R>(&self, tenant: &str, f: impl FnOnce(&mut Entry) -> Option<R>) -> Option<R> {
        let mut st = self.lock();
        let st = &mut *st;
        let e = st.tenants.get_mut(tenant)?;
        let r = f(e)?;
        st.tick += 1;
        st.lru.remove(&e.used);
        e.used = st.tick;
        st.lru.insert(st.tick, tenant.to_string());
        Some(r)
    }

    /// The tenant's structures, built by `build` on first use.
    pub(crate) fn structures(
        &self,
        tenant: &str,
        build: impl FnOnce() -> Result<memdex_structures::TenantView, crate::RankError>,
    ) -> Result<Arc<memdex_structures::TenantView>, crate::RankError> {
        self.entry(tenant, |e| &mut e.structures, build)
    }

    pub(crate) fn semantic(&self, tenant: &str, slices: &[TenantSlice<'_>]) -> Arc<Adjacency> {
        built(self.entry(tenant, |e| &mut e.semantic, || Ok(adjacency(slices))))
    }

    pub(crate) fn groups(&self, tenant: &str, slices: &[TenantSlice<'_>]) -> Arc<Vec<u64>> {
        let build = || {
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
            Ok(groups)
        };
        built(self.entry(tenant, |e| &mut e.groups, build))
    }

    /// The tenant's rows for the fused kernels, built once per version of its rows (a new
    /// build has a new key: see [`crate::kernel_rows::FusedRows::key`]).
    pub(crate) fn fused_rows(
        &self,
        tenant: &str,
        slices: &[TenantSlice<'_>],
        dim: usize,
    ) -> Arc<crate::kernel_rows::FusedRows> {
        let groups = self.groups(tenant, slices);
        let build = || Ok(crate::kernel_rows::FusedRows::build(slices, dim, &groups));
        built(self.entry(tenant, |e| &mut e.fused, build))
    }

    /// The tenant's rows' text side for a device (BM25 postings of `flavour`, dates), built
    /// once per version of its rows.
    pub(crate) fn fused_text(
        &self,
        tenant: &str,
        flavour: Bm25Flavour,
        slices: &[TenantSlice<'_>],
    ) -> Arc<FusedText> {
        let bm25 = self.bm25(tenant, flavour, slices);
        let build = || Ok(FusedText::build(slices, flavour, &bm25));
        let slot: fn(&mut Entry) -> &mut Option<Arc<FusedText>> = match flavour {
            Bm25Flavour::Official => |e| &mut e.fused_text_official,
            Bm25Flavour::Memdex => |e| &mut e.fused_text_memdex,
        };
        built(self.entry(tenant, slot, build))
    }

    /// The tenant's query-expansion candidates (its rare terms with a word vector), from its
    /// memdex BM25 index `bm25`.
    pub(crate) fn vocab(
        &self,
        tenant: &str,
        bm25: &Bm25,
        store: &memdex_store::Store,
    ) -> Arc<crate::expand::Vocab> {
        let build = || Ok(crate::expand::Vocab::build(bm25, store));
        built(self.entry(tenant, |e| &mut e.vocab, build))
    }

    /// The tenant's query-expansion candidates for a device (term ids of its memdex-flavour
    /// [`FusedText`]), built once per version of its rows.
    pub(crate) fn fused_vocab(
        &self,
        tenant: &str,
        slices: &[TenantSlice<'_>],
        store: &memdex_store::Store,
    ) -> Arc<crate::kernel_rows::FusedVocab> {
        let bm25 = self.bm25(tenant, Bm25Flavour::Memdex, slices);
        let vocab = self.vocab(tenant, &bm25, store);
        let text = self.fused_text(tenant, Bm25Flavour::Memdex, slices);
        let build = || Ok(crate::kernel_rows::FusedVocab::build(vocab, &text));
        built(self.entry(tenant, |e| &mut e.fused_vocab, build))
    }

    pub(crate) fn importance(&self, tenant: &str, slices: &[TenantSlice<'_>]) -> Arc<Vec<u8>> {
        let build = || {
            Ok(slices
                .iter()
                .flat_map(|s| {
                    (0..s.rows).map(move |r| {
                        if memdex_score::signals::asks_only(s.value(r)) {
                            1
                        } else {
                            importance(s.key(r))
                        }
                    })
                })
                .collect())
        };
        built(self.entry(tenant, |e| &mut e.importance, build))
    }

    pub(crate) fn bm25(
        &self,
        tenant: &str,
        flavour: Bm25Flavour,
        slices: &[TenantSlice<'_>],
    ) -> Arc<Bm25> {
        let build = || {
            Ok(match flavour {
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
        };
        let slot: fn(&mut Entry) -> &mut Option<Arc<Bm25>> = match flavour {
            Bm25Flavour::Official => |e| &mut e.bm25_official,
            Bm25Flavour::Memdex => |e| &mut e.bm25_memdex,
        };
        built(self.entry(tenant, slot, build))
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

    /// Drops every entry: some tenants' live rows changed within the same store version (a
    /// file found damaged while serving left their slices), so each is rebuilt on its next
    /// search.
    pub fn clear(&self) {
        let mut st = self.lock();
        st.tenants.clear();
        st.lru.clear();
        st.bytes = 0;
    }

    /// Takes over `prev`'s entries for the tenants `keep` accepts (their live rows are the
    /// same in both views), so a commit rebuilds only the tenants it touched; recency order
    /// is kept, and the budget still holds.
    pub fn carry_from(&self, prev: &TenantCache, keep: impl Fn(&str) -> bool) {
        let src = prev.lock();
        let mut st = self.lock();
        for (_, tenant) in src.lru.iter() {
            let Some(e) = src.tenants.get(tenant).filter(|_| keep(tenant)) else {
                continue;
            };
            st.tick += 1;
            let tick = st.tick;
            st.bytes += e.bytes;
            st.lru.insert(tick, tenant.clone());
            let old = st.tenants.insert(
                tenant.clone(),
                Entry {
                    used: tick,
                    ..e.clone()
                },
            );
            if let Some(old) = old {
                st.bytes -= old.bytes;
                st.lru.remove(&old.used);
            }
        }
        st.evict(self.budget, "");
    }
}

impl State {
    /// Drops least recently used tenants until the entries fit `budget`; never `keep` (the
    /// tenant being served).
    fn evict(&mut self, budget: usize, keep: &str) {
        while self.bytes > budget {
            let Some(tenant) = self.lru.values().find(|t| t.as_str() != keep).cloned() else {
                break;
            };
            if let Some(e) = self.tenants.remove(&tenant) {
                self.lru.remove(&e.used);
                self.bytes -= e.bytes;
                self.evicted += 1;
            }
        }
    }
}

/// The value of an infallible build.
fn built<V>(r: Result<Arc<V>, std::convert::Infallible>) -> Arc<V> {
    match r {
        Ok(v) => v,
        Err(never) => match never {},
    }
}

/// The tenant's symmetric semantic adjacency over its timeline.
fn adjacency(slices: &[TenantSlice<'_>]) -> Adjacency {
    let positions: Vec<u64> = slices.iter().flat_map(|s| s.positions()).copied().collect();
    let mut adj: Adjacency = vec![Vec::new(); positions.len()];
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
    adj
}
