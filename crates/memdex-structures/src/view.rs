//! The read side: one tenant's structures over one store version, ready for queries.
//!
//! Only what a live item supports is searchable: a thought counts with its live sources (one
//! whose sources were all deleted is skipped even before the writer has recorded its
//! forgetting), a tree node with its live leaves. Items are named by their index in the
//! tenant's timeline (the ranking's order).
//!
//! * TiM retrieval, two-stage: the query's bucket in every table (plus `probes − 1` next-best
//!   buckets), then exact cosine over the thoughts in those buckets ([`ThoughtIndex::search`];
//!   [`ThoughtIndex::search_exact`] scans all, the reference).
//! * MemTree retrieval, collapsed: every node scored, the best `k` taken
//!   ([`TreeIndex::collapsed`]).
//! * Lifts: per item, the best cosine among the retrieved thoughts that came from it, or the
//!   retrieved nodes whose subtree holds it.

use std::collections::HashMap;
use std::sync::Arc;

use memdex_score::lsh::Lsh;
use memdex_score::{dot, Hit, TopKHeap};
use memdex_store::{Store, Structures};

use crate::sync::thought_lsh;
use crate::thoughts::memory::{Successor, Thought, ThoughtMemory};
use crate::tree::{MemTree, ROOT};
use crate::StructuresError;

/// Live thoughts of a tenant with their buckets and sources (timeline indices).
#[derive(Debug, Clone)]
pub struct ThoughtIndex {
    dim: usize,
    lsh: Arc<Lsh>,
    /// Unit-normalised embeddings, `n × dim`.
    emb: Vec<f32>,
    /// `n × tables`.
    buckets: Vec<u16>,
    pub sources: Vec<Vec<u32>>,
    /// None: a live thought (it lifts its sources); Some: an outdated one, with the items
    /// that state what replaced it.
    pub successors: Vec<Option<Vec<u32>>>,
    /// Per live thought: the live items of the outdated thoughts it replaced (directly or
    /// down a chain of contradictions); empty for the others.
    pub predecessors: Vec<Vec<u32>>,
    pub ids: Vec<u64>,
    pub sentences: Vec<String>,
}

/// What one query retrieved from the thoughts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retrieved {
    /// Per timeline item: the best cosine of a retrieved live thought it is a source of.
    pub lift: Vec<f64>,
    /// Retrieved outdated thoughts: (their items, the items that replaced them).
    pub superseded: Vec<(Vec<u32>, Vec<u32>)>,
}

/// Live tree nodes of a tenant with the items their subtrees hold.
#[derive(Debug, Clone)]
pub struct TreeIndex {
    dim: usize,
    /// Unit-normalised embeddings, `nodes × dim`.
    emb: Vec<f32>,
    /// Per node: its range of `leaves`.
    ranges: Vec<(u32, u32)>,
    /// Timeline index of each leaf in depth-first order (None: its item is not live).
    leaves: Vec<Option<u32>>,
    pub ids: Vec<u64>,
}

/// One tenant's searchable structures.
#[derive(Debug, Clone, Default)]
pub struct TenantView {
    pub thoughts: Option<ThoughtIndex>,
    pub tree: Option<TreeIndex>,
}

fn unit(v: &[f32]) -> Vec<f32> {
    let n = dot(v, v).sqrt();
    if n > 0.0 && n.is_finite() {
        v.iter().map(|x| x / n).collect()
    } else {
        vec![0.0; v.len()]
    }
}

impl TenantView {
    /// Approximate heap bytes (embeddings, buckets, id lists), for cache budgets.
    pub fn heap_bytes(&self) -> usize {
        let lists = |v: &[Vec<u32>]| v.iter().map(|l| 24 + 4 * l.len()).sum::<usize>();
        let thoughts = self.thoughts.as_ref().map_or(0, |t| {
            4 * t.emb.len()
                + 2 * t.buckets.len()
                + lists(&t.sources)
                + lists(&t.predecessors)
                + 8 * t.ids.len()
                + t.sentences.iter().map(|x| 24 + x.len()).sum::<usize>()
                + t.successors
                    .iter()
                    .map(|s| 24 + s.as_ref().map_or(0, |l| 4 * l.len()))
                    .sum::<usize>()
        });
        let tree = self.tree.as_ref().map_or(0, |t| {
            4 * t.emb.len() + 8 * t.ranges.len() + 8 * t.leaves.len() + 8 * t.ids.len()
        });
        thoughts + tree
    }

