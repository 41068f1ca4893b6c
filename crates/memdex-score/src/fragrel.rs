//! FragRel's relation-aware score (context-structure relation), in O(N).
//!
//! `s_rel_i = s_i + α · Σ_{j≠i} w_ij s_j / Σ_{j≠i} w_ij` with `w_ij = w^{|pos_i − pos_j|}` for
//! items `i, j` in the same scope group (same session, or the whole history) and 0 otherwise.
//! Along a group's timeline both sums are exponential smoothing, forward and backward:
//! `F_i = w^{Δ}(F_{i−1} + s_{i−1})`, `B_i = w^{Δ}(B_{i+1} + s_{i+1})`, and the same with
//! `s = 1` for the denominators — so all N environment scores cost O(N) instead of O(N²).
//! [`relation_scores_reference`] is the O(N²) definition, tested against the fast one.

/// Parameters: α (weight of the environment) and w (decay per position step).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FragRel {
    pub alpha: f64,
    pub w: f64,
}

impl Default for FragRel {
    /// The paper's chat setting: α 0.5, w 0.8.
    fn default() -> Self {
        Self { alpha: 0.5, w: 0.8 }
    }
}

/// Relation-aware scores. Items must be given in timeline order: `positions` ascending within
/// each run of equal `groups` ids (each group contiguous). A lone item keeps its own score.
pub fn relation_scores(scores: &[f64], positions: &[u64], groups: &[u64], p: FragRel) -> Vec<f64> {
    let n = scores.len();
    assert!(positions.len() == n && groups.len() == n);
    let mut fwd = vec![(0.0f64, 0.0f64); n]; // (Σ w^Δ s, Σ w^Δ) over earlier items
    let mut bwd = vec![(0.0f64, 0.0f64); n];
    for i in 1..n {
        if groups[i] == groups[i - 1] {
            let d = decay(p.w, positions[i].saturating_sub(positions[i - 1]));
            let (s, z) = fwd[i - 1];
            fwd[i] = (d * (s + scores[i - 1]), d * (z + 1.0));
        }
    }
    for i in (0..n.saturating_sub(1)).rev() {
        if groups[i] == groups[i + 1] {
            let d = decay(p.w, positions[i + 1].saturating_sub(positions[i]));
            let (s, z) = bwd[i + 1];
            bwd[i] = (d * (s + scores[i + 1]), d * (z + 1.0));
        }
    }
    (0..n)
        .map(|i| {
            let num = fwd[i].0 + bwd[i].0;
            let den = fwd[i].1 + bwd[i].1;
            let env = if den > 0.0 { num / den } else { 0.0 };
            scores[i] + p.alpha * env
        })
        .collect()
}

/// `w^steps`, exactly as `powf` gives it; the usual steps of 0 and 1 (neighbouring turns)
/// without calling it.
#[inline]
fn decay(w: f64, steps: u64) -> f64 {
    match steps {
        0 => 1.0,
        1 => w,
        _ => w.powf(steps as f64),
    }
}

/// The O(N²) definition.
pub fn relation_scores_reference(
    scores: &[f64],
    positions: &[u64],
    groups: &[u64],
    p: FragRel,
) -> Vec<f64> {
    (0..scores.len())
        .map(|i| {
            let (mut num, mut den) = (0.0, 0.0);
            for j in 0..scores.len() {
                if j != i && groups[j] == groups[i] {
                    let w = p.w.powf(positions[i].abs_diff(positions[j]) as f64);
                    num += w * scores[j];
                    den += w;
                }
            }
            scores[i] + p.alpha * if den > 0.0 { num / den } else { 0.0 }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decay_is_powf() {
        for w in [0.8, 0.5, 0.95, 0.1, 1.0] {
            for steps in 0..8u64 {
                assert_eq!(decay(w, steps), w.powf(steps as f64), "{w}^{steps}");
            }
        }
    }

    #[test]
    fn fast_matches_quadratic_reference() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..50 {
            let n = (next() % 60) as usize;
            let mut pos = 0u64;
            let mut group = 0u64;
            let (mut scores, mut positions, mut groups) = (vec![], vec![], vec![]);
            for _ in 0..n {
                if next() % 7 == 0 {
                    group += 1;
                }
                pos += 1 + next() % 3; // gaps, as with skipped blank turns
                scores.push((next() % 1000) as f64 / 1000.0 - 0.2);
                positions.push(pos);
                groups.push(group);
            }
            let p = FragRel {
                alpha: 0.1 + (case % 5) as f64 / 10.0,
                w: 0.3 + (case % 7) as f64 / 10.0,
            };
            let fast = relation_scores(&scores, &positions, &groups, p);
            let slow = relation_scores_reference(&scores, &positions, &groups, p);
            assert_eq!((fast.len(), slow.len()), (n, n), "case {case}");
            for (f, s) in fast.iter().zip(&slow) {
                assert!((f - s).abs() < 1e-9, "case {case}: {f} vs {s}");
            }
        }
    }

    #[test]
    fn neighbours_lift_and_lone_items_keep_their_score() {
        let s = relation_scores(
            &[0.0, 1.0, 0.0, 0.5],
            &[0, 1, 2, 10],
            &[0, 0, 0, 1],
            FragRel::default(),
        );
        assert!(
            s[0] > 0.0 && s[2] > 0.0,
            "neighbours of a strong item rise: {s:?}"
        );
        assert_eq!(s[3], 0.5);
    }
}
