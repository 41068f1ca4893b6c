//! MemTree: one tenant's online tree of items.
//!
//! Insertion (the paper's procedure): from the root, compare the new item's embedding with
//! the current node's children; if the best child's cosine is at least `θ(d) = θ0 · e^{λd}`
//! (d = the current node's depth, so the root's children need θ0 and every level deeper a
//! closer match), descend into it — and if it is a leaf, the leaf becomes a parent of itself
//! and the new item (a new aggregate node in its place); if no child passes, the item becomes
//! a new leaf of the current node. Every aggregate node on the path then gets its content
//! re-aggregated from its children ([`aggregate`], no LLM) and needs a new embedding of that
//! content, which the caller computes for all of them (and for every tenant of a sync) in one
//! batch before the next insertion. Leaves keep the item's own embedding.
//!
//! Removal (a deleted item): the leaf goes, an aggregate node left without children goes,
//! and the remaining ancestors are re-aggregated (the tree is not restructured).
//!
//! The tree is the replay of its node versions ([`TreeRow`]): a rebuild from the same items
//! in the same order gives the same tree.

pub mod aggregate;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use memdex_score::text::Analyzer;
use memdex_store::TreeRow;
use serde::Serialize;

use crate::thoughts::memory::cosine;
pub use aggregate::{aggregate, clip};

/// The root's id (never stored: it has no content and no embedding).
pub const ROOT: u64 = 0;

/// One node.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: u64,
    pub parent: u64,
    pub depth: u32,
    /// The item a leaf holds (None: an aggregate node).
    pub item: Option<u64>,
    pub content: String,
    pub embedding: Vec<f32>,
    /// Ascending ids.
    pub children: Vec<u64>,
}

impl Node {
    pub fn is_leaf(&self) -> bool {
        self.item.is_some()
    }
}

/// Insertion settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeParams {
    pub theta0: f32,
    pub lambda: f32,
    /// Bound on an aggregate node's content (and a leaf's stored text), characters.
    pub content_chars: usize,
}

impl TreeParams {
    /// `θ(d) = θ0 · e^{λd}`.
    pub fn theta(&self, depth: u32) -> f32 {
        self.theta0 * (self.lambda * depth as f32).exp()
    }
}

/// One tenant's tree.
#[derive(Debug, Clone)]
pub struct MemTree {
    tenant: String,
    nodes: BTreeMap<u64, Node>,
    leaf_of: HashMap<u64, u64>,
    next_id: u64,
}

/// What an insertion or removal changed: nodes to store again (in id order) and aggregate
/// nodes whose content changed and need a new embedding (deepest first).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    pub touched: BTreeSet<u64>,
    pub removed: BTreeSet<u64>,
    pub reembed: Vec<u64>,
}

impl MemTree {
    pub fn new(tenant: &str) -> Self {
        let root = Node {
            id: ROOT,
            parent: ROOT,
            depth: 0,
            item: None,
            content: String::new(),
            embedding: Vec::new(),
            children: Vec::new(),
        };
        Self {
            tenant: tenant.to_string(),
            nodes: BTreeMap::from([(ROOT, root)]),
            leaf_of: HashMap::new(),
            next_id: 1,
        }
    }

