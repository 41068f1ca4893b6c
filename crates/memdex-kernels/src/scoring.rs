//! The scoring and selection rules every backend reproduces: cosine of a query with an f16
//! row, and the order of candidates (score descending, then row ascending, NaN as −∞).

use crate::NO_ROW;

/// `a` ranks before `b`: score descending, then row ascending.
pub fn better(a: (f32, u32), b: (f32, u32)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

fn sanitize(s: f32) -> f32 {
    if s.is_nan() {
        f32::NEG_INFINITY
    } else {
        s
    }
}

/// Cosine of a query with one f16 row, as the kernels define it.
pub fn cosine(q: &[f32], row: &[crate::f16]) -> f32 {
    let qn = q.iter().map(|x| x * x).sum::<f32>().sqrt();
    let (mut dot, mut nn) = (0f32, 0f32);
    for (&a, &b) in q.iter().zip(row) {
        let b = b.to_f32();
        dot += a * b;
        nn += b * b;
    }
    dot / (qn * nn.sqrt()).max(1e-30)
}

/// The best `k` of `cands`, best first, padded with empty slots.
pub fn select(mut cands: Vec<(f32, u32)>, k: usize) -> Vec<(f32, u32)> {
    for c in &mut cands {
        c.0 = sanitize(c.0);
    }
    cands.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.1.cmp(&b.1))
    });
    cands.truncate(k);
    cands.resize(k, (f32::NEG_INFINITY, NO_ROW));
    cands
}
