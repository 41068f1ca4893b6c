//! TiM's locality-sensitive hashing on the CPU: `F(x) = argmax([xR ; −xR])` with a seeded
//! Gaussian `R ∈ R^{d × b/2}` per table (random-rotation LSH for angular distance), `L`
//! independent tables, multi-probe of the next-best buckets, then exact top-k over the union
//! of candidate rows. The exact scan ([`crate::top_k`]) is the reference it is measured against.

use crate::{dot, Hit, TopKHeap};

/// LSH shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LshParams {
    /// Buckets per table (`b`, even): the projection has `b / 2` columns.
    pub buckets: usize,
    /// Independent tables (`L`).
    pub tables: usize,
    pub seed: u64,
}

/// The random projections of all tables.
#[derive(Debug, Clone)]
pub struct Lsh {
    dim: usize,
    params: LshParams,
    /// `tables × (b/2) × dim`, row-major (one projection vector per half-bucket).
    proj: Vec<f32>,
}

/// Bucket lists of one indexed block of rows.
#[derive(Debug, Clone)]
pub struct LshIndex {
    /// `[table][bucket]` → rows in that bucket.
    buckets: Vec<Vec<Vec<u32>>>,
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Lsh {
    /// Draws the projections (standard normal, Box–Muller) from `params.seed`.
    pub fn new(dim: usize, params: LshParams) -> Self {
        assert!(
            params.buckets >= 2 && params.buckets.is_multiple_of(2),
            "buckets must be even ≥ 2"
        );
        let n = params.tables * params.buckets / 2 * dim;
        let mut state = params.seed;
        let mut proj = Vec::with_capacity(n);
        while proj.len() < n {
            let u1 = ((splitmix(&mut state) >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
            let u2 = (splitmix(&mut state) >> 11) as f64 / (1u64 << 53) as f64;
            let r = (-2.0 * u1.ln()).sqrt();
            proj.push((r * (std::f64::consts::TAU * u2).cos()) as f32);
            proj.push((r * (std::f64::consts::TAU * u2).sin()) as f32);
        }
        proj.truncate(n);
        Self { dim, params, proj }
    }

    pub fn params(&self) -> LshParams {
        self.params
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The projections, `tables × (b/2) × dim` row-major: what the GPU kernel `lsh_project`
    /// takes.
    pub fn projection(&self) -> &[f32] {
        &self.proj
    }

    /// `[xR ; −xR]` for one table.
    fn scores(&self, x: &[f32], table: usize, out: &mut Vec<f32>) {
        let half = self.params.buckets / 2;
        out.clear();
        let base = table * half * self.dim;
        for j in 0..half {
            out.push(dot(
                x,
                &self.proj[base + j * self.dim..base + (j + 1) * self.dim],
            ));
        }
        for j in 0..half {
            let v = out[j];
            out.push(-v);
        }
    }

    /// The bucket of `x` in `table`: `argmax([xR ; −xR])`.
    pub fn bucket(&self, x: &[f32], table: usize) -> u32 {
        let mut s = Vec::with_capacity(self.params.buckets);
        self.scores(x, table, &mut s);
        argmax(&s) as u32
    }

    /// The `n` best buckets of `x` in `table`, best first (multi-probe).
    pub fn probes(&self, x: &[f32], table: usize, n: usize) -> Vec<u32> {
        let mut s = Vec::with_capacity(self.params.buckets);
        self.scores(x, table, &mut s);
        let mut idx: Vec<u32> = (0..s.len() as u32).collect();
        idx.sort_by(|&a, &b| s[b as usize].total_cmp(&s[a as usize]).then(a.cmp(&b)));
        idx.truncate(n.max(1));
        idx
    }

    /// Buckets every row of `rows` (row-major, `dim` columns) in every table.
    pub fn index(&self, rows: &[f32]) -> LshIndex {
        let mut buckets = vec![vec![Vec::new(); self.params.buckets]; self.params.tables];
        let mut s = Vec::with_capacity(self.params.buckets);
        for (r, row) in rows.chunks_exact(self.dim).enumerate() {
            for (t, table) in buckets.iter_mut().enumerate() {
                self.scores(row, t, &mut s);
                table[argmax(&s)].push(r as u32);
            }
        }
        LshIndex { buckets }
    }
}

fn argmax(s: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in s.iter().enumerate() {
        if v > s[best] {
            best = i;
        }
    }
    best
}

impl LshIndex {
    /// Top-k by dot product among the rows sharing one of the query's `probes` best buckets in
    /// any table. Returns the hits (block 0) and how many distinct rows were scored.
    pub fn search(
        &self,
        lsh: &Lsh,
        rows: &[f32],
        q: &[f32],
        k: usize,
        probes: usize,
    ) -> (Vec<Hit>, usize) {
        let dim = lsh.dim;
        let n = rows.len() / dim;
        let mut seen = vec![false; n];
        let mut top = TopKHeap::new(k);
        let mut scanned = 0;
        for (t, table) in self.buckets.iter().enumerate() {
            for b in lsh.probes(q, t, probes) {
                for &r in &table[b as usize] {
                    let r = r as usize;
                    if !std::mem::replace(&mut seen[r], true) {
                        scanned += 1;
                        top.push(Hit {
                            score: dot(q, &rows[r * dim..(r + 1) * dim]),
                            block: 0,
                            row: r as u32,
                        });
                    }
                }
            }
        }
        (top.into_sorted(), scanned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        let mut v: Vec<f32> = (0..n * dim)
            .map(|_| ((splitmix(&mut s) >> 40) as f32 / (1u64 << 24) as f32) - 0.5)
            .collect();
        for row in v.chunks_exact_mut(dim) {
            let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            row.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }

    #[test]
    fn buckets_are_deterministic_and_in_range() {
        let p = LshParams {
            buckets: 16,
            tables: 2,
            seed: 7,
        };
        let (a, b) = (Lsh::new(8, p), Lsh::new(8, p));
        let x = data(1, 8, 1);
        assert_eq!(a.bucket(&x, 0), b.bucket(&x, 0));
        assert!(a.bucket(&x, 1) < 16);
        // a vector and its negation land in opposite halves: argmax([xR; −xR]) flips
        let neg: Vec<f32> = x.iter().map(|v| -v).collect();
        assert_eq!((a.bucket(&x, 0) + 8) % 16, a.bucket(&neg, 0));
        assert_eq!(a.probes(&x, 0, 3)[0], a.bucket(&x, 0));
    }

    #[test]
    fn more_tables_and_probes_raise_recall_against_exact() {
        let dim = 32;
        let rows = data(3000, dim, 3);
        let queries: Vec<Vec<f32>> = (0..40)
            .map(|i| {
                // near-duplicates of stored rows, so true neighbours exist
                let base = &rows[(i * 71 % 3000) * dim..][..dim];
                let noise = data(1, dim, 100 + i as u64);
                base.iter().zip(&noise).map(|(a, b)| a + 0.3 * b).collect()
            })
            .collect();
        let recall = |tables: usize, probes: usize| {
            let lsh = Lsh::new(
                dim,
                LshParams {
                    buckets: 16,
                    tables,
                    seed: 11,
                },
            );
            let idx = lsh.index(&rows);
            let mut found = 0;
            for q in &queries {
                let exact = crate::top_k(q, &[&rows], dim, 10);
                let (approx, _) = idx.search(&lsh, &rows, q, 10, probes);
                found += exact
                    .iter()
                    .filter(|e| approx.iter().any(|a| a.row == e.row))
                    .count();
            }
            found as f64 / (10 * queries.len()) as f64
        };
        let (one, many) = (recall(1, 1), recall(8, 2));
        assert!(many > one, "{many} vs {one}");
        assert!(many > 0.6, "recall with 8 tables × 2 probes: {many}");
        // probing every bucket of one table is exact
        assert_eq!(recall(1, 16), 1.0);
    }
}
