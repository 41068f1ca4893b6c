//! Supersession (TiM thoughts): when an outdated thought is among the best — forgotten
//! because a newer value contradicted it, or negated — or the thought that replaced it is, the
//! items stating what replaced it are put just ahead of the outdated one's best item (after
//! the signals, before the time stage, which still moves items of an asked-for period ahead).
//! TiM forgets contradicted thoughts; the items stay, and this keeps the older statement from
//! outranking the newer one.

use super::{At, Parts, Stage};
use crate::options::RankOptions;
use crate::retrieved::{thoughts_on, Found};
use crate::RankError;

/// On whenever the thoughts are read (their stage or their retriever).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Supersede;

impl Supersede {
    pub(crate) fn of(opts: &RankOptions) -> Option<Supersede> {
        thoughts_on(opts).then_some(Supersede)
    }
}

impl Stage for Supersede {
    fn name(&self) -> &'static str {
        "superseded"
    }

    // needs: what the thoughts' retriever or stage needs (they are on whenever this is)

    fn score(
        &self,
        at: &At<'_, '_>,
        scores: &mut Vec<f64>,
        _: &mut Parts,
    ) -> Result<bool, RankError> {
        if let Some(found) = at.found()? {
            supersede(found, scores);
        }
        Ok(true)
    }

    fn fused(&self, _: &mut super::FusedParams) -> super::Fused {
        super::Fused::HostOnly("the TiM thought and MemTree stages")
    }
}

/// Each replacing item scores just above the best item of the outdated thought it replaces,
/// unless it already scores higher.
fn supersede(found: &Found, scores: &mut [f64]) {
    let Some(t) = &found.thoughts else { return };
    for (old, new) in &t.superseded {
        let best = (old.iter())
            .filter_map(|&i| scores.get(i as usize).copied())
            .fold(f64::NEG_INFINITY, f64::max);
        if !best.is_finite() {
            continue;
        }
        let above = best + (best.abs() * 1e-9).max(1e-9);
        for &i in new {
            if let Some(s) = scores.get_mut(i as usize) {
                if *s <= best {
                    *s = above;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memdex_structures::Retrieved;

    #[test]
    fn supersession_puts_the_replacement_just_ahead_and_never_lowers_it() {
        let found = Found {
            thoughts: Some(Retrieved {
                lift: vec![0.0; 4],
                superseded: vec![(vec![0, 1], vec![3])],
            }),
            tree: None,
        };
        let mut scores = vec![0.9, 0.5, 0.7, 0.1];
        supersede(&found, &mut scores);
        assert!(scores[3] > 0.9 && scores[3] < 0.9 + 1e-6, "{scores:?}");
        assert_eq!(&scores[..3], &[0.9, 0.5, 0.7]);
        let mut higher = vec![0.2, 0.1, 0.0, 0.8];
        supersede(&found, &mut higher);
        assert_eq!(higher, [0.2, 0.1, 0.0, 0.8], "already ahead: unchanged");
    }
}
