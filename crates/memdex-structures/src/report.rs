//! What `memdex thoughts` and `memdex tree` print: a tenant's live thoughts, the audit log
//! of every change, the tree's shape. Read from the store alone (no model).
//!
//! A thought whose every source item is deleted is not shown, and its audit lines show
//! `[deleted]` instead of its words (reasons name thoughts and items by id only) (the rows keep them until the store's structure segments
//! are rewritten; see the crate docs).

use std::collections::{HashMap, HashSet};

use memdex_store::{Store, Structures, ThoughtOp};
use serde::Serialize;

use crate::sync::live_ids;
use crate::thoughts::memory::ThoughtMemory;
use crate::tree::{MemTree, TreeStats};
use crate::StructuresError;

/// One live thought.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThoughtLine {
    pub id: u64,
    pub subject: String,
    pub relation: String,
    pub object: String,
    pub sentence: String,
    pub time_ms: i64,
    /// Live source items.
    pub sources: Vec<u64>,
    pub buckets: Vec<u16>,
}

/// One audit-log line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryLine {
    /// Position in the tenant's log.
    pub seq: usize,
    pub op: &'static str,
    pub thought: u64,
    pub other: Option<u64>,
    pub item: Option<u64>,
    pub sentence: String,
    pub time_ms: i64,
    pub sources: Vec<u64>,
    pub reason: String,
}

const DELETED: &str = "[deleted]";

/// Which structure a report reads.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Thoughts,
    Tree,
}

/// The store's structures, if it keeps `kind` and `tenant` has items in it.
fn open(store: &Store, tenant: &str, kind: Kind) -> Result<Structures, StructuresError> {
    let dir = || store.dir().display().to_string();
    let what = match kind {
        Kind::Thoughts => "thoughts",
        Kind::Tree => "tree",
    };
    let aux =
        Structures::open(store)?.ok_or_else(|| StructuresError::NotKept { what, store: dir() })?;
    let meta = aux.meta();
    let kept = match kind {
        Kind::Thoughts => meta.thoughts.is_some(),
        Kind::Tree => meta.tree.is_some(),
    };
    if !kept {
        return Err(StructuresError::NotKept { what, store: dir() });
    }
    if !store.tenants().contains_key(tenant) {
        return Err(StructuresError::NoTenant {
            tenant: tenant.to_string(),
            store: dir(),
        });
    }
    Ok(aux)
}

/// The tenant's live thoughts (those with a live source), oldest first.
pub fn live_thoughts(store: &Store, tenant: &str) -> Result<Vec<ThoughtLine>, StructuresError> {
    let aux = open(store, tenant, Kind::Thoughts)?;
    let memory = ThoughtMemory::replay(tenant, &aux.thought_rows(tenant));
    let live = live_ids(store, tenant);
    Ok(memory
        .live()
        .filter_map(|t| {
            let sources: Vec<u64> = t
                .sources
                .iter()
                .copied()
                .filter(|s| live.contains(s))
                .collect();
            (!sources.is_empty()).then(|| ThoughtLine {
                id: t.id,
                subject: t.subject.clone(),
                relation: t.relation.clone(),
                object: t.object.clone(),
                sentence: t.sentence.clone(),
                time_ms: t.time_ms,
                sources,
                buckets: t.buckets.clone(),
            })
        })
        .collect())
}

/// Every change to the tenant's thoughts, in order (the audit log).
pub fn history(store: &Store, tenant: &str) -> Result<Vec<HistoryLine>, StructuresError> {
    let aux = open(store, tenant, Kind::Thoughts)?;
    let rows = aux.thought_rows(tenant);
    let live = live_ids(store, tenant);
    let mut ever: HashMap<u64, Vec<u64>> = HashMap::new();
    for r in rows
        .iter()
        .filter(|r| matches!(r.op, ThoughtOp::Insert | ThoughtOp::Merge))
    {
        ever.entry(r.thought).or_default().extend(&r.sources);
    }
    let gone: HashSet<u64> = ever
        .iter()
        .filter(|(_, s)| !s.iter().any(|i| live.contains(i)))
        .map(|(&t, _)| t)
        .collect();
    Ok(rows
        .iter()
        .enumerate()
        .map(|(seq, r)| {
            let hidden = gone.contains(&r.thought);
            HistoryLine {
                seq,
                op: r.op.as_str(),
                thought: r.thought,
                other: r.other,
                item: r.item,
                sentence: if hidden {
                    DELETED.into()
                } else {
                    r.sentence.clone()
                },
                time_ms: r.time_ms,
                sources: r.sources.clone(),
                reason: r.reason.clone(),
            }
        })
        .collect())
}

/// One node for display.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeLine {
    pub id: u64,
    pub depth: u32,
    pub children: usize,
    pub item: Option<u64>,
    pub content: String,
}

/// The tenant's tree: its statistics and its nodes down to `max_depth`, depth-first.
pub fn tree(
    store: &Store,
    tenant: &str,
    max_depth: u32,
) -> Result<(TreeStats, Vec<NodeLine>), StructuresError> {
    let aux = open(store, tenant, Kind::Tree)?;
    let tree = MemTree::replay(tenant, &aux.tree_rows(tenant));
    let live = live_ids(store, tenant);
    let mut lines = Vec::new();
    let mut stack: Vec<u64> = tree.root().children.iter().rev().copied().collect();
    while let Some(id) = stack.pop() {
        let Some(n) = tree.node(id) else { continue };
        if n.depth > max_depth {
            continue;
        }
        let hidden = n.item.is_some_and(|i| !live.contains(&i));
        lines.push(NodeLine {
            id,
            depth: n.depth,
            children: n.children.len(),
            item: n.item,
            content: if hidden {
                DELETED.into()
            } else {
                n.content.clone()
            },
        });
        stack.extend(n.children.iter().rev());
    }
    Ok((tree.stats(), lines))
}
