//! Slow, obviously-correct references for the fast paths in this crate.

use crate::Hit;

/// Plain sequential dot product.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for (x, y) in a.iter().zip(b) {
        s += x * y;
    }
    s
}

/// Scores every row, sorts everything by [`Hit::rank_cmp`], keeps the first k.
pub fn top_k_with(
    score: impl Fn(&[f32]) -> f32,
    blocks: &[&[f32]],
    dim: usize,
    k: usize,
) -> Vec<Hit> {
    let mut all = Vec::new();
    for (b, block) in blocks.iter().enumerate() {
        for (r, row) in block.chunks_exact(dim).enumerate() {
            all.push(Hit {
                score: score(row),
                block: b as u32,
                row: r as u32,
            });
        }
    }
    all.sort_by(Hit::rank_cmp);
    all.truncate(k);
    all
}

/// Reference exact top-k with the sequential dot product.
pub fn top_k(query: &[f32], blocks: &[&[f32]], dim: usize, k: usize) -> Vec<Hit> {
    top_k_with(|row| dot(query, row), blocks, dim, k)
}
