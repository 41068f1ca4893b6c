//! What the options need of a store: the columns a stage reads, refused by name when the
//! store was built without them, and the default pipeline fitted to what a store holds.

use memdex_store::Store;

use crate::options::{RankOptions, Retriever};
use crate::RankError;

/// Refuses stages whose columns `store` was built without, naming the `index` option.
pub fn check_columns(store: &Store, opts: &RankOptions) -> Result<(), RankError> {
    let x = &store.manifest().extraction;
    let missing = |stage, what, option| RankError::MissingColumns {
        stage,
        what,
        store: store.dir().display().to_string(),
        option,
    };
    if opts.semantic.is_some() && x.neighbors == 0 {
        return Err(missing(
            "FragRel semantic",
            "semantic neighbours",
            "`memdex index --neighbors M`",
        ));
    }
    if opts.time.is_some() && !x.events {
        return Err(missing(
            "time",
            "event dates",
            "`memdex index --extract-events` (the default)",
        ));
    }
    let (thoughts, tree) = kept(store);
    let wants_thoughts =
        opts.retriever == Retriever::Thoughts || opts.thoughts.is_some_and(|t| t.weight > 0.0);
    if wants_thoughts && !thoughts {
        return Err(missing(
            "TiM thought",
            "thoughts",
            "`memdex index --thoughts`",
        ));
    }
    let wants_tree = opts.retriever == Retriever::Tree || opts.tree.is_some_and(|t| t.weight > 0.0);
    if wants_tree && !tree {
        return Err(missing("MemTree", "a tree", "`memdex index --tree`"));
    }
    Ok(())
}

/// The default pipeline on a store indexed without event dates: the time stage is dropped
/// unless the user asked for it (`time_asked`; then [`check_columns`] names the missing
/// option).
pub fn fit_to_store(opts: &mut RankOptions, time_asked: bool, store: &Store) {
    if !time_asked && !store.manifest().extraction.events && opts.time.is_some() {
        tracing::warn!("store has no event dates; time stage off");
        opts.time = None;
    }
}

/// The structures a store keeps, for [`check_columns`]: (thoughts, tree).
fn kept(store: &Store) -> (bool, bool) {
    store
        .manifest()
        .structures
        .as_ref()
        .map_or((false, false), |s| (s.thoughts.is_some(), s.tree.is_some()))
}
