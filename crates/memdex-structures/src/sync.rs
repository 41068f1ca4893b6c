//! Keeping the structures up to date with the items: [`Maintainer::sync`] runs after every
//! committed append (post-thinking) and delete, on the writer's side.
//!
//! It reads what the store holds: live items with ids from the manifest's watermark
//! (`structures.processed_to`) on, in id order, and the live items of the tenants it touches
//! (deleted sources). Per tenant, in item order:
//! 1. deleted items: their thoughts are retracted or forgotten, their leaves removed;
//! 2. thoughts: every new item's triples are extracted, all their sentences embedded in one
//!    batch, then organised one by one (insert / forget / merge);
//! 3. tree: the k-th new item of every tenant is inserted in round k; the round's changed
//!    aggregate nodes (all tenants) are embedded in one batch before round k+1.
//!
//! What changed is committed as one thoughts segment, one tree segment (the final version of
//! each changed node) and the new watermark, in one manifest version. A failure commits
//! nothing (the watermark stays, so the next sync redoes the work).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use memdex_core::Role;
use memdex_extract::time::ms_day;
use memdex_score::lsh::{Lsh, LshParams};
use memdex_score::text::Analyzer;
use memdex_store::{Store, StoreWriter, Structures, ThoughtOp, ThoughtRow, TreeRow};
use rayon::prelude::*;
use serde::Serialize;

use crate::thoughts::extract::{Polarity, RuleThoughts, ThoughtExtractor, ThoughtInput};
use crate::thoughts::memory::{Candidate, ThoughtMemory};
use crate::tree::{MemTree, TreeParams};
use crate::StructuresError;

/// Embeds texts (passages): row-major vectors, one per text, of the store's dimension.
pub type EmbedTexts<'a> = dyn FnMut(&[&str]) -> Result<Vec<f32>, String> + 'a;

/// States kept between syncs at most (the least recently synced go first).
const CACHED_TENANTS: usize = 64;

/// What one sync did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SyncReport {
    pub items: u64,
    pub thoughts_inserted: u64,
    pub thoughts_merged: u64,
    pub thoughts_forgotten: u64,
    pub thoughts_retracted: u64,
    pub tree_nodes_written: u64,
    pub leaves_removed: u64,
    pub texts_embedded: u64,
    pub seconds: f64,
    /// The manifest version committed (None: nothing to commit).
    pub manifest_version: Option<u64>,
}

/// One tenant's structures.
#[derive(Debug, Clone)]
struct State {
    thoughts: Option<ThoughtMemory>,
    tree: Option<MemTree>,
    /// Sync counter when last touched (eviction order).
    used: u64,
}

/// A new item as the structures read it.
#[derive(Debug, Clone)]
struct NewItem {
    tenant: String,
    id: u64,
    time_ms: i64,
    /// The user's words (None: an assistant-only item, nothing to think about).
    user_text: Option<String>,
    value: String,
    embedding: Vec<f32>,
}

/// The thoughts side's settings resolved to code.
#[derive(Debug, Clone)]
struct ThoughtsSide {
    extractor: Arc<dyn ThoughtExtractor>,
    lsh: Arc<Lsh>,
    merge_cosine: f32,
}

/// Keeps a store's structures in step with its items (the writer's side).
#[derive(Debug)]
pub struct Maintainer {
    thoughts: Option<ThoughtsSide>,
    tree: Option<TreeParams>,
    states: HashMap<String, State>,
    syncs: u64,
    analyzer: Analyzer,
}

/// The LSH of a thoughts configuration over `dim`-dimensional vectors.
pub fn thought_lsh(c: &memdex_store::ThoughtsConfig, dim: usize) -> Lsh {
    Lsh::new(
        dim,
        LshParams {
            buckets: c.buckets as usize,
            tables: c.tables as usize,
            seed: c.seed,
        },
    )
}

