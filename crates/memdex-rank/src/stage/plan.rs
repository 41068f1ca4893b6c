//! The ordered stages one [`RankOptions`] turns on, and the walks over them: the column
//! check, the CPU pipeline's two passes (scores, then reorders), the fused kernels'
//! parameters and the stages the host runs after the kernel.

use memdex_store::Store;

use super::first::First;
use super::fragrel::FragRel;
use super::lift::Lift;
use super::signals::Signals;
use super::supersede::Supersede;
use super::time::Time;
use super::update::Update;
use super::{At, Fused, FusedParams, Parts, Stage};
use crate::explain::Trace;
use crate::options::RankOptions;
use crate::rows::TenantRows;
use crate::RankError;

/// The stages of one ranking, in the order they run. Score stages change the scores in plan
/// order; then the rows are ordered by score, and reordering stages run in plan order.
#[derive(Debug)]
pub struct Plan {
    stages: Vec<Box<dyn Stage>>,
}

fn boxed<S: Stage + 'static>(stage: Option<S>) -> Option<Box<dyn Stage>> {
    stage.map(|s| Box::new(s) as Box<dyn Stage>)
}

impl Plan {
    /// The stages `opts` turn on. One line per stage, in the order they run.
    pub fn of(opts: &RankOptions) -> Plan {
        let stages = [
            boxed(Some(First::of(opts))),
            boxed(FragRel::of(opts)),
            boxed(Lift::of(opts)),
            boxed(Signals::of(opts)),
            boxed(Supersede::of(opts)),
            boxed(Time::of(opts)),
            boxed(Update::of(opts)),
        ];
        Plan {
            stages: stages.into_iter().flatten().collect(),
        }
    }

    /// The stages' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.stages.iter().map(|s| s.name()).collect()
    }

    /// Refuses a store built without a column some stage reads.
    pub fn check(&self, store: &Store) -> Result<(), RankError> {
        self.stages.iter().try_for_each(|s| s.needs(store))
    }

    /// `tenant`'s live rows in `store`, timeline order, once the store is known to hold what
    /// the stages read (refused: a missing column, an unknown tenant).
    pub(crate) fn rows<'s>(
        &self,
        store: &'s Store,
        tenant: &str,
    ) -> Result<TenantRows<'s>, RankError> {
        self.check(store)?;
        let slices = store.tenant_slices(tenant);
        if slices.is_empty() {
            return Err(RankError::no_rows(store, tenant));
        }
        Ok(TenantRows::new(slices))
    }

    /// The CPU pipeline over one query: every stage's scores in plan order, the order by
    /// score, every stage's reorder in plan order. With a trace, every step is kept.
    pub(crate) fn run(
        &self,
        at: &At<'_, '_>,
        mut trace: Option<&mut Trace>,
    ) -> Result<(Vec<f64>, Vec<usize>), RankError> {
        let mut scores = Vec::new();
        for stage in &self.stages {
            let mut parts = Parts::new(trace.is_some());
            let shown = stage.score(at, &mut scores, &mut parts)?;
            if let Some(t) = trace.as_deref_mut() {
                parts
                    .take()
                    .into_iter()
                    .for_each(|(name, v)| t.keep(name, v));
                if shown {
                    t.keep(stage.name(), scores.clone());
                }
            }
        }
        let mut order = memdex_score::fusion::rank_desc(&scores);
        if let Some(t) = trace.as_deref_mut() {
            t.score_order = order.clone();
        }
        let score = |i: usize| scores[i];
        for stage in &self.stages {
            let note = stage.reorder(at, &score, &mut order);
            if let (Some(note), Some(t)) = (note, trace.as_deref_mut()) {
                t.reordered(stage.name(), order.clone(), note);
            }
        }
        Ok((scores, order))
    }

    /// The fused kernels' parameters for these stages, or the first stage only the CPU
    /// pipeline runs (then rank there).
    pub fn fused(&self) -> Result<FusedParams, RankError> {
        let mut params = FusedParams::none();
        for stage in &self.stages {
            if let Fused::HostOnly(stage) = stage.fused(&mut params) {
                return Err(RankError::NotFused { stage });
            }
        }
        Ok(params)
    }

    /// How many hits to ask the kernel for when `k` are wanted: the most any stage after the
    /// kernel reads.
    pub fn depth(&self, k: usize) -> usize {
        let mut scratch = FusedParams::none();
        (self.stages.iter())
            .filter_map(|s| match s.fused(&mut scratch) {
                Fused::AfterKernel { reads } => Some(reads),
                _ => None,
            })
            .fold(k, usize::max)
    }

    /// The stages the host runs after the kernel, over the kernel's `order` (timeline
    /// indices, best first) and its scores.
    pub(crate) fn after_kernel(
        &self,
        at: &At<'_, '_>,
        score: &dyn Fn(usize) -> f64,
        order: &mut Vec<usize>,
    ) {
        let mut scratch = FusedParams::none();
        for stage in &self.stages {
            if let Fused::AfterKernel { .. } = stage.fused(&mut scratch) {
                stage.reorder(at, score, order);
            }
        }
    }
}
