//! What the options need of a store: the columns a stage reads, refused by name when the
//! store was built without them, and the default pipeline fitted to what a store holds.

use memdex_store::Store;

use crate::options::RankOptions;
use crate::stage::Plan;
use crate::RankError;

/// Refuses stages whose columns `store` was built without, naming the `index` option (each
/// stage of the options' plan says what it needs).
pub fn check_columns(store: &Store, opts: &RankOptions) -> Result<(), RankError> {
    Plan::of(opts).check(store)
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