impl Maintainer {
    /// The maintainer of `store`'s structures with the built-in extractor (None: the store
    /// keeps none). A store whose thoughts came from another extractor is refused by name.
    pub fn for_store(store: &Store) -> Result<Option<Maintainer>, StructuresError> {
        Self::with_extractor(store, Arc::new(RuleThoughts::default()))
    }

    /// [`Self::for_store`] with the caller's thought extractor (a model extractor); its name
    /// must be the one the store records.
    pub fn with_extractor(
        store: &Store,
        extractor: Arc<dyn ThoughtExtractor>,
    ) -> Result<Option<Maintainer>, StructuresError> {
        let Some(meta) = &store.manifest().structures else {
            return Ok(None);
        };
        let thoughts = match &meta.thoughts {
            None => None,
            Some(c) if c.extractor != extractor.name() => {
                return Err(StructuresError::UnknownExtractor {
                    name: c.extractor.clone(),
                    have: extractor.name().to_string(),
                })
            }
            Some(c) => Some(ThoughtsSide {
                extractor,
                lsh: Arc::new(thought_lsh(c, store.dim())),
                merge_cosine: c.merge_cosine,
            }),
        };
        let tree = meta.tree.as_ref().map(|t| TreeParams {
            theta0: t.theta0,
            lambda: t.lambda,
            content_chars: t.content_chars as usize,
        });
        Ok(Some(Maintainer {
            thoughts,
            tree,
            states: HashMap::new(),
            syncs: 0,
            analyzer: Analyzer::english(),
        }))
    }

    /// Brings the structures up to `store` (the writer's committed view): new items since
    /// the watermark, and deleted sources of the touched tenants and of `deleted_in`.
    pub fn sync(
        &mut self,
        store: &Store,
        writer: &mut StoreWriter,
        embed: &mut EmbedTexts<'_>,
        deleted_in: &[&str],
    ) -> Result<SyncReport, StructuresError> {
        let start = Instant::now();
        self.syncs += 1;
        let Some(meta) = writer.manifest().structures.clone() else {
            return Ok(SyncReport::default());
        };
        let to = store.manifest().next_item_id();
        let items = new_items(store, meta.processed_to, to);
        let mut tenants: Vec<String> = items.iter().map(|i| i.tenant.clone()).collect();
        tenants.extend(deleted_in.iter().map(|t| t.to_string()));
        tenants.sort_unstable();
        tenants.dedup();
        if tenants.is_empty() && to <= meta.processed_to {
            return Ok(SyncReport::default());
        }
        let result = self.run(store, writer, embed, &items, &tenants, to);
        match result {
            Ok(mut report) => {
                report.seconds = start.elapsed().as_secs_f64();
                self.evict();
                Ok(report)
            }
            Err(e) => {
                // the cached states of these tenants ran ahead of the store: read them again
                for t in &tenants {
                    self.states.remove(t);
                }
                Err(e)
            }
        }
    }

