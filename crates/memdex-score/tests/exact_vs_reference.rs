//! The fast exact top-k against the slow reference.

#![allow(clippy::unwrap_used)]

use memdex_score::{dot, reference, top_k, Hit};
use proptest::prelude::*;

fn blocks_strategy() -> impl Strategy<Value = (usize, Vec<Vec<f32>>, Vec<f32>, usize)> {
    (1usize..40).prop_flat_map(|dim| {
        (
            Just(dim),
            prop::collection::vec(
                prop::collection::vec(-1.0f32..1.0, 0..30).prop_map(move |v| {
                    // round to whole rows
                    let rows = v.len() / dim.max(1);
                    let mut v = v;
                    v.truncate(rows * dim);
                    v
                }),
                0..5,
            ),
            prop::collection::vec(-1.0f32..1.0, dim),
            0usize..12,
        )
    })
}

proptest! {
    #[test]
    fn dot_matches_reference(v in prop::collection::vec((-1.0f32..1.0, -1.0f32..1.0), 0..300)) {
        let (a, b): (Vec<f32>, Vec<f32>) = v.into_iter().unzip();
        let fast = dot(&a, &b);
        let slow = reference::dot(&a, &b);
        prop_assert!((fast - slow).abs() <= 1e-4 * (1.0 + a.len() as f32).sqrt(), "{fast} vs {slow}");
    }

    /// Selection is exact: with the same scoring function both pick the same hits in the same
    /// order, ties included (scores quantised to force many ties).
    #[test]
    fn selection_matches_reference_exactly((dim, blocks, q, k) in blocks_strategy()) {
        let quantise = |x: f32| (x * 4.0).round() / 4.0;
        let blocks: Vec<Vec<f32>> = blocks.into_iter().map(|b| b.into_iter().map(quantise).collect()).collect();
        let q: Vec<f32> = q.into_iter().map(quantise).collect();
        let refs: Vec<&[f32]> = blocks.iter().map(Vec::as_slice).collect();
        let fast = top_k(&q, &refs, dim, k);
        // quantised inputs make every partial sum exact, so both dot products agree bit-for-bit
        let slow = reference::top_k_with(|row| dot(&q, row), &refs, dim, k);
        prop_assert_eq!(fast, slow);
    }

    /// End to end with the sequential reference dot: same scores within tolerance, and the
    /// same ids wherever the reference's scores are not near-tied at the cut.
    #[test]
    fn top_k_matches_reference_within_tolerance((dim, blocks, q, k) in blocks_strategy()) {
        let refs: Vec<&[f32]> = blocks.iter().map(Vec::as_slice).collect();
        let fast = top_k(&q, &refs, dim, k);
        let slow = reference::top_k(&q, &refs, dim, k);
        prop_assert_eq!(fast.len(), slow.len());
        for (f, s) in fast.iter().zip(&slow) {
            prop_assert!((f.score - s.score).abs() < 1e-4, "{:?} vs {:?}", f, s);
        }
        let key = |h: &Hit| (h.block, h.row);
        if let Some(last) = slow.last() {
            for s in &slow {
                if s.score > last.score + 1e-3 {
                    prop_assert!(fast.iter().any(|f| key(f) == key(s)), "missing {:?}", s);
                }
            }
        }
    }
}

#[test]
fn parallel_path_matches_reference_on_large_input() {
    // Enough rows to take the rayon path; values on a coarse grid so sums are exact.
    let dim = 24;
    let rows = 20_000;
    let mut state = 0x9E3779B97F4A7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 40) % 9) as f32 / 8.0 - 0.5
    };
    let a: Vec<f32> = (0..rows * dim).map(|_| next()).collect();
    let b: Vec<f32> = (0..777 * dim).map(|_| next()).collect();
    let q: Vec<f32> = (0..dim).map(|_| next()).collect();
    let blocks = [&a[..], &b[..]];
    for k in [1, 10, 100] {
        let fast = top_k(&q, &blocks, dim, k);
        let slow = reference::top_k_with(|row| dot(&q, row), &blocks, dim, k);
        assert_eq!(fast, slow, "k = {k}");
    }
}

#[test]
fn nan_scores_rank_last_and_k_zero_is_empty() {
    let dim = 2;
    let block = [1.0, 0.0, f32::NAN, 0.0, 0.5, 0.0];
    let hits = top_k(&[1.0, 0.0], &[&block], dim, 3);
    assert_eq!(hits.iter().map(|h| h.row).collect::<Vec<_>>(), [0, 2, 1]);
    assert!(top_k(&[1.0, 0.0], &[&block], dim, 0).is_empty());
}
