//! The time stage (LongMemEval §5.4): a query naming a time gets a day range from
//! `memdex-extract`; items whose session date or extracted event dates fall in it move ahead
//! (`front`) or are boosted; "when…" questions without a range can boost dated items.

use memdex_extract::time::{ms_day, parse_query};
use memdex_score::fusion::rank_desc;
use memdex_store::TenantSlice;

use crate::options::{TimeMode, TimeStage};
use crate::query::Query;

/// The time stage (see [`TimeStage`]): reorders `order` or rescales `scores`.
pub(crate) fn apply(
    slices: &[TenantSlice<'_>],
    query: &Query<'_>,
    stage: TimeStage,
    scores: &mut [f64],
    order: &mut Vec<usize>,
) {
    if let Some((flags, in_range)) = flags(slices, query, stage) {
        prefer(&flags, in_range, stage, scores, order);
    }
}

/// The rows a query's time stage prefers: those whose session date or an event date falls in
/// a day range the query names (milliseconds, inclusive), or, for a "when" question naming no
/// range, those with any event date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeWindow {
    Range { lo: i64, hi: i64 },
    Dated,
}

impl TimeWindow {
    /// Whether a row dated `timestamp` with event date ranges `events` is preferred.
    pub fn flags(&self, timestamp: i64, mut events: impl Iterator<Item = (i64, i64)>) -> bool {
        match *self {
            TimeWindow::Range { lo, hi } => {
                (lo..=hi).contains(&timestamp) || events.any(|(a, b)| a <= hi && b >= lo)
            }
            TimeWindow::Dated => events.next().is_some(),
        }
    }
}

/// A query's window (see [`TimeWindow`]), its date defaulting to `newest` (the tenant's newest
/// session date); None when the stage does nothing.
pub(crate) fn window(newest: i64, query: &Query<'_>, stage: TimeStage) -> Option<TimeWindow> {
    let anchor = ms_day(query.date_ms.unwrap_or(newest))?;
    let qt = parse_query(query.text, anchor);
    match qt.range {
        Some(r) => {
            let (lo, hi) = r.to_ms();
            Some(TimeWindow::Range { lo, hi })
        }
        None if qt.asks_when && stage.when_boost > 0.0 => Some(TimeWindow::Dated),
        None => None,
    }
}

/// The newest session date of the rows (0 without rows).
pub(crate) fn newest(slices: &[TenantSlice<'_>]) -> i64 {
    (slices.iter().flat_map(|s| s.timestamps()).copied())
        .max()
        .unwrap_or(0)
}

/// Which items the time stage prefers, one flag per live row in timeline order, and whether
/// the query names a range (else it is a "when" question); None when the stage does nothing.
pub(crate) fn flags(
    slices: &[TenantSlice<'_>],
    query: &Query<'_>,
    stage: TimeStage,
) -> Option<(Vec<bool>, bool)> {
    let w = window(newest(slices), query, stage)?;
    let flags = slices
        .iter()
        .flat_map(|s| (0..s.rows).map(move |i| w.flags(s.timestamps()[i], s.events(i))))
        .collect();
    Some((flags, matches!(w, TimeWindow::Range { .. })))
}

/// The time stage's `front` rule: flagged items first, stably (each group keeps its order).
pub fn flagged_first(order: &mut Vec<usize>, flagged: impl Fn(usize) -> bool) {
    let (mut front, back): (Vec<usize>, Vec<usize>) = order.iter().partition(|&&i| flagged(i));
    front.extend(back);
    *order = front;
}

/// Prefers the flagged items: with a range, `front` moves them ahead (stable: each group keeps
/// its score order) and `boost` multiplies their scores; without one (a "when" question) the
/// `when_boost` applies.
fn prefer(
    flags: &[bool],
    in_range: bool,
    stage: TimeStage,
    scores: &mut [f64],
    order: &mut Vec<usize>,
) {
    if !flags.iter().any(|&f| f) {
        return;
    }
    let boost = match (in_range, stage.mode) {
        (true, TimeMode::Front) => {
            flagged_first(order, |i| flags[i]);
            return;
        }
        (true, TimeMode::Boost(b)) => b,
        (false, _) => stage.when_boost,
    };
    let lo = scores
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .min(0.0);
    for (s, &f) in scores.iter_mut().zip(flags) {
        *s -= lo;
        if f {
            *s *= 1.0 + boost;
        }
    }
    *order = rank_desc(scores);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_moves_flagged_items_ahead_and_boost_rescales() {
        let flags = [false, true, false, true];
        let scores0 = vec![0.9, 0.2, 0.5, 0.4];
        let order0 = rank_desc(&scores0);
        assert_eq!(order0, [0, 2, 3, 1]);
        let (mut scores, mut order) = (scores0.clone(), order0.clone());
        prefer(&flags, true, TimeStage::default(), &mut scores, &mut order);
        assert_eq!(
            order,
            [3, 1, 0, 2],
            "in-range first, each group in score order"
        );
        assert_eq!(scores, scores0, "front keeps the scores");
        let boost = TimeStage {
            mode: TimeMode::Boost(1.0),
            when_boost: 0.0,
        };
        let (mut scores, mut order) = (scores0.clone(), order0.clone());
        prefer(&flags, true, boost, &mut scores, &mut order);
        assert_eq!(scores, [0.9, 0.4, 0.5, 0.8]);
        assert_eq!(order, [0, 3, 2, 1]);
        // no range: a "when" question boosts dated items by when_boost
        let (mut scores, mut order) = (scores0.clone(), order0.clone());
        prefer(&flags, false, TimeStage::default(), &mut scores, &mut order);
        assert!((scores[3] - 0.48).abs() < 1e-12 && scores[0] == 0.9);
        // nothing flagged: nothing changes
        let (mut scores, mut order) = (scores0.clone(), order0.clone());
        prefer(&[false; 4], true, boost, &mut scores, &mut order);
        assert_eq!((scores, order), (scores0, order0));
    }
}
