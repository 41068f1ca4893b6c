//! The ranking pipeline shared by `search`, `eval` (and later the server): dense cosine and/or
//! BM25 over a tenant's items, min-max fusion, FragRel environment scores. Each stage is an
//! option; the defaults are the best measured configuration (see docs/evaluation.md).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use memdex_extract::time::{ms_day, parse_query};
use memdex_index::bm25::{Bm25, Bm25Params, Idf};
use memdex_index::fragrel::{relation_scores, FragRel};
use memdex_index::fusion::{hybrid, rank_desc, rrf};
use memdex_index::signals::{importance, recency_factor};
use memdex_index::text::Analyzer;
use memdex_store::{ItemRef, Store, TenantSlice};
use serde::{Deserialize, Serialize};

/// Which ranking runs first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Retriever {
    /// Cosine similarity of query and key embeddings.
    Dense,
    /// BM25 over the keys.
    Bm25,
    /// `w_dense · minmax(dense) + w_sparse · minmax(bm25)`.
    Hybrid,
}

/// Which BM25 ranks keyword matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bm25Flavour {
    /// LongMemEval's: `rank_bm25` Okapi over `str.split(" ")` (the reference baselines).
    Official,
    /// memdex's: Unicode words, lower-case, stop words, Snowball stems (stored at index
    /// time), Lucene idf.
    Memdex,
}

/// Which items share an environment in FragRel's context relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FragRelScope {
    /// Items of the same session.
    Session,
    /// The tenant's whole history.
    History,
}

/// How the hybrid combines its two rankings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// Weighted sum of per-query min-max normalised scores (Mimir).
    MinMax,
    /// Reciprocal-rank fusion with constant k (weights ignored).
    Rrf { k: f64 },
}

/// How items in the query's time range are preferred (LongMemEval §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeMode {
    /// Move them ahead of all others, keeping the order within each group (the official
    /// code's behaviour).
    Front,
    /// Multiply their scores by `1 + this`.
    Boost(f64),
}

/// The time stage: a query naming a time (`last weekend`, `in March`, `on 8 May 2023`) gets a
/// range (±2 days); items whose session date or extracted event dates fall in it are
/// preferred. Queries asking "when…" without a range can boost items that state a date.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimeStage {
    pub mode: TimeMode,
    /// Scores × (1 + this) for dated items when the query asks "when" (0: off).
    pub when_boost: f64,
}

impl Default for TimeStage {
    /// The official code's re-ordering, plus a mild boost (0.2) of dated items for "when"
    /// questions.
    fn default() -> Self {
        Self {
            mode: TimeMode::Front,
            when_boost: 0.2,
        }
    }
}

/// The ranking pipeline's stages and weights.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankOptions {
    pub retriever: Retriever,
    pub bm25: Bm25Flavour,
    /// (dense, sparse) weights of the hybrid.
    pub weights: (f64, f64),
    pub fusion: Fusion,
    /// FragRel environment scores on top (off when None).
    pub fragrel: Option<(FragRel, FragRelScope)>,
    /// Mimir recency: the oldest item's score × (1 − this), the newest unchanged (off: None).
    pub recency: Option<f64>,
    /// Mimir importance: scores × (1 + this · log10(importance 1..10)) (off: None).
    pub importance: Option<f64>,
    /// Time-aware ranking (off when None; needs the `events` column).
    pub time: Option<TimeStage>,
    /// FragRel's semantic relation: `s + this · Σ w_ij s_j / Σ w_ij` over each item's stored
    /// neighbours and the items that list it (w = max(0, cos)), computed from the same
    /// first-stage scores as the context relation (off when None; needs `neighbors`).
    pub semantic: Option<f64>,
}

