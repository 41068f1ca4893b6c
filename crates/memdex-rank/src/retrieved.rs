//! What a query retrieves from a tenant's structures (TiM thoughts, MemTree), once per query
//! and shared by the stages that read it: the structures as retrievers (the first stage),
//! their lift and the thoughts' supersession. Per-item lifts come from
//! `memdex_structures::TenantView`, cached per tenant.

use std::sync::Arc;

use memdex_store::{Store, TenantSlice};
use memdex_structures::{Retrieved, TenantView};

use crate::cache::TenantCache;
use crate::options::{RankOptions, Retriever};
use crate::query::Query;
use crate::rows::TenantRows;
use crate::RankError;

/// Whether the thoughts are read (stage on or retriever).
pub(crate) fn thoughts_on(opts: &RankOptions) -> bool {
    opts.retriever == Retriever::Thoughts || opts.thoughts.is_some_and(|t| t.weight > 0.0)
}

pub(crate) fn tree_on(opts: &RankOptions) -> bool {
    opts.retriever == Retriever::Tree || opts.tree.is_some_and(|t| t.weight > 0.0)
}

/// What a query retrieved from the structures the options read.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub thoughts: Option<Retrieved>,
    pub tree: Option<Vec<f64>>,
}

/// What `query` retrieves from `tenant`'s structures (its `rows`; None: the options read
/// none).
pub(crate) fn retrieve(
    (store, tenant, rows): (&Store, &str, &TenantRows<'_>),
    query: &Query<'_>,
    opts: &RankOptions,
    cache: &TenantCache,
) -> Result<Option<Found>, RankError> {
    if !thoughts_on(opts) && !tree_on(opts) {
        return Ok(None);
    }
    let view = view(store, tenant, &rows.slices, cache)?;
    let (n, vector) = (rows.len(), query.vector);
    let thoughts = thoughts_on(opts).then(|| {
        let st = opts.thoughts.unwrap_or_default();
        match &view.thoughts {
            Some(t) => t.retrieve(vector, st.k, st.probes, n),
            None => Retrieved {
                lift: vec![0.0; n],
                superseded: Vec::new(),
            },
        }
    });
    let tree = tree_on(opts).then(|| {
        let st = opts.tree.unwrap_or_default();
        match &view.tree {
            Some(t) => t.lift(vector, st.k, n),
            None => vec![0.0; n],
        }
    });
    Ok(Some(Found { thoughts, tree }))
}

impl Found {
    /// The structures' first stage: items lifted by the retriever's structure rank first, by
    /// their lift (`1 + lift`); the others follow by their dense score (`dense − 1`, below 0).
    pub(crate) fn first_stage(&self, dense: &[f64], opts: &RankOptions) -> Vec<f64> {
        let lift = match opts.retriever {
            Retriever::Thoughts => self.thoughts.as_ref().map(|t| t.lift.as_slice()),
            Retriever::Tree => self.tree.as_deref(),
            _ => None,
        };
        let Some(lift) = lift else {
            return dense.to_vec();
        };
        dense
            .iter()
            .zip(lift)
            .map(|(&d, &l)| if l > 0.0 { 1.0 + l } else { d - 1.0 })
            .collect()
    }
}

/// The tenant's structures for this store view (built once per view and tenant).
fn view(
    store: &Store,
    tenant: &str,
    slices: &[TenantSlice<'_>],
    cache: &TenantCache,
) -> Result<Arc<TenantView>, RankError> {
    cache.structures(tenant, || {
        let timeline: Vec<u64> = slices
            .iter()
            .flat_map(|s| {
                s.segment.item_ids()[s.start..s.start + s.rows]
                    .iter()
                    .copied()
            })
            .collect();
        Ok(TenantView::build(store, tenant, &timeline)?)
    })
}

/// The structures a store keeps: (thoughts, tree).
fn kept(store: &Store) -> (bool, bool) {
    (store.manifest().structures.as_ref())
        .map_or((false, false), |s| (s.thoughts.is_some(), s.tree.is_some()))
}

fn missing(
    store: &Store,
    stage: &'static str,
    what: &'static str,
    option: &'static str,
) -> RankError {
    RankError::MissingColumns {
        stage,
        what,
        store: store.dir().display().to_string(),
        option,
    }
}

/// Refuses a store that keeps no thoughts.
pub(crate) fn needs_thoughts(store: &Store) -> Result<(), RankError> {
    match kept(store).0 {
        true => Ok(()),
        false => Err(missing(
            store,
            "TiM thought",
            "thoughts",
            "`memdex index --thoughts`",
        )),
    }
}

/// Refuses a store that keeps no tree.
pub(crate) fn needs_tree(store: &Store) -> Result<(), RankError> {
    match kept(store).1 {
        true => Ok(()),
        false => Err(missing(store, "MemTree", "a tree", "`memdex index --tree`")),
    }
}
