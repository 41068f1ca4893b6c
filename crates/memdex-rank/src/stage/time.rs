//! The time stage (LongMemEval §5.4): a query naming a time gets a day range from
//! `memdex-extract`; items whose session date or extracted event dates fall in it move ahead
//! (`front`, a reorder) or are boosted (`boost`, a rescaling of their scores); "when…"
//! questions without a range can boost dated items. The fused kernels run it (its flags and
//! rule are kernel inputs).

use std::sync::OnceLock;

use memdex_extract::time::{ms_day, parse_query};
use memdex_store::{Store, TenantSlice};

use super::FusedParams;
use super::{At, Fused, Note, Parts, Stage};
use crate::options::{RankOptions, TimeMode, TimeStage};
use crate::query::Query;
use crate::RankError;

/// The time stage (see [`TimeStage`]). A plan is built per query, so the query's window is
/// worked out once, by whichever step needs it first.
#[derive(Debug)]
pub(crate) struct Time {
    stage: TimeStage,
    window: OnceLock<Option<TimeWindow>>,
}

impl Time {
    pub(crate) fn of(opts: &RankOptions) -> Option<Time> {
        opts.time.map(|stage| Time {
            stage,
            window: OnceLock::new(),
        })
    }

    /// The query's window (None: the stage does nothing for it).
    fn window(&self, at: &At<'_, '_>) -> Option<TimeWindow> {
        *(self.window).get_or_init(|| window(at.rows.newest(), at.query, self.stage))
    }

    /// The boost this query's preferred rows get (None: `front`, or nothing preferred).
    fn boost(&self, in_range: bool) -> Option<f64> {
        match (in_range, self.stage.mode) {
            (true, TimeMode::Front) => None,
            (true, TimeMode::Boost(b)) => Some(b),
            (false, _) => Some(self.stage.when_boost),
        }
    }
}

impl Stage for Time {
    fn name(&self) -> &'static str {
        "time"
    }

    fn needs(&self, store: &Store) -> Result<(), RankError> {
        if !store.manifest().extraction.events {
            return Err(RankError::MissingColumns {
                stage: "time",
                what: "event dates",
                store: store.dir().display().to_string(),
                option: "`memdex index --extract-events` (the default)",
            });
        }
        Ok(())
    }

    /// `boost` (and a "when" question's `when_boost`): the preferred rows' scores × (1 +
    /// boost), after shifting every score up to be non-negative. Part of the stage's
    /// reordering, so `explain` shows the ranks, not these scores.
    fn score(
        &self,
        at: &At<'_, '_>,
        scores: &mut Vec<f64>,
        _: &mut Parts,
    ) -> Result<bool, RankError> {
        let Some(w) = self.window(at) else {
            return Ok(false);
        };
        if let Some(boost) = self.boost(matches!(w, TimeWindow::Range { .. })) {
            let flags = row_flags(&at.rows.slices, w);
            if flags.iter().any(|&f| f) {
                rescale(scores, &flags, boost);
            }
        }
        Ok(false)
    }

    /// `front`: the preferred rows ahead of all others, each group in score order.
    fn reorder(
        &self,
        at: &At<'_, '_>,
        _: &dyn Fn(usize) -> f64,
        order: &mut Vec<usize>,
    ) -> Option<Note> {
        let w = self.window(at);
        let in_range = matches!(w, Some(TimeWindow::Range { .. }));
        let front = in_range && self.stage.mode == TimeMode::Front;
        if !front && !at.explain {
            return Some(Note::Time(None));
        }
        let flags = w.map(|w| row_flags(&at.rows.slices, w));
        if let (true, Some(flags)) = (front, &flags) {
            if flags.iter().any(|&f| f) {
                flagged_first(order, |i| flags[i]);
            }
        }
        Some(Note::Time(
            flags.filter(|_| at.explain).map(|f| (f, in_range)),
        ))
    }

    fn fused(&self, _: &mut FusedParams) -> Fused {
        Fused::Kernel
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

/// Which rows `w` prefers, one flag per live row in timeline order.
pub(crate) fn row_flags(slices: &[TenantSlice<'_>], w: TimeWindow) -> Vec<bool> {
    (slices.iter())
        .flat_map(|s| (0..s.rows).map(move |i| w.flags(s.timestamps()[i], s.events(i))))
        .collect()
}

/// The time stage's `front` rule: flagged items first, stably (each group keeps its order).
pub fn flagged_first(order: &mut Vec<usize>, flagged: impl Fn(usize) -> bool) {
    let (mut front, back): (Vec<usize>, Vec<usize>) = order.iter().partition(|&&i| flagged(i));
    front.extend(back);
    *order = front;
}

/// The preferred rows' scores × (1 + `boost`), every score first shifted up to be
/// non-negative (the order within each group is kept).
fn rescale(scores: &mut [f64], flags: &[bool], boost: f64) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use memdex_score::fusion::rank_desc;

    #[test]
    fn front_moves_flagged_items_ahead_and_boost_rescales() {
        let flags = [false, true, false, true];
        let scores0 = vec![0.9, 0.2, 0.5, 0.4];
        let order0 = rank_desc(&scores0);
        assert_eq!(order0, [0, 2, 3, 1]);
        let mut order = order0.clone();
        flagged_first(&mut order, |i| flags[i]);
        assert_eq!(
            order,
            [3, 1, 0, 2],
            "in-range first, each group in score order"
        );
        let mut scores = scores0.clone();
        rescale(&mut scores, &flags, 1.0);
        assert_eq!(scores, [0.9, 0.4, 0.5, 0.8]);
        assert_eq!(rank_desc(&scores), [0, 3, 2, 1]);
        // a "when" question's boost (0.2) after shifting negatives up
        let mut shifted = vec![-0.1, 0.2, 0.0, 0.3];
        rescale(&mut shifted, &flags, 0.2);
        assert!((shifted[3] - 0.48).abs() < 1e-12 && shifted[0] == 0.0);
        let time = Time {
            stage: TimeStage {
                mode: TimeMode::Boost(1.0),
                when_boost: 0.0,
            },
            window: OnceLock::new(),
        };
        assert_eq!(time.boost(true), Some(1.0));
        assert_eq!(time.boost(false), Some(0.0));
        let front = Time {
            stage: TimeStage::default(),
            window: OnceLock::new(),
        };
        assert_eq!((front.boost(true), front.boost(false)), (None, Some(0.2)));
    }
}