/// One query: its text (for BM25), vector (dense) and date (recency; default: the newest
/// item's date).
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    pub text: &'a str,
    pub vector: &'a [f32],
    pub date_ms: Option<i64>,
    /// Dense scores of the ranked rows computed elsewhere (the engine's device scan), in
    /// timeline order; None (or a length that does not match): computed here from `vector`.
    pub dense: Option<&'a [f32]>,
}

impl Default for RankOptions {
    /// The pipeline chosen on LoCoMo dev by principle and coarse sweeps (docs/evaluation.md):
    /// hybrid 0.5/0.5 (Mimir) with memdex's BM25, FragRel in the paper's chat setting (α 0.5,
    /// w 0.8) within sessions, the time stage (official re-ordering) and importance 0.3;
    /// recency off (it lowered every metric).
    fn default() -> Self {
        Self {
            retriever: Retriever::Hybrid,
            bm25: Bm25Flavour::Memdex,
            weights: (0.5, 0.5),
            fusion: Fusion::MinMax,
            fragrel: Some((FragRel::default(), FragRelScope::Session)),
            recency: None,
            importance: Some(0.3),
            time: Some(TimeStage::default()),
            semantic: None,
        }
    }
}

impl RankOptions {
    /// Plain cosine ranking (the dense baseline).
    pub fn dense() -> Self {
        Self {
            retriever: Retriever::Dense,
            bm25: Bm25Flavour::Official,
            weights: (0.5, 0.5),
            fusion: Fusion::MinMax,
            fragrel: None,
            recency: None,
            importance: None,
            time: None,
            semantic: None,
        }
    }
}

/// A tenant's items with their final scores; `order` lists storage indices best first.
#[derive(Debug)]
pub struct Ranking<'s> {
    slices: Vec<TenantSlice<'s>>,
    starts: Vec<usize>,
    pub scores: Vec<f64>,
    pub order: Vec<usize>,
}

impl<'s> Ranking<'s> {
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The item at storage index `i` (the tenant's timeline order).
    pub fn item(&self, i: usize) -> ItemRef<'s> {
        let s = self.starts.partition_point(|&st| st <= i) - 1;
        self.slices[s].item(i - self.starts[s])
    }
}

/// Per item (timeline index): its semantic neighbours as (timeline index, weight).
type Adjacency = Vec<Vec<(u32, f32)>>;

/// Per-tenant BM25 indexes and importance values, built on first use.
#[derive(Debug, Default)]
pub(crate) struct TenantCache {
    bm25: Mutex<HashMap<(String, Bm25Flavour), Arc<Bm25>>>,
    /// Symmetric semantic adjacency (index in the tenant's timeline, weight) per tenant.
    semantic: Mutex<HashMap<String, Arc<Adjacency>>>,
    importance: Mutex<HashMap<String, Arc<Vec<u8>>>>,
    /// FragRel session groups along the timeline (a new group whenever the session changes).
    groups: Mutex<HashMap<String, Arc<Vec<u64>>>>,
}