    fn run(
        &mut self,
        store: &Store,
        writer: &mut StoreWriter,
        embed: &mut EmbedTexts<'_>,
        items: &[NewItem],
        tenants: &[String],
        to: u64,
    ) -> Result<SyncReport, StructuresError> {
        self.load(store, tenants)?;
        let mut report = SyncReport {
            items: items.len() as u64,
            ..SyncReport::default()
        };
        let mut thought_rows: Vec<ThoughtRow> = Vec::new();
        let mut tree_nodes: BTreeMap<String, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
        let mut reembed: Vec<(String, u64)> = Vec::new();
        for t in tenants {
            let live = live_ids(store, t);
            let Some(state) = self.states.get_mut(t) else {
                continue;
            };
            if let Some(m) = &mut state.thoughts {
                thought_rows.extend(m.drop_dead(&live));
            }
            if let (Some(tree), Some(params)) = (&mut state.tree, &self.tree) {
                let dead: Vec<u64> = tree
                    .nodes()
                    .filter_map(|n| n.item)
                    .filter(|i| !live.contains(i))
                    .collect();
                for item in dead {
                    let ch = tree.remove(item, params, &self.analyzer);
                    report.leaves_removed += 1;
                    let e = tree_nodes.entry(t.clone()).or_default();
                    e.0.extend(ch.touched.iter().chain(&ch.removed));
                    reembed.extend(ch.reembed.iter().map(|&n| (t.clone(), n)));
                }
            }
        }
        if self.thoughts.is_some() {
            thought_rows.extend(self.think(items, embed, &mut report)?);
        }
        if self.tree.is_some() {
            self.grow(items, embed, &mut reembed, &mut tree_nodes, &mut report)?;
        }
        for r in &thought_rows {
            match r.op {
                ThoughtOp::Insert => report.thoughts_inserted += 1,
                ThoughtOp::Merge => report.thoughts_merged += 1,
                ThoughtOp::Forget => report.thoughts_forgotten += 1,
                ThoughtOp::Retract => report.thoughts_retracted += 1,
            }
        }
        let mut tree_rows: Vec<TreeRow> = Vec::new();
        for (t, (ids, _)) in &mut tree_nodes {
            ids.sort_unstable();
            ids.dedup();
            if let Some(tree) = self.states.get(t).and_then(|s| s.tree.as_ref()) {
                tree_rows.extend(ids.iter().map(|&id| tree.row(id)));
            }
        }
        report.tree_nodes_written = tree_rows.len() as u64;
        let processed = writer
            .manifest()
            .structures
            .as_ref()
            .map_or(0, |m| m.processed_to);
        if !thought_rows.is_empty() || !tree_rows.is_empty() || to > processed {
            report.manifest_version =
                Some(writer.commit_structures(&thought_rows, &tree_rows, to)?);
        }
        Ok(report)
    }

    /// Replays the states of `tenants` not cached yet.
    fn load(&mut self, store: &Store, tenants: &[String]) -> Result<(), StructuresError> {
        let missing: Vec<&String> = tenants
            .iter()
            .filter(|t| !self.states.contains_key(*t))
            .collect();
        let aux = if missing.is_empty() {
            None
        } else {
            Structures::open(store)?
        };
        for t in missing {
            let thoughts = self.thoughts.as_ref().map(|_| match &aux {
                Some(a) => ThoughtMemory::replay(t, &a.thought_rows(t)),
                None => ThoughtMemory::new(t),
            });
            let tree = self.tree.as_ref().map(|_| match &aux {
                Some(a) => MemTree::replay(t, &a.tree_rows(t)),
                None => MemTree::new(t),
            });
            self.states.insert(
                t.clone(),
                State {
                    thoughts,
                    tree,
                    used: 0,
                },
            );
        }
        for t in tenants {
            if let Some(s) = self.states.get_mut(t) {
                s.used = self.syncs;
            }
        }
        Ok(())
    }

