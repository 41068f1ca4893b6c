//! Why an item ranked where it did: [`crate::rank_explained`] keeps every stage's scores in
//! a [`Trace`], and [`Trace::hits`] gives each top hit its [`Explain`]: the score after each
//! stage that ran, and the rank before and after each stage that reorders.

use crate::hit::{Explain, UpdateLink};
use crate::rows::Ranking;
use crate::update::UpdateMove;
use crate::SearchHit;

/// Every stage's scores of one ranking, per item in timeline order (empty or None: the
/// stage did not run).
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub dense: Vec<f64>,
    pub sparse: Vec<f64>,
    /// Query expansion's signal (None: off, or no candidate term).
    pub expansion: Option<Vec<f64>>,
    pub first: Vec<f64>,
    pub fragrel: Option<Vec<f64>>,
    pub structures: Option<Vec<f64>>,
    pub signals: Option<Vec<f64>>,
    pub superseded: Option<Vec<f64>>,
    /// Order by score alone, before the time stage.
    pub score_order: Vec<usize>,
    /// The time stage's flags and whether the query named a range (else: a "when" question).
    pub time_flags: Option<(Vec<bool>, bool)>,
    /// Order after the time stage, before the update stage.
    pub time_order: Vec<usize>,
    /// The update stage's moves (None: the stage is off).
    pub update: Option<Vec<UpdateMove>>,
}

impl Trace {
    /// The best `k` hits of `ranking` (the ranking this trace was kept for), each explained.
    pub fn hits(&self, ranking: &Ranking<'_>, k: usize) -> Vec<SearchHit> {
        let score_rank = ranks(&self.score_order);
        let time_rank = ranks(&self.time_order);
        let at = |v: &[f64], i: usize| v.get(i).map(|&x| x as f32);
        let stage = |v: &Option<Vec<f64>>, i: usize| v.as_deref().and_then(|v| at(v, i));
        let mut hits = ranking.hits(k);
        for (hit, &i) in hits.iter_mut().zip(&ranking.order) {
            let time = self.time_flags.as_ref().and_then(|(flags, in_range)| {
                flags
                    .get(i)
                    .copied()
                    .unwrap_or(false)
                    .then_some(if *in_range { "in_range" } else { "dated" })
            });
            let before = time_rank.get(i).copied().unwrap_or(0);
            hit.explain = Some(Box::new(Explain {
                dense: at(&self.dense, i),
                bm25: at(&self.sparse, i),
                expansion: stage(&self.expansion, i),
                first_stage: at(&self.first, i).unwrap_or(0.0),
                fragrel: stage(&self.fragrel, i),
                structures: stage(&self.structures, i),
                signals: stage(&self.signals, i),
                superseded: stage(&self.superseded, i),
                score_rank: score_rank.get(i).copied().unwrap_or(0),
                time,
                time_rank: before,
                update_moved_from: (self.update.is_some() && before != hit.rank).then_some(before),
                update: self.update_link(ranking, i),
            }));
        }
        hits
    }
}

impl Trace {
    /// Why the update stage moved timeline index `i`: the item it was linked to and the
    /// change the newer session states.
    fn update_link(&self, ranking: &Ranking<'_>, i: usize) -> Option<UpdateLink> {
        let m = self.update.as_ref()?.iter().find(|m| m.item == i)?;
        let linked = ranking.item(m.linked);
        Some(UpdateLink {
            linked_item_id: linked.item_id,
            linked_session_id: linked.session_id.to_string(),
            direction: m.direction,
            cue: m.change.cue,
            sentence: m.change.sentence.clone(),
        })
    }
}

/// 1-based rank of each timeline index in `order`.
fn ranks(order: &[usize]) -> Vec<usize> {
    let mut r = vec![0; order.len()];
    for (rank, &i) in order.iter().enumerate() {
        if let Some(slot) = r.get_mut(i) {
            *slot = rank + 1;
        }
    }
    r
}