impl TenantCache {
    fn semantic(&self, tenant: &str, slices: &[TenantSlice<'_>]) -> Arc<Adjacency> {
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

    fn groups(&self, tenant: &str, slices: &[TenantSlice<'_>]) -> Arc<Vec<u64>> {
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

    fn importance(&self, tenant: &str, slices: &[TenantSlice<'_>]) -> Arc<Vec<u8>> {
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

    fn get(&self, tenant: &str, flavour: Bm25Flavour, slices: &[TenantSlice<'_>]) -> Arc<Bm25> {
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
    pub(crate) fn warm(&self, tenant: &str, slices: &[TenantSlice<'_>], dim: usize) {
        let _ = self.get(tenant, Bm25Flavour::Memdex, slices);
        let _ = self.importance(tenant, slices);
        let _ = self.groups(tenant, slices);
        let mut touched = 0f64;
        for s in slices {
            // one read per 4 KiB page
            touched += s
                .embeddings(dim)
                .iter()
                .step_by(1024)
                .map(|&v| f64::from(v))
                .sum::<f64>();
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
    pub(crate) fn carry_from(&self, prev: &TenantCache, keep: impl Fn(&str) -> bool) {
        carry(&self.bm25, &prev.bm25, |k| keep(&k.0));
        carry(&self.importance, &prev.importance, |k| keep(k));
        carry(&self.semantic, &prev.semantic, |k| keep(k));
        carry(&self.groups, &prev.groups, |k| keep(k));
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

/// Scores every item of `slices` for the query and orders them.
pub(crate) fn rank<'s>(
    store: &'s Store,
    slices: Vec<TenantSlice<'s>>,
    tenant: &str,
    query: &Query<'_>,
    opts: &RankOptions,
    cache: &TenantCache,
) -> Ranking<'s> {
    let (query_text, query_vec) = (query.text, query.vector);
    let dim = store.dim();
    let mut starts = Vec::with_capacity(slices.len());
    let mut n = 0;
    for s in &slices {
        starts.push(n);
        n += s.rows;
    }
    let dense = || -> Vec<f64> {
        if let Some(d) = query.dense.filter(|d| d.len() == n) {
            return d.iter().map(|&v| f64::from(v)).collect();
        }
        let mut out = Vec::with_capacity(n);
        for s in &slices {
            out.extend(
                s.embeddings(dim)
                    .chunks_exact(dim)
                    .map(|row| f64::from(memdex_index::dot(query_vec, row))),
            );
        }
        out
    };
    let sparse = || -> Vec<f64> {
        let bm = cache.get(tenant, opts.bm25, &slices);
        match opts.bm25 {
            Bm25Flavour::Official => bm.scores(query_text),
            Bm25Flavour::Memdex => {
                let terms = Analyzer::english().terms(query_text);
                bm.scores_terms(terms.iter().map(String::as_str))
            }
        }
    };
    let mut scores = match opts.retriever {
        Retriever::Dense => dense(),
        Retriever::Bm25 => sparse(),
        Retriever::Hybrid => match opts.fusion {
            Fusion::MinMax => hybrid(&dense(), &sparse(), opts.weights.0, opts.weights.1),
            Fusion::Rrf { k } => rrf(&[&dense(), &sparse()], k),
        },
    };
    if let Some((p, scope)) = opts.fragrel {
        let positions: Vec<u64> = slices.iter().flat_map(|s| s.positions()).copied().collect();
        let groups = match scope {
            FragRelScope::Session => cache.groups(tenant, &slices),
            FragRelScope::History => Arc::new(vec![0; n]),
        };
        let ctx = relation_scores(&scores, &positions, &groups, p);
        scores = match opts.semantic {
            Some(beta) => semantic_env(&scores, &cache.semantic(tenant, &slices), beta)
                .iter()
                .zip(&ctx)
                .zip(&scores)
                .map(|((sem, c), s)| c + sem - s)
                .collect(),
            None => ctx,
        };
    } else if let Some(beta) = opts.semantic {
        scores = semantic_env(&scores, &cache.semantic(tenant, &slices), beta);
    }
    if opts.recency.is_some() || opts.importance.is_some() {
        // multiplicative signals need non-negative scores: shift negative ones (cosines can be)
        // up by the minimum, which keeps the order
        let lo = scores.iter().copied().fold(f64::INFINITY, f64::min);
        if lo < 0.0 {
            scores.iter_mut().for_each(|s| *s -= lo);
        }
    }
    if let Some(max) = opts.recency {
        let times: Vec<i64> = slices
            .iter()
            .flat_map(|s| s.timestamps())
            .copied()
            .collect();
        let first = times.iter().copied().min().unwrap_or(0);
        let now = query
            .date_ms
            .unwrap_or_else(|| times.iter().copied().max().unwrap_or(0))
            .max(first);
        let span = (now - first).max(1) as f64;
        for (s, t) in scores.iter_mut().zip(&times) {
            *s *= recency_factor((now - t) as f64 / span, max);
        }
    }
    if let Some(w) = opts.importance {
        let imp = cache.importance(tenant, &slices);
        for (s, &i) in scores.iter_mut().zip(imp.iter()) {
            *s *= 1.0 + w * f64::from(i).log10();
        }
    }
    let mut order = rank_desc(&scores);
    if let Some(stage) = opts.time {
        apply_time(&slices, query, stage, &mut scores, &mut order);
    }
    Ranking {
        slices,
        starts,
        scores,
        order,
    }
}

/// The time stage (see [`TimeStage`]): reorders `order` or rescales `scores`.
fn apply_time(
    slices: &[TenantSlice<'_>],
    query: &Query<'_>,
    stage: TimeStage,
    scores: &mut [f64],
    order: &mut Vec<usize>,
) {
    let newest = slices
        .iter()
        .flat_map(|s| s.timestamps())
        .copied()
        .max()
        .unwrap_or(0);
    let Some(anchor) = ms_day(query.date_ms.unwrap_or(newest)) else {
        return;
    };
    let qt = parse_query(query.text, anchor);
    let flags: Vec<bool> = match qt.range {
        Some(r) => {
            let (lo, hi) = r.to_ms();
            slices
                .iter()
                .flat_map(|s| {
                    (0..s.rows).map(move |i| {
                        let t = s.timestamps()[i];
                        (lo..=hi).contains(&t) || s.events(i).any(|(a, b)| a <= hi && b >= lo)
                    })
                })
                .collect()
        }
        None if qt.asks_when && stage.when_boost > 0.0 => slices
            .iter()
            .flat_map(|s| (0..s.rows).map(move |i| s.events(i).next().is_some()))
            .collect(),
        None => return,
    };
    if !flags.iter().any(|&f| f) {
        return;
    }
    let boost = match (qt.range, stage.mode) {
        (Some(_), TimeMode::Front) => {
            // stable: in-range items first, each group in score order
            let (mut front, back): (Vec<usize>, Vec<usize>) =
                order.iter().partition(|&&i| flags[i]);
            front.extend(back);
            *order = front;
            return;
        }
        (Some(_), TimeMode::Boost(b)) => b,
        (None, _) => stage.when_boost,
    };
    let lo = scores
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .min(0.0);
    for (s, &f) in scores.iter_mut().zip(&flags) {
        *s -= lo;
        if f {
            *s *= 1.0 + boost;
        }
    }
    *order = rank_desc(scores);
}

/// `s_i + beta · Σ_j w_ij s_j / Σ_j w_ij` over the semantic adjacency (FragRel, semantic
/// relation); items without neighbours keep their score.
fn semantic_env(scores: &[f64], adj: &[Vec<(u32, f32)>], beta: f64) -> Vec<f64> {
    scores
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let (num, den) = adj.get(i).map_or((0.0, 0.0), |a| {
                a.iter().fold((0.0, 0.0), |(n, d), &(j, w)| {
                    (n + f64::from(w) * scores[j as usize], d + f64::from(w))
                })
            });
            if den > 0.0 {
                s + beta * num / den
            } else {
                s
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::semantic_env;

    #[test]
    fn semantic_environment_is_the_weighted_mean_of_neighbours() {
        let scores = [1.0, 0.0, 0.5, 0.2];
        // 0–1 (w 1.0), 0–2 (w 0.5); item 3 has no neighbours
        let adj = vec![
            vec![(1, 1.0), (2, 0.5)],
            vec![(0, 1.0)],
            vec![(0, 0.5)],
            vec![],
        ];
        let s = semantic_env(&scores, &adj, 0.5);
        let want = [
            1.0 + 0.5 * (0.0 + 0.25) / 1.5,
            0.0 + 0.5 * 1.0,
            0.5 + 0.5 * 1.0,
            0.2,
        ];
        for (a, b) in s.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{s:?}");
        }
    }
}
