//! The structures in the ranking: TiM thoughts and MemTree as retrievers (first stage) and as
//! stages (per-item lifts come from `memdex_structures::TenantView`, cached per tenant):
//! * lift: the items the best thoughts came from (or the best nodes hold) get
//!   `weight × cosine` added, after FragRel;
//! * supersession (thoughts): when an outdated thought is among the best — forgotten because
//!   a newer value contradicted it, or negated — or the thought that replaced it is, the
//!   items stating what replaced it are put just ahead of the outdated one's best item, after the signals and before the time stage (which
//!   still moves items of an asked-for period ahead). TiM forgets contradicted thoughts; the
//!   items stay, and this keeps the older statement from outranking the newer one.

use std::sync::Arc;

use memdex_store::{Store, TenantSlice};
use memdex_structures::{Retrieved, TenantView};

use crate::cache::TenantCache;
use crate::options::{RankOptions, Retriever};
use crate::query::Query;
use crate::RankError;

/// Whether the thoughts are read (stage on or retriever).
fn thoughts_on(opts: &RankOptions) -> bool {
    opts.retriever == Retriever::Thoughts || opts.thoughts.is_some_and(|t| t.weight > 0.0)
}

fn tree_on(opts: &RankOptions) -> bool {
    opts.retriever == Retriever::Tree || opts.tree.is_some_and(|t| t.weight > 0.0)
}

/// What a query retrieved from the structures the options read.
#[derive(Debug, Default)]
pub(crate) struct Found {
    thoughts: Option<Retrieved>,
    tree: Option<Vec<f64>>,
}

/// Retrieves from the tenant's structures once per query (None: the options read none).
pub(crate) fn retrieve(
    store: &Store,
    tenant: &str,
    slices: &[TenantSlice<'_>],
    query: &Query<'_>,
    opts: &RankOptions,
    cache: &TenantCache,
) -> Result<Option<Found>, RankError> {
    if !thoughts_on(opts) && !tree_on(opts) {
        return Ok(None);
    }
    let view = view(store, tenant, slices, cache)?;
    let n: usize = slices.iter().map(|s| s.rows).sum();
    let thoughts = thoughts_on(opts).then(|| {
        let st = opts.thoughts.unwrap_or_default();
        match &view.thoughts {
            Some(t) => t.retrieve(query.vector, st.k, st.probes, n),
            None => Retrieved {
                lift: vec![0.0; n],
                superseded: Vec::new(),
            },
        }
    });
    let tree = tree_on(opts).then(|| {
        let st = opts.tree.unwrap_or_default();
        match &view.tree {
            Some(t) => t.lift(query.vector, st.k, n),
            None => vec![0.0; n],
        }
    });
    Ok(Some(Found { thoughts, tree }))
}

/// The structures' first stage: items lifted by the retriever's structure rank first, by
/// their lift (`1 + lift`); the others follow by their dense score (`dense − 1`, below 0).
pub(crate) fn first_stage(found: &Found, dense: &[f64], opts: &RankOptions) -> Vec<f64> {
    let lift = match opts.retriever {
        Retriever::Thoughts => found.thoughts.as_ref().map(|t| t.lift.as_slice()),
        Retriever::Tree => found.tree.as_deref(),
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

/// The lift stages: `score + weight × lift` for each structure whose stage is on.
pub(crate) fn lift(found: &Found, opts: &RankOptions, scores: &mut [f64]) {
    let stages = [
        (
            opts.thoughts.map(|t| t.weight),
            found.thoughts.as_ref().map(|t| t.lift.as_slice()),
        ),
        (opts.tree.map(|t| t.weight), found.tree.as_deref()),
    ];
    for (weight, lift) in stages {
        if let (Some(w), Some(lift)) = (weight.filter(|&w| w > 0.0), lift) {
            for (s, l) in scores.iter_mut().zip(lift) {
                *s += w * l;
            }
        }
    }
}

/// Supersession (see the module docs): each replacing item scores just above the best item
/// of the outdated thought it replaces, unless it already scores higher.
pub(crate) fn supersede(found: &Found, scores: &mut [f64]) {
    let Some(t) = &found.thoughts else { return };
    for (old, new) in &t.superseded {
        let best = old
            .iter()
            .filter_map(|&i| scores.get(i as usize).copied())
            .fold(f64::NEG_INFINITY, f64::max);
        if !best.is_finite() {
            continue;
        }
        let above = best + (best.abs() * 1e-9).max(1e-9);
        for &i in new {
            if let Some(s) = scores.get_mut(i as usize) {
                if *s <= best {
                    *s = above;
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supersession_puts_the_replacement_just_ahead_and_never_lowers_it() {
        let found = Found {
            thoughts: Some(Retrieved {
                lift: vec![0.0; 4],
                superseded: vec![(vec![0, 1], vec![3])],
            }),
            tree: None,
        };
        let mut scores = vec![0.9, 0.5, 0.7, 0.1];
        supersede(&found, &mut scores);
        assert!(scores[3] > 0.9 && scores[3] < 0.9 + 1e-6, "{scores:?}");
        assert_eq!(&scores[..3], &[0.9, 0.5, 0.7]);
        let mut higher = vec![0.2, 0.1, 0.0, 0.8];
        supersede(&found, &mut higher);
        assert_eq!(higher, [0.2, 0.1, 0.0, 0.8], "already ahead: unchanged");
    }

    #[test]
    fn lifts_add_weighted_and_the_retriever_ranks_lifted_items_first() {
        let found = Found {
            thoughts: Some(Retrieved {
                lift: vec![0.0, 0.6, 0.0],
                superseded: Vec::new(),
            }),
            tree: Some(vec![0.5, 0.0, 0.0]),
        };
        let opts = RankOptions {
            thoughts: Some(crate::ThoughtStage::default()),
            tree: Some(crate::TreeStage { weight: 1.0, k: 5 }),
            ..RankOptions::dense()
        };
        let mut s = vec![0.1, 0.1, 0.1];
        lift(&found, &opts, &mut s);
        assert_eq!(s, [0.1 + 0.5, 0.1 + 0.5 * 0.6, 0.1]);
        let retr = RankOptions {
            retriever: Retriever::Thoughts,
            ..RankOptions::dense()
        };
        let first = first_stage(&found, &[0.9, 0.2, 0.3], &retr);
        assert_eq!(first, [0.9 - 1.0, 1.6, 0.3 - 1.0]);
    }
}
