//! The ranking's stages, one file each, behind one trait (tantivy's Query → Weight → Scorer,
//! applied to stages): [`Stage`] says what a stage is called, which columns it needs, how it
//! changes a tenant's scores, how it reorders the ranked rows, and what memdex's fused
//! kernels can run of it. [`Plan`] is the ordered list of stages a [`RankOptions`] turns on;
//! the CPU pipeline ([`crate::rank`]), the column check, the fused kernels' parameters and
//! the stages the kernel path runs after the kernel all walk it.
//!
//! Adding a stage: one file here with a type implementing [`Stage`] (and an `of(opts)` that
//! says when it is on), one line in [`Plan::of`], one field of [`RankOptions`] (and of
//! [`crate::Stages`] for the user's override). Its scores appear in `explain` under its name.

mod first;
mod fragrel;
mod fused;
mod lift;
mod plan;
mod signals;
mod supersede;
pub(crate) mod time;
pub(crate) mod update;
mod value;

use std::cell::OnceCell;

use memdex_store::Store;

use crate::cache::TenantCache;
use crate::options::RankOptions;
use crate::query::Query;
use crate::retrieved::Found;
use crate::rows::TenantRows;
use crate::RankError;

pub use fused::FusedParams;
pub use plan::Plan;

/// One stage of the ranking pipeline. A stage is built from the options it reads
/// (`of(opts)`) and holds its own settings; every method has a default that does nothing.
pub(crate) trait Stage: Send + Sync + std::fmt::Debug {
    /// The stage's name: its key in `explain` and its name in error text.
    fn name(&self) -> &'static str;

    /// Refuses a store built without the columns this stage reads, naming the `index` option.
    fn needs(&self, _store: &Store) -> Result<(), RankError> {
        Ok(())
    }

    /// Changes the tenant's scores (one per live row, timeline order; the first stage sets
    /// them). Returns whether `explain` shows the scores after it under the stage's name
    /// (false for a stage whose rescaling is part of a reordering).
    fn score(
        &self,
        _at: &At<'_, '_>,
        _scores: &mut Vec<f64>,
        _parts: &mut Parts,
    ) -> Result<bool, RankError> {
        Ok(false)
    }

    /// Reorders `order` (timeline indices, best first; `score(i)` is index `i`'s final score).
    /// Returns what it did for `explain` (None: the stage does not reorder).
    fn reorder(
        &self,
        _at: &At<'_, '_>,
        _score: &dyn Fn(usize) -> f64,
        _order: &mut Vec<usize>,
    ) -> Option<Note> {
        None
    }

    /// What memdex's fused kernels run of this stage; a `Kernel` stage sets its part of
    /// `params`.
    fn fused(&self, _params: &mut FusedParams) -> Fused {
        Fused::HostOnly(self.name())
    }
}

/// What the fused kernels run of a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fused {
    /// The kernel runs it (with the parameters the stage set).
    Kernel,
    /// The host runs its reorder on the kernel's best `reads` hits (or fewer).
    AfterKernel { reads: usize },
    /// Only the CPU pipeline runs it (what it is, for the message): a batch with it is
    /// ranked there.
    HostOnly(&'static str),
}

/// What a reordering stage did, for `explain`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Note {
    /// The time stage: which rows it prefers and whether the query named a range (else a
    /// "when" question); None when not explaining or it preferred none.
    Time(Option<(Vec<bool>, bool)>),
    /// The update stage's moves.
    Update(Vec<crate::UpdateMove>),
}

/// What a stage reads of one query over one tenant.
pub(crate) struct At<'a, 's> {
    pub store: &'s Store,
    pub tenant: &'a str,
    pub rows: &'a TenantRows<'s>,
    pub query: &'a Query<'a>,
    pub opts: &'a RankOptions,
    pub cache: &'a TenantCache,
    /// Dense scores, one per row (empty: the retriever reads none).
    pub dense: &'a [f64],
    /// Whether the ranking is being explained (reorders then say what they did).
    pub explain: bool,
    found: OnceCell<Option<Found>>,
}

impl std::fmt::Debug for At<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("At")
            .field("tenant", &self.tenant)
            .field("rows", &self.rows.len())
            .field("query", &self.query.text)
            .finish_non_exhaustive()
    }
}

impl<'a, 's> At<'a, 's> {
    pub(crate) fn new(
        store: &'s Store,
        tenant: &'a str,
        rows: &'a TenantRows<'s>,
        query: &'a Query<'a>,
        opts: &'a RankOptions,
        cache: &'a TenantCache,
    ) -> At<'a, 's> {
        At {
            store,
            tenant,
            rows,
            query,
            opts,
            cache,
            dense: &[],
            explain: false,
            found: OnceCell::new(),
        }
    }

    /// What the query retrieved from the tenant's structures (None: the options read none),
    /// retrieved once.
    pub(crate) fn found(&self) -> Result<Option<&Found>, RankError> {
        if let Some(f) = self.found.get() {
            return Ok(f.as_ref());
        }
        let tenant = (self.store, self.tenant, self.rows);
        let f = crate::retrieved::retrieve(tenant, self.query, self.opts, self.cache)?;
        Ok(self.found.get_or_init(|| f).as_ref())
    }
}

/// Where the first stage keeps the signals it fused (dense, BM25, the expansion) when the
/// ranking is explained.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    /// None: not explaining.
    kept: Option<Vec<(&'static str, Vec<f64>)>>,
}

impl Parts {
    pub(crate) fn new(explain: bool) -> Parts {
        Parts {
            kept: explain.then(Vec::new),
        }
    }

    /// Keeps `name`'s scores (computed only when explaining; an empty one is not kept).
    pub(crate) fn keep(&mut self, name: &'static str, scores: impl FnOnce() -> Vec<f64>) {
        if let Some(kept) = self.kept.as_mut() {
            let v = scores();
            if !v.is_empty() {
                kept.push((name, v));
            }
        }
    }

    /// What was kept, in order.
    pub(crate) fn take(&mut self) -> Vec<(&'static str, Vec<f64>)> {
        self.kept.take().unwrap_or_default()
    }
}