    /// The tenant's structures in `store`; `timeline` lists its live item ids in timeline
    /// order. Structures the store does not keep are None.
    pub fn build(
        store: &Store,
        tenant: &str,
        timeline: &[u64],
    ) -> Result<TenantView, StructuresError> {
        let Some(aux) = Structures::open(store)? else {
            return Ok(TenantView::default());
        };
        let index: HashMap<u64, u32> = timeline
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i as u32))
            .collect();
        let meta = aux.meta();
        let thoughts = meta.thoughts.as_ref().map(|c| {
            let memory = ThoughtMemory::replay(tenant, &aux.thought_rows(tenant));
            ThoughtIndex::build(&memory, &index, Arc::new(thought_lsh(c, store.dim())))
        });
        let tree = meta.tree.as_ref().map(|_| {
            let tree = MemTree::replay(tenant, &aux.tree_rows(tenant));
            TreeIndex::build(&tree, &index, store.dim())
        });
        Ok(TenantView { thoughts, tree })
    }
}

/// Keeps the `k` best (index, score) pairs, best first (ties: lower index).
fn best_k(scores: impl Iterator<Item = (usize, f32)>, k: usize) -> Vec<(usize, f32)> {
    let mut top = TopKHeap::new(k);
    for (i, s) in scores {
        top.push(Hit {
            score: s,
            block: 0,
            row: i as u32,
        });
    }
    top.into_sorted()
        .into_iter()
        .map(|h| (h.row as usize, h.score))
        .collect()
}

/// Per item: the best positive score among `hits` over the items each hit covers.
fn lift_from(hits: &[(usize, f32)], n: usize, covers: impl Fn(usize) -> Vec<u32>) -> Vec<f64> {
    let mut out = vec![0.0f64; n];
    for &(h, s) in hits {
        let s = f64::from(s.max(0.0));
        for i in covers(h) {
            if let Some(v) = out.get_mut(i as usize) {
                *v = v.max(s);
            }
        }
    }
    out
}