    /// Post-thinking of `items`: extraction per tenant in order, one embedding batch, then
    /// organisation in order.
    fn think(
        &mut self,
        items: &[NewItem],
        embed: &mut EmbedTexts<'_>,
        report: &mut SyncReport,
    ) -> Result<Vec<ThoughtRow>, StructuresError> {
        let Some(side) = self.thoughts.clone() else {
            return Ok(Vec::new());
        };
        let mut candidates: Vec<(usize, Candidate)> = Vec::new();
        for (i, it) in items.iter().enumerate() {
            let Some(text) = &it.user_text else { continue };
            let Some(m) = self
                .states
                .get_mut(&it.tenant)
                .and_then(|s| s.thoughts.as_mut())
            else {
                continue;
            };
            let input = ThoughtInput {
                text,
                speaker: None,
                anchor: ms_day(it.time_ms),
            };
            for triple in side.extractor.extract(&input, &mut m.context) {
                candidates.push((
                    i,
                    Candidate {
                        triple,
                        embedding: Vec::new(),
                        buckets: Vec::new(),
                        item: it.id,
                        time_ms: it.time_ms,
                    },
                ));
            }
        }
        let wanted: Vec<usize> = (0..candidates.len())
            .filter(|&k| candidates[k].1.triple.polarity == Polarity::Assert)
            .collect();
        let sentences: Vec<String> = wanted
            .iter()
            .map(|&k| candidates[k].1.triple.sentence())
            .collect();
        let vectors = embed_checked(embed, &sentences, side.lsh.dim())?;
        report.texts_embedded += sentences.len() as u64;
        let dim = side.lsh.dim();
        for (n, &k) in wanted.iter().enumerate() {
            let v = vectors[n * dim..(n + 1) * dim].to_vec();
            let tables = side.lsh.params().tables;
            candidates[k].1.buckets = (0..tables).map(|t| side.lsh.bucket(&v, t) as u16).collect();
            candidates[k].1.embedding = v;
        }
        let mut rows = Vec::new();
        for (i, c) in candidates {
            if let Some(m) = self
                .states
                .get_mut(&items[i].tenant)
                .and_then(|s| s.thoughts.as_mut())
            {
                rows.extend(m.organise(c, side.merge_cosine));
            }
        }
        Ok(rows)
    }

    /// Tree insertion in rounds (see the module docs).
    fn grow(
        &mut self,
        items: &[NewItem],
        embed: &mut EmbedTexts<'_>,
        reembed: &mut Vec<(String, u64)>,
        written: &mut BTreeMap<String, (Vec<u64>, Vec<u64>)>,
        report: &mut SyncReport,
    ) -> Result<(), StructuresError> {
        let Some(params) = self.tree else {
            return Ok(());
        };
        let mut queues: BTreeMap<&str, Vec<&NewItem>> = BTreeMap::new();
        for it in items {
            queues.entry(it.tenant.as_str()).or_default().push(it);
        }
        let rounds = queues.values().map(Vec::len).max().unwrap_or(0);
        // removals' re-aggregated nodes are embedded with the first round
        self.embed_nodes(std::mem::take(reembed), embed, report)?;
        for round in 0..rounds {
            let mut work: Vec<(&str, &NewItem, &mut State)> = Vec::new();
            let mut states: Vec<(&String, &mut State)> = self.states.iter_mut().collect();
            states.sort_by(|a, b| a.0.cmp(b.0));
            for (t, s) in states {
                if let Some(it) = queues.get(t.as_str()).and_then(|q| q.get(round)) {
                    work.push((it.tenant.as_str(), it, s));
                }
            }
            let analyzer = &self.analyzer;
            let changed: Vec<(String, crate::tree::Changes)> = work
                .into_par_iter()
                .filter_map(|(t, it, s)| {
                    let tree = s.tree.as_mut()?;
                    let ch = tree.insert(it.id, &it.value, &it.embedding, &params, analyzer);
                    Some((t.to_string(), ch))
                })
                .collect();
            let mut next: Vec<(String, u64)> = Vec::new();
            for (t, ch) in changed {
                written
                    .entry(t.clone())
                    .or_default()
                    .0
                    .extend(ch.touched.iter().copied());
                next.extend(ch.reembed.into_iter().map(|n| (t.clone(), n)));
            }
            self.embed_nodes(next, embed, report)?;
        }
        Ok(())
    }

