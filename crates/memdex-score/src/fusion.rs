//! Score fusion.

/// Min-max normalisation over the candidate set: `(x − min) / (max − min)`; all zeros when
/// every score is equal.
pub fn min_max(scores: &[f64]) -> Vec<f64> {
    let (lo, hi) = scores
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    let span = hi - lo;
    // also covers an empty slice (span −∞) and NaN
    if span.is_nan() || span <= 0.0 {
        return vec![0.0; scores.len()];
    }
    scores.iter().map(|x| (x - lo) / span).collect()
}

/// Mimir's hybrid: `w_dense · minmax(dense) + w_sparse · minmax(sparse)`.
pub fn hybrid(dense: &[f64], sparse: &[f64], w_dense: f64, w_sparse: f64) -> Vec<f64> {
    assert_eq!(dense.len(), sparse.len());
    let (d, s) = (min_max(dense), min_max(sparse));
    d.iter()
        .zip(&s)
        .map(|(a, b)| w_dense * a + w_sparse * b)
        .collect()
}

/// Reciprocal-rank fusion: `Σ_lists 1 / (k + rank)` with 1-based ranks (k = 60 is usual).
pub fn rrf(lists: &[&[f64]], k: f64) -> Vec<f64> {
    let n = lists.first().map_or(0, |l| l.len());
    let mut out = vec![0.0; n];
    for l in lists {
        assert_eq!(l.len(), n);
        for (r, &i) in rank_desc(l).iter().enumerate() {
            out[i] += 1.0 / (k + (r + 1) as f64);
        }
    }
    out
}

/// Indices sorted by descending score; ties keep corpus order (stable).
pub fn rank_desc(scores: &[f64]) -> Vec<usize> {
    // (score, index) pairs side by side: the comparisons read no second array, and the
    // index tie-break makes the order total, so an unstable sort gives the stable order
    let mut pairs: Vec<(f64, usize)> = scores.iter().copied().zip(0..).collect();
    pairs.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    pairs.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_and_fuses() {
        assert_eq!(min_max(&[2.0, 4.0, 3.0]), vec![0.0, 1.0, 0.5]);
        assert_eq!(min_max(&[1.0, 1.0]), vec![0.0, 0.0]);
        let h = hybrid(&[0.2, 0.9, 0.5], &[3.0, 0.0, 1.5], 0.5, 0.5);
        assert!((h[0] - 0.5).abs() < 1e-12 && (h[1] - 0.5).abs() < 1e-12);
        assert_eq!(rank_desc(&[0.1, 0.5, 0.5, 0.9]), vec![3, 1, 2, 0]);
        let f = rrf(&[&[0.9, 0.1, 0.5], &[0.0, 1.0, 0.5]], 60.0);
        // item 2 is second in both lists; items 0 and 1 are first in one and third in the other
        assert!((f[2] - 2.0 / 62.0).abs() < 1e-12);
        assert!((f[0] - (1.0 / 61.0 + 1.0 / 63.0)).abs() < 1e-12);
        assert!((f[0] - f[1]).abs() < 1e-15, "symmetric placements tie");
    }

    #[test]
    fn rank_desc_is_the_stable_descending_order() {
        // thousands of scores from a few values (ties everywhere), signed zeros and NaN
        let values = [0.5, -0.0, 0.0, 1.0, f64::NAN, -2.0, 0.25];
        let scores: Vec<f64> = (0..5_000u64)
            .map(|i| values[(i.wrapping_mul(2_654_435_761) >> 7) as usize % values.len()])
            .collect();
        let mut want: Vec<usize> = (0..scores.len()).collect();
        want.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
        assert_eq!(rank_desc(&scores), want);
        assert!(rank_desc(&[]).is_empty());
    }
}