impl ThoughtIndex {
    /// Live thoughts of `memory` that still have a live source (`index`: item id →
    /// timeline), and outdated ones whose replacement has one.
    pub fn build(memory: &ThoughtMemory, index: &HashMap<u64, u32>, lsh: Arc<Lsh>) -> Self {
        let dim = lsh.dim();
        let mut t = ThoughtIndex {
            dim,
            lsh,
            emb: Vec::new(),
            buckets: Vec::new(),
            sources: Vec::new(),
            successors: Vec::new(),
            predecessors: Vec::new(),
            ids: Vec::new(),
            sentences: Vec::new(),
        };
        let replaced = replaced_items(memory, index);
        let tables = t.lsh.params().tables;
        let live_items = |th: &Thought| -> Vec<u32> {
            th.sources
                .iter()
                .filter_map(|s| index.get(s).copied())
                .collect()
        };
        for th in &memory.thoughts {
            let successors = match th.superseded_by {
                _ if th.is_live() => None,
                Some(s) => match successor_items(memory, s, index) {
                    items if items.is_empty() => continue,
                    items => Some(items),
                },
                None => continue,
            };
            let sources = live_items(th);
            if sources.is_empty() || th.embedding.len() != dim || th.buckets.len() != tables {
                continue;
            }
            t.emb.extend(unit(&th.embedding));
            t.buckets.extend(&th.buckets);
            t.sources.push(sources);
            t.successors.push(successors);
            t.predecessors
                .push(replaced.get(&th.id).cloned().unwrap_or_default());
            t.ids.push(th.id);
            t.sentences.push(th.sentence.clone());
        }
        t
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    fn score(&self, q: &[f32], i: usize) -> f32 {
        dot(q, &self.emb[i * self.dim..(i + 1) * self.dim])
    }

    /// TiM's two-stage retrieval: thoughts sharing one of the query's `probes` best buckets
    /// in any table, then the exact top `k` among them by cosine.
    pub fn search(&self, query: &[f32], k: usize, probes: usize) -> Vec<(usize, f32)> {
        if query.len() != self.dim || self.is_empty() {
            return Vec::new();
        }
        let q = unit(query);
        let tables = self.lsh.params().tables;
        let wanted: Vec<Vec<u32>> = (0..tables)
            .map(|t| self.lsh.probes(&q, t, probes))
            .collect();
        let candidates = (0..self.len()).filter(|&i| {
            (0..tables).any(|t| wanted[t].contains(&u32::from(self.buckets[i * tables + t])))
        });
        best_k(candidates.map(|i| (i, self.score(&q, i))), k)
    }

    /// Exact top `k` over every live thought (the reference for [`Self::search`]).
    pub fn search_exact(&self, query: &[f32], k: usize) -> Vec<(usize, f32)> {
        if query.len() != self.dim {
            return Vec::new();
        }
        let q = unit(query);
        best_k((0..self.len()).map(|i| (i, self.score(&q, i))), k)
    }

    /// The `k` best thoughts for `query` (two-stage) as lifts of their live items and
    /// supersessions of their outdated ones (`n`: the tenant's items).
    pub fn retrieve(&self, query: &[f32], k: usize, probes: usize, n: usize) -> Retrieved {
        let hits = self.search(query, k, probes);
        let live: Vec<(usize, f32)> = hits
            .iter()
            .copied()
            .filter(|&(h, _)| self.successors[h].is_none())
            .collect();
        // an outdated thought retrieved puts what replaced it ahead of it; so does a retrieved
        // thought that replaced others
        let mut superseded: Vec<(Vec<u32>, Vec<u32>)> = hits
            .iter()
            .filter_map(|&(h, _)| Some((self.sources[h].clone(), self.successors[h].clone()?)))
            .collect();
        superseded.extend(
            live.iter()
                .filter(|&&(h, _)| !self.predecessors[h].is_empty())
                .map(|&(h, _)| (self.predecessors[h].clone(), self.sources[h].clone())),
        );
        Retrieved {
            lift: lift_from(&live, n, |h| self.sources[h].clone()),
            superseded,
        }
    }
}

/// Per live thought id: the live items of the outdated thoughts whose chain of
/// contradictions ends at it.
fn replaced_items(memory: &ThoughtMemory, index: &HashMap<u64, u32>) -> HashMap<u64, Vec<u32>> {
    let mut out: HashMap<u64, Vec<u32>> = HashMap::new();
    for th in memory.thoughts.iter().filter(|t| !t.is_live()) {
        let Some(end) = th.superseded_by.and_then(|s| live_successor(memory, s)) else {
            continue;
        };
        let items = th.sources.iter().filter_map(|s| index.get(s).copied());
        out.entry(end).or_default().extend(items);
    }
    out
}

/// The live thought at the end of a chain of contradictions (None: the chain ends at a
/// negation or a forgotten thought).
fn live_successor(memory: &ThoughtMemory, first: Successor) -> Option<u64> {
    let mut next = first;
    for _ in 0..=memory.thoughts.len() {
        let Successor::Thought(id) = next else {
            return None;
        };
        let t = memory.thoughts.iter().find(|t| t.id == id)?;
        match (t.is_live(), t.superseded_by) {
            (true, _) => return Some(id),
            (false, Some(s)) => next = s,
            (false, None) => return None,
        }
    }
    None
}

/// The live items that state what replaced a thought: the newest thought down the chain of
/// contradictions (its sources), or the negating item.
fn successor_items(
    memory: &ThoughtMemory,
    first: Successor,
    index: &HashMap<u64, u32>,
) -> Vec<u32> {
    let mut next = first;
    for _ in 0..=memory.thoughts.len() {
        match next {
            Successor::Item(i) => return index.get(&i).copied().into_iter().collect(),
            Successor::Thought(id) => {
                let Some(t) = memory.thoughts.iter().find(|t| t.id == id) else {
                    return Vec::new();
                };
                match (t.is_live(), t.superseded_by) {
                    (true, _) => {
                        return t
                            .sources
                            .iter()
                            .filter_map(|s| index.get(s).copied())
                            .collect()
                    }
                    (false, Some(s)) => next = s,
                    (false, None) => return Vec::new(),
                }
            }
        }
    }
    Vec::new()
}

impl TreeIndex {
    /// Every node of `tree` below the root with a live leaf under it.
    pub fn build(tree: &MemTree, index: &HashMap<u64, u32>, dim: usize) -> Self {
        let (order, ranges) = tree.leaf_ranges();
        let leaves: Vec<Option<u32>> = order.iter().map(|i| index.get(i).copied()).collect();
        let mut t = TreeIndex {
            dim,
            emb: Vec::new(),
            ranges: Vec::new(),
            leaves,
            ids: Vec::new(),
        };
        for n in tree.nodes().filter(|n| n.id != ROOT) {
            let Some(&(a, b)) = ranges.get(&n.id) else {
                continue;
            };
            let live = t.leaves[a..b].iter().any(Option::is_some);
            if !live || n.embedding.len() != dim {
                continue;
            }
            t.emb.extend(unit(&n.embedding));
            t.ranges.push((a as u32, b as u32));
            t.ids.push(n.id);
        }
        t
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Collapsed-tree retrieval: every node scored by cosine, the best `k`.
    pub fn collapsed(&self, query: &[f32], k: usize) -> Vec<(usize, f32)> {
        if query.len() != self.dim {
            return Vec::new();
        }
        let q = unit(query);
        let scores =
            (0..self.len()).map(|i| (i, dot(&q, &self.emb[i * self.dim..(i + 1) * self.dim])));
        best_k(scores, k)
    }

    /// The live timeline items under node `i`.
    pub fn items(&self, i: usize) -> Vec<u32> {
        let (a, b) = self.ranges[i];
        self.leaves[a as usize..b as usize]
            .iter()
            .flatten()
            .copied()
            .collect()
    }

    /// Per timeline item (of `n`): the best cosine of a retrieved node whose subtree holds it.
    pub fn lift(&self, query: &[f32], k: usize, n: usize) -> Vec<f64> {
        let hits = self.collapsed(query, k);
        lift_from(&hits, n, |h| self.items(h))
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
