//! Why an item ranked where it did: [`crate::rank_explained`] keeps every stage's scores in
//! a [`Trace`], and [`Trace::hits`] gives each top hit its [`Explain`]: the score after each
//! stage that ran (by the stage's name), and the rank before and after each stage that
//! reorders.

use crate::hit::{Explain, UpdateLink};
use crate::rows::Ranking;
use crate::stage::Note;
use crate::update::UpdateMove;
use crate::SearchHit;

/// Every step of one ranking, per item in timeline order.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Scores by name, in the order kept: the first stage's inputs (`dense`, `bm25`,
    /// `expansion`) and each score stage's output under the stage's name.
    scores: Vec<(&'static str, Vec<f64>)>,
    /// Order by score alone, before the reordering stages.
    pub(crate) score_order: Vec<usize>,
    /// Each reordering stage in the order they ran: its name, the order after it, what it did.
    reorders: Vec<(&'static str, Vec<usize>, Note)>,
}

impl Trace {
    pub(crate) fn keep(&mut self, name: &'static str, scores: Vec<f64>) {
        self.scores.push((name, scores));
    }

    pub(crate) fn reordered(&mut self, name: &'static str, order: Vec<usize>, note: Note) {
        self.reorders.push((name, order, note));
    }

    /// The best `k` hits of `ranking` (the ranking this trace was kept for), each explained.
    pub fn hits(&self, ranking: &Ranking<'_>, k: usize) -> Vec<SearchHit> {
        let score_rank = ranks(&self.score_order);
        let stage_ranks: Vec<Vec<usize>> = (self.reorders.iter())
            .map(|(_, order, _)| ranks(order))
            .collect();
        let mut hits = ranking.hits(k);
        for (hit, &i) in hits.iter_mut().zip(&ranking.order) {
            let mut x = Explain::ranked(score_rank.get(i).copied().unwrap_or(0));
            for (name, v) in &self.scores {
                if let Some(&s) = v.get(i) {
                    x.set_score(name, s as f32);
                }
            }
            let mut before = x.score_rank;
            for ((_, _, note), r) in self.reorders.iter().zip(&stage_ranks) {
                let after = r.get(i).copied().unwrap_or(0);
                self.note(&mut x, note, (before, after), ranking, i);
                before = after;
            }
            hit.explain = Some(Box::new(x));
        }
        hits
    }

    /// What a reordering stage's `note` says of timeline index `i`, ranked `before` and
    /// `after` the stage.
    fn note(
        &self,
        x: &mut Explain,
        note: &Note,
        (before, after): (usize, usize),
        ranking: &Ranking<'_>,
        i: usize,
    ) {
        match note {
            Note::Time(flags) => {
                x.time_rank = after;
                x.time = flags.as_ref().and_then(|(flags, in_range)| {
                    (flags.get(i).copied().unwrap_or(false)).then_some(if *in_range {
                        "in_range"
                    } else {
                        "dated"
                    })
                });
            }
            Note::Update(moves) => {
                x.update_moved_from = (before != after).then_some(before);
                x.update = update_link(moves, ranking, i);
            }
        }
    }
}

/// Why the update stage moved timeline index `i`: the item it was linked to and the change
/// the newer session states.
fn update_link(moves: &[UpdateMove], ranking: &Ranking<'_>, i: usize) -> Option<UpdateLink> {
    let m = moves.iter().find(|m| m.item == i)?;
    let linked = ranking.item(m.linked);
    Some(UpdateLink {
        linked_item_id: linked.item_id,
        linked_session_id: linked.session_id.to_string(),
        direction: m.direction,
        cue: m.change.cue,
        sentence: m.change.sentence.clone(),
    })
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
