//! The update stage: TiM's forget and merge, applied where a question meets them.
//!
//! A memory that holds "my sister lives in Porto" and, months later, "Maya got the keys to her
//! flat in Lisbon" holds two statements of one thing; the newer one is the answer to a question
//! about the present, the older one to a question about the past. TiM decides this when a
//! thought is inserted (statements in one LSH bucket whose similarity passes a test are
//! merged, the outdated one forgotten). Deciding it at insert time needs the statement's
//! subject and relation, which a rule extractor finds for few phrasings; at query time the
//! question supplies them: the items the ranking puts at the top are the ones about what it
//! asks.
//!
//! So, among the top `window` items, two items from different times are **linked** when
//! their key vectors are unusually close: their cosine is more than `spread` standard
//! deviations above the mean cosine of the pairs among the top `2 × window` items, and more
//! than `link`. The bar is relative because how alike a tenant's items are varies: one
//! conversation between two friends is alike throughout, while the items a mixed history
//! puts at the top of one question share little but the question. Each linked group keeps the
//! ranks it holds and is reordered by time, newest first for a question in the present tense
//! ("where does my sister live?"), oldest first for one that asks for an earlier state
//! ("before", "used to", "my old…"). Past-tense, perfect and modal questions, and questions
//! naming a time range (the time stage's), are left alone. The set of items in the window
//! never changes, only their order, so recall at `window` or more is untouched.

use memdex_extract::time::{ms_day, parse_query};
use memdex_store::ItemRef;
use serde::Serialize;

use crate::options::UpdateStage;
use crate::query::Query;

/// Which way the stage orders a linked group for one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdateDirection {
    /// A question about the present: the newest statement first.
    NewestFirst,
    /// A question about an earlier state: the oldest first.
    OldestFirst,
}

/// The update stage over a finished `order` (timeline indices, best first; `item(i)` is the
/// item at index `i`) for `query`: the one entry point of every ranking path, so the CPU
/// pipeline and the fused kernel's hits agree. Returns the ranks it changed.
pub fn update_order<'a>(
    order: &mut [usize],
    item: impl Fn(usize) -> ItemRef<'a>,
    query: &Query<'_>,
    stage: UpdateStage,
) -> usize {
    let w = order.len().min(stage.window);
    let newest = order[..w].iter().map(|&i| item(i).timestamp_ms).max();
    let Some(dir) = newest.and_then(|n| direction(query.text, query.date_ms, n)) else {
        return 0;
    };
    apply(
        order,
        |i| {
            let it = item(i);
            (it.timestamp_ms, it.embedding)
        },
        dir,
        stage,
    )
}

/// How the stage treats `text` asked at `date_ms` (else at `newest_ms`): None when the
/// question names a time range (the time stage's) or no date anchors it.
pub fn direction(text: &str, date_ms: Option<i64>, newest_ms: i64) -> Option<UpdateDirection> {
    let q = parse_query(text, ms_day(date_ms.unwrap_or(newest_ms))?);
    match (q.range, q.asks_earlier, q.asks_present) {
        (Some(_), _, _) => None,
        (None, true, _) => Some(UpdateDirection::OldestFirst),
        (None, false, true) => Some(UpdateDirection::NewestFirst),
        (None, false, false) => None,
    }
}

/// Reorders the linked groups among `order`'s first `stage.window` entries (timeline indices;
/// `item(i)` gives an index's session time and key vector). Returns the entries it moved.
pub(crate) fn apply<'a>(
    order: &mut [usize],
    item: impl Fn(usize) -> (i64, &'a [f32]),
    dir: UpdateDirection,
    stage: UpdateStage,
) -> usize {
    let w = order.len().min(stage.window);
    let near = order.len().min(2 * stage.window);
    let top: Vec<(i64, &[f32])> = order[..near].iter().map(|&i| item(i)).collect();
    let bar = link_bar(&top, stage);
    let mut group = Groups::new(w);
    for a in 0..w {
        for b in a + 1..w {
            if top[a].0 != top[b].0 && cosine(top[a].1, top[b].1) > bar {
                group.join(a, b);
            }
        }
    }
    let before = order[..w].to_vec();
    for root in 0..w {
        // ranks held by this group, best first, and its members in time order
        let ranks: Vec<usize> = (0..w).filter(|&r| group.find(r) == root).collect();
        if ranks.len() < 2 {
            continue;
        }
        let mut members = ranks.clone();
        members.sort_by(|&x, &y| {
            let by_time = top[x].0.cmp(&top[y].0);
            match dir {
                UpdateDirection::NewestFirst => by_time.reverse(),
                UpdateDirection::OldestFirst => by_time,
            }
            .then(x.cmp(&y))
        });
        for (&rank, &m) in ranks.iter().zip(&members) {
            order[rank] = before[m];
        }
    }
    (0..w).filter(|&r| order[r] != before[r]).count()
}

/// The cosine two items must exceed to be linked: `spread` standard deviations above the
/// mean cosine of `top`'s pairs from different times (so in a window of equally alike items
/// nothing stands out), and at least `link`.
fn link_bar(top: &[(i64, &[f32])], stage: UpdateStage) -> f32 {
    let mut cos = Vec::new();
    for (a, x) in top.iter().enumerate() {
        for y in &top[a + 1..] {
            if x.0 != y.0 {
                cos.push(cosine(x.1, y.1));
            }
        }
    }
    if cos.is_empty() {
        return stage.link;
    }
    let n = cos.len() as f32;
    let mean = cos.iter().sum::<f32>() / n;
    let sd = (cos.iter().map(|c| (c - mean) * (c - mean)).sum::<f32>() / n).sqrt();
    stage.link.max(mean + stage.spread * sd + 1e-6)
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut ab, mut aa, mut bb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        0.0
    } else {
        ab / (aa.sqrt() * bb.sqrt())
    }
}