    /// Embeds the contents of `nodes` in one batch and stores the vectors.
    fn embed_nodes(
        &mut self,
        nodes: Vec<(String, u64)>,
        embed: &mut EmbedTexts<'_>,
        report: &mut SyncReport,
    ) -> Result<(), StructuresError> {
        let mut texts: Vec<String> = Vec::new();
        let mut keep: Vec<(String, u64)> = Vec::new();
        for (t, id) in nodes {
            let tree = self.states.get(&t).and_then(|s| s.tree.as_ref());
            if let Some(n) = tree.and_then(|tr| tr.node(id)) {
                texts.push(n.content.clone());
                keep.push((t, id));
            }
        }
        if texts.is_empty() {
            return Ok(());
        }
        let dim = self
            .states
            .values()
            .find_map(|s| {
                s.tree
                    .as_ref()?
                    .nodes()
                    .find(|n| n.is_leaf())
                    .map(|n| n.embedding.len())
            })
            .unwrap_or(0);
        let vectors = embed_checked(embed, &texts, dim)?;
        report.texts_embedded += texts.len() as u64;
        let dim = vectors.len() / texts.len();
        for (k, (t, id)) in keep.into_iter().enumerate() {
            if let Some(tree) = self.states.get_mut(&t).and_then(|s| s.tree.as_mut()) {
                tree.set_embedding(id, vectors[k * dim..(k + 1) * dim].to_vec());
            }
        }
        Ok(())
    }

    fn evict(&mut self) {
        if self.states.len() <= CACHED_TENANTS {
            return;
        }
        let mut by_use: Vec<(u64, String)> = self
            .states
            .iter()
            .map(|(t, s)| (s.used, t.clone()))
            .collect();
        by_use.sort();
        let excess = self.states.len() - CACHED_TENANTS;
        for (_, t) in by_use.into_iter().take(excess) {
            self.states.remove(&t);
        }
    }
}

/// Embeds `texts` and checks the shape (`dim` 0: any one dimension).
fn embed_checked(
    embed: &mut EmbedTexts<'_>,
    texts: &[String],
    dim: usize,
) -> Result<Vec<f32>, StructuresError> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let v = embed(&refs).map_err(|message| StructuresError::Embed { message })?;
    let ok = if dim == 0 {
        v.len() % texts.len() == 0 && !v.is_empty()
    } else {
        v.len() == texts.len() * dim
    };
    if !ok || v.iter().any(|x| !x.is_finite()) {
        return Err(StructuresError::Embed {
            message: format!(
                "{} values for {} texts of dimension {dim}",
                v.len(),
                texts.len()
            ),
        });
    }
    Ok(v)
}

/// Live items with ids in `from..to`, in id order.
fn new_items(store: &Store, from: u64, to: u64) -> Vec<NewItem> {
    let mut out = Vec::new();
    for (si, seg) in store.segments().iter().enumerate() {
        let m = seg.meta();
        if m.max_item_id < from || m.min_item_id >= to {
            continue;
        }
        for (row, &id) in seg.item_ids().iter().enumerate() {
            // an item's vector is copied only from files whose bytes check out
            if id < from || id >= to || !store.verified_row(si, row) {
                continue;
            }
            let it = seg.item(row);
            out.push(NewItem {
                tenant: it.tenant.to_string(),
                id,
                time_ms: it.timestamp_ms,
                user_text: user_text(it.value, it.role),
                value: it.value.to_string(),
                embedding: seg.embedding(row).to_vec(),
            });
        }
    }
    out.sort_by_key(|i| i.id);
    out
}

/// The user's words of an item: the `user:` lines of a labelled round or session, else the
/// whole value of a user turn (None: only assistant words).
pub fn user_text(value: &str, role: Role) -> Option<String> {
    let labelled = value.starts_with("user: ") || value.starts_with("assistant: ");
    if labelled {
        let user: Vec<&str> = value
            .lines()
            .filter_map(|l| l.strip_prefix("user: "))
            .collect();
        return (!user.is_empty()).then(|| user.join("\n"));
    }
    (role != Role::Assistant).then(|| value.to_string())
}

/// The tenant's live item ids.
pub fn live_ids(store: &Store, tenant: &str) -> HashSet<u64> {
    store
        .tenant_slices(tenant)
        .iter()
        .flat_map(|s| {
            s.segment.item_ids()[s.start..s.start + s.rows]
                .iter()
                .copied()
        })
        .collect()
}