    /// The tree after `rows` (the tenant's node versions, oldest first).
    pub fn replay(tenant: &str, rows: &[TreeRow]) -> Self {
        let mut latest: BTreeMap<u64, &TreeRow> = BTreeMap::new();
        let mut next_id = 1;
        for r in rows.iter().filter(|r| r.node != ROOT) {
            next_id = next_id.max(r.node + 1);
            latest.insert(r.node, r);
        }
        let mut t = Self::new(tenant);
        t.next_id = next_id;
        for r in latest.values().filter(|r| !r.removed) {
            t.nodes.insert(
                r.node,
                Node {
                    id: r.node,
                    parent: r.parent,
                    depth: r.depth,
                    item: r.item,
                    content: r.content.clone(),
                    embedding: r.embedding.clone(),
                    children: Vec::new(),
                },
            );
            if let Some(item) = r.item {
                t.leaf_of.insert(item, r.node);
            }
        }
        let links: Vec<(u64, u64)> = t
            .nodes
            .values()
            .filter(|n| n.id != ROOT)
            .map(|n| (n.parent, n.id))
            .collect();
        for (parent, child) in links {
            if let Some(p) = t.nodes.get_mut(&parent) {
                p.children.push(child);
            }
        }
        t
    }

    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values().filter(|n| n.id != ROOT)
    }

    pub fn node(&self, id: u64) -> Option<&Node> {
        self.nodes.get(&id)
    }

    pub fn root(&self) -> &Node {
        &self.nodes[&ROOT]
    }

    /// The leaf holding `item`.
    pub fn leaf_of(&self, item: u64) -> Option<u64> {
        self.leaf_of.get(&item).copied()
    }

    fn new_node(&mut self, parent: u64, depth: u32, item: Option<u64>) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.nodes.insert(
            id,
            Node {
                id,
                parent,
                depth,
                item,
                content: String::new(),
                embedding: Vec::new(),
                children: Vec::new(),
            },
        );
        if let Some(p) = self.nodes.get_mut(&parent) {
            p.children.push(id);
        }
        id
    }

    /// Inserts `item` (its text and embedding) and re-aggregates the path; the aggregate
    /// nodes in `Changes::reembed` then need [`Self::set_embedding`].
    pub fn insert(
        &mut self,
        item: u64,
        text: &str,
        embedding: &[f32],
        params: &TreeParams,
        analyzer: &Analyzer,
    ) -> Changes {
        let mut changes = Changes::default();
        let mut v = ROOT;
        let parent = loop {
            let node = &self.nodes[&v];
            let best = node
                .children
                .iter()
                .map(|&c| (c, cosine(embedding, &self.nodes[&c].embedding)))
                .fold(None, |best: Option<(u64, f32)>, (c, s)| match best {
                    Some((_, b)) if b >= s => best,
                    _ => Some((c, s)),
                });
            match best {
                Some((c, s)) if s >= params.theta(node.depth) => {
                    if self.nodes[&c].is_leaf() {
                        break self.expand_leaf(c, &mut changes);
                    }
                    v = c;
                }
                _ => break v,
            }
        };
        let depth = self.nodes[&parent].depth + 1;
        let leaf = self.new_node(parent, depth, Some(item));
        if let Some(n) = self.nodes.get_mut(&leaf) {
            n.content = clip(text, params.content_chars);
            n.embedding = embedding.to_vec();
        }
        self.leaf_of.insert(item, leaf);
        changes.touched.insert(leaf);
        self.reaggregate_from(parent, params, analyzer, &mut changes);
        changes
    }

    /// The leaf `c` becomes a child of a new aggregate node in its place; returns that node.
    fn expand_leaf(&mut self, c: u64, changes: &mut Changes) -> u64 {
        let (parent, depth) = {
            let n = &self.nodes[&c];
            (n.parent, n.depth)
        };
        if let Some(p) = self.nodes.get_mut(&parent) {
            p.children.retain(|&x| x != c);
        }
        let mid = self.new_node(parent, depth, None);
        if let Some(n) = self.nodes.get_mut(&c) {
            n.parent = mid;
            n.depth = depth + 1;
        }
        if let Some(m) = self.nodes.get_mut(&mid) {
            m.children.push(c);
        }
        changes.touched.insert(c);
        mid
    }

    /// Re-aggregates `from` and its ancestors (not the root), recording them.
    fn reaggregate_from(
        &mut self,
        from: u64,
        params: &TreeParams,
        analyzer: &Analyzer,
        changes: &mut Changes,
    ) {
        let mut v = from;
        while v != ROOT {
            let content = {
                let kids: Vec<&str> = self.nodes[&v]
                    .children
                    .iter()
                    .map(|c| self.nodes[c].content.as_str())
                    .collect();
                aggregate(&kids, params.content_chars, analyzer)
            };
            let Some(n) = self.nodes.get_mut(&v) else {
                break;
            };
            // Same content: its embedding stands, and the ancestors' inputs are unchanged
            // (a node's content is a function of its children's), so the path stops here.
            // A node still without an embedding (new) is embedded whatever its content.
            if n.content == content && !n.embedding.is_empty() {
                break;
            }
            n.content = content;
            changes.touched.insert(v);
            if !changes.reembed.contains(&v) {
                changes.reembed.push(v);
            }
            v = n.parent;
        }
    }

    /// Sets an aggregate node's new embedding.
    pub fn set_embedding(&mut self, node: u64, embedding: Vec<f32>) {
        if let Some(n) = self.nodes.get_mut(&node) {
            n.embedding = embedding;
        }
    }

    /// Removes `item`'s leaf (see the module docs); the re-aggregated ancestors need
    /// embeddings.
    pub fn remove(&mut self, item: u64, params: &TreeParams, analyzer: &Analyzer) -> Changes {
        let mut changes = Changes::default();
        let Some(leaf) = self.leaf_of.remove(&item) else {
            return changes;
        };
        let mut v = leaf;
        let mut parent = ROOT;
        while v != ROOT {
            let Some(n) = self.nodes.remove(&v) else {
                break;
            };
            changes.removed.insert(v);
            changes.touched.remove(&v);
            parent = n.parent;
            let Some(p) = self.nodes.get_mut(&parent) else {
                break;
            };
            p.children.retain(|&x| x != v);
            if !p.children.is_empty() || parent == ROOT {
                break;
            }
            v = parent;
        }
        changes.reembed.retain(|id| !changes.removed.contains(id));
        self.reaggregate_from(parent, params, analyzer, &mut changes);
        changes
    }

    /// The stored form of node `id` (a removal row when it is gone).
    pub fn row(&self, id: u64) -> TreeRow {
        match self.nodes.get(&id) {
            Some(n) => TreeRow {
                tenant: self.tenant.clone(),
                node: id,
                removed: false,
                parent: n.parent,
                depth: n.depth,
                item: n.item,
                content: n.content.clone(),
                embedding: n.embedding.clone(),
            },
            None => TreeRow {
                tenant: self.tenant.clone(),
                node: id,
                removed: true,
                parent: ROOT,
                depth: 0,
                item: None,
                content: String::new(),
                embedding: Vec::new(),
            },
        }
    }

    /// Items held by the leaves, in depth-first order (children by id), and for every node
    /// the range of that order its subtree covers.
    pub fn leaf_ranges(&self) -> (Vec<u64>, HashMap<u64, (usize, usize)>) {
        let mut order = Vec::new();
        let mut ranges = HashMap::new();
        let mut stack: Vec<(u64, bool)> = vec![(ROOT, false)];
        let mut starts: HashMap<u64, usize> = HashMap::new();
        while let Some((id, done)) = stack.pop() {
            let Some(n) = self.nodes.get(&id) else {
                continue;
            };
            if done {
                ranges.insert(id, (starts[&id], order.len()));
                continue;
            }
            starts.insert(id, order.len());
            if let Some(item) = n.item {
                order.push(item);
            }
            stack.push((id, true));
            for &c in n.children.iter().rev() {
                stack.push((c, false));
            }
        }
        (order, ranges)
    }

    /// Shape and size (the paper's Table 5).
    pub fn stats(&self) -> TreeStats {
        let nodes: Vec<&Node> = self.nodes().collect();
        let leaves = nodes.iter().filter(|n| n.is_leaf()).count();
        let branching = self
            .nodes
            .values()
            .filter(|n| !n.children.is_empty())
            .count();
        let mut per_depth: BTreeMap<u32, usize> = BTreeMap::new();
        for n in &nodes {
            *per_depth.entry(n.depth).or_default() += 1;
        }
        let depth_sum: u64 = nodes.iter().map(|n| u64::from(n.depth)).sum();
        TreeStats {
            nodes: nodes.len() + 1,
            leaves,
            branching_nodes: branching,
            max_depth: nodes.iter().map(|n| n.depth).max().unwrap_or(0),
            mean_depth: if nodes.is_empty() {
                0.0
            } else {
                depth_sum as f64 / nodes.len() as f64
            },
            branching_factor: if branching == 0 {
                0.0
            } else {
                nodes.len() as f64 / branching as f64
            },
            root_children: self.root().children.len(),
            per_depth: per_depth.into_iter().collect(),
        }
    }
}

/// A tree's shape, as the MemTree paper reports it (Table 5, Figure 7).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreeStats {
    /// Nodes, the root included.
    pub nodes: usize,
    pub leaves: usize,
    /// Nodes with children, the root included.
    pub branching_nodes: usize,
    pub max_depth: u32,
    /// Mean depth of the nodes below the root.
    pub mean_depth: f64,
    /// Edges per branching node.
    pub branching_factor: f64,
    pub root_children: usize,
    /// (depth, nodes at that depth).
    pub per_depth: Vec<(u32, usize)>,
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