/// Union-find over the window's ranks; a group's root is its best rank.
struct Groups(Vec<usize>);

impl Groups {
    fn new(n: usize) -> Groups {
        Groups((0..n).collect())
    }

    fn find(&mut self, mut r: usize) -> usize {
        while self.0[r] != r {
            self.0[r] = self.0[self.0[r]];
            r = self.0[r];
        }
        r
    }

    fn join(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        let (lo, hi) = (ra.min(rb), ra.max(rb));
        self.0[hi] = lo;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items: (time, vector); a and a2 state the same thing, b something else.
    fn items() -> Vec<(i64, Vec<f32>)> {
        vec![
            (10, vec![1.0, 0.0, 0.0]), // 0: old statement
            (20, vec![0.0, 1.0, 0.0]), // 1: unrelated
            (30, vec![0.9, 0.1, 0.0]), // 2: newer statement of 0
            (40, vec![0.0, 0.0, 1.0]), // 3: unrelated, newest
        ]
    }

    fn run(order: &[usize], dir: UpdateDirection, window: usize) -> (Vec<usize>, usize) {
        let it = items();
        let mut order = order.to_vec();
        let stage = UpdateStage {
            window,
            spread: 0.0,
            link: 0.5,
        };
        let moved = apply(&mut order, |i| (it[i].0, it[i].1.as_slice()), dir, stage);
        (order, moved)
    }

    #[test]
    fn linked_statements_keep_their_ranks_and_are_ordered_by_time() {
        // the old statement ranks first; the newer one takes its rank, unrelated items stay
        let (order, moved) = run(&[0, 1, 2, 3], UpdateDirection::NewestFirst, 10);
        assert_eq!(order, [2, 1, 0, 3]);
        assert_eq!(moved, 2);
        // a question about an earlier state: oldest first
        let (order, _) = run(&[2, 3, 0, 1], UpdateDirection::OldestFirst, 10);
        assert_eq!(order, [0, 3, 2, 1]);
        // already in order: nothing moves
        assert_eq!(run(&[2, 0, 1, 3], UpdateDirection::NewestFirst, 10).1, 0);
    }

    #[test]
    fn only_the_window_is_reordered() {
        // the newer statement is outside a window of 2: nothing to link
        let (order, moved) = run(&[0, 1, 2, 3], UpdateDirection::NewestFirst, 2);
        assert_eq!((order, moved), (vec![0, 1, 2, 3], 0));
    }

    #[test]
    fn same_time_items_are_never_linked() {
        let it = [(5, vec![1.0, 0.0]), (5, vec![1.0, 0.0])];
        let mut order = vec![1, 0];
        let stage = UpdateStage::default();
        let moved = apply(
            &mut order,
            |i| (it[i].0, it[i].1.as_slice()),
            UpdateDirection::NewestFirst,
            stage,
        );
        assert_eq!((order, moved), (vec![1, 0], 0));
    }

    #[test]
    fn a_named_range_is_left_to_the_time_stage() {
        let day = 86_400_000;
        let now = 1_700_000_000_000;
        assert_eq!(
            direction("Where does my sister live?", None, now),
            Some(UpdateDirection::NewestFirst)
        );
        assert_eq!(
            direction("Where did my sister live before?", Some(now), 0),
            Some(UpdateDirection::OldestFirst)
        );
        assert_eq!(
            direction("Where did I live in March 2021?", Some(now + day), now),
            None
        );
    }
}

#[cfg(test)]
mod bar_tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn the_bar_is_relative_to_how_alike_the_top_items_are() {
        let stage = UpdateStage::default();
        // a mixed history: two close statements among unrelated items are linked
        let mixed = [
            unit(&[1.0, 0.3, 0.0, 0.0, 0.0]),
            unit(&[0.0, 0.0, 1.0, 0.0, 0.0]),
            unit(&[1.0, 0.0, 0.0, 0.0, 0.4]),
            unit(&[0.0, 0.0, 0.0, 1.0, 0.0]),
        ];
        let mut order = vec![0, 1, 2, 3];
        let m = apply(
            &mut order,
            |i| (i as i64, mixed[i].as_slice()),
            UpdateDirection::NewestFirst,
            stage,
        );
        assert_eq!((order, m), (vec![2, 1, 0, 3], 2));
        // one conversation where every item is as alike as the pair: nothing stands out
        let alike = [
            unit(&[1.0, 0.6, 0.0, 0.0, 0.0]),
            unit(&[1.0, 0.0, 0.6, 0.0, 0.0]),
            unit(&[1.0, 0.0, 0.0, 0.6, 0.0]),
            unit(&[1.0, 0.0, 0.0, 0.0, 0.6]),
        ];
        let mut order = vec![0, 1, 2, 3];
        let m = apply(
            &mut order,
            |i| (i as i64, alike[i].as_slice()),
            UpdateDirection::NewestFirst,
            stage,
        );
        assert_eq!((order, m), (vec![0, 1, 2, 3], 0));
    }
}
