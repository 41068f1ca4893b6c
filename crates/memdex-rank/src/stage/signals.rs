//! Mimir's signals: recency (the oldest item's score × (1 − max), the newest unchanged) and
//! importance (scores × (1 + w · log10(importance 1..10))). Both multiply, so negative
//! scores (cosines can be) are first shifted up by the minimum, which keeps the order.

use memdex_score::signals::recency_factor;

use super::FusedParams;
use super::{At, Fused, Parts, Stage};
use crate::options::RankOptions;
use crate::RankError;

/// Recency's largest cut and importance's weight (None: that signal is off).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signals {
    recency: Option<f64>,
    importance: Option<f64>,
    /// Importance's asking rule.
    asking: bool,
}

impl Signals {
    pub(crate) fn of(opts: &RankOptions) -> Option<Signals> {
        (opts.recency.is_some() || opts.importance.is_some()).then_some(Signals {
            recency: opts.recency,
            importance: opts.importance,
            asking: opts.asking,
        })
    }
}

impl Stage for Signals {
    fn name(&self) -> &'static str {
        "signals"
    }

    fn score(
        &self,
        at: &At<'_, '_>,
        scores: &mut Vec<f64>,
        _: &mut Parts,
    ) -> Result<bool, RankError> {
        let slices = &at.rows.slices;
        let times: Vec<i64> = slices
            .iter()
            .flat_map(|s| s.timestamps())
            .copied()
            .collect();
        let importance = self
            .importance
            .map(|_| at.cache.importance(at.tenant, slices, self.asking));
        let input = Input {
            times: &times,
            importance: importance.as_deref().map(Vec::as_slice),
            date_ms: at.query.date_ms,
        };
        self.apply(scores, &input);
        Ok(true)
    }

    fn fused(&self, params: &mut FusedParams) -> Fused {
        if self.recency.is_some() {
            return Fused::HostOnly("recency");
        }
        params.importance = self.importance;
        Fused::Kernel
    }
}

/// What the signals read, per row in timeline order.
#[derive(Debug, Clone, Copy)]
struct Input<'a> {
    /// Session dates (ms).
    times: &'a [i64],
    /// Importance 1..10 (None: that signal is off).
    importance: Option<&'a [u8]>,
    /// When the question is asked (default: the newest row's date).
    date_ms: Option<i64>,
}

impl Signals {
    fn apply(&self, scores: &mut [f64], input: &Input<'_>) {
        let lo = scores.iter().copied().fold(f64::INFINITY, f64::min);
        if lo < 0.0 {
            scores.iter_mut().for_each(|s| *s -= lo);
        }
        if let Some(max) = self.recency {
            let first = input.times.iter().copied().min().unwrap_or(0);
            let newest = input.times.iter().copied().max().unwrap_or(0);
            let now = input.date_ms.unwrap_or(newest).max(first);
            let span = now.saturating_sub(first).max(1) as f64;
            for (s, &t) in scores.iter_mut().zip(input.times) {
                *s *= recency_factor(now.saturating_sub(t) as f64 / span, max);
            }
        }
        if let (Some(w), Some(imp)) = (self.importance, input.importance) {
            // one factor per importance value (1..=10 from the heuristic), not a log10 per row
            let weigh = |i: u8| 1.0 + w * f64::from(i).log10();
            let table: [f64; 11] = std::array::from_fn(|i| weigh(i as u8));
            for (s, &i) in scores.iter_mut().zip(imp) {
                *s *= table
                    .get(usize::from(i))
                    .copied()
                    .unwrap_or_else(|| weigh(i));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn signals_shift_negatives_then_weigh_recency_and_importance() {
        let stage = Signals {
            recency: Some(0.5),
            importance: Some(1.0),
            asking: true,
        };
        let mut scores = vec![-1.0, 1.0, 0.0];
        let input = Input {
            times: &[0, 50, 100],
            importance: Some(&[1, 10, 1]),
            date_ms: Some(100),
        };
        stage.apply(&mut scores, &input);
        let r = |age: f64| recency_factor(age, 0.5);
        // shifted by +1: [0, 2, 1]; importance ×1 or ×2
        close(&scores, &[0.0, 2.0 * r(0.5) * 2.0, 1.0 * r(0.0)]);
        // extreme dates saturate instead of overflowing
        let mut s = vec![1.0, 1.0];
        let extreme = Input {
            times: &[i64::MIN, i64::MAX],
            importance: None,
            date_ms: Some(i64::MAX),
        };
        stage.apply(&mut s, &extreme);
        assert!(s.iter().all(|v| v.is_finite()), "{s:?}");
    }
}
