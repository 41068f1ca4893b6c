use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rayon::prelude::*;

/// One search result: the score and where the row lives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub score: f32,
    /// Index of the block (e.g. tenant slice) in the input.
    pub block: u32,
    /// Row inside the block.
    pub row: u32,
}

impl Hit {
    /// Ranking order: higher score first; ties broken by lower (block, row), i.e. storage
    /// order, so results are deterministic. NaN scores rank last.
    pub fn rank_cmp(&self, other: &Hit) -> Ordering {
        match (self.score.is_nan(), other.score.is_nan()) {
            (false, true) => return Ordering::Less,
            (true, false) => return Ordering::Greater,
            _ => {}
        }
        other
            .score
            .partial_cmp(&self.score)
            .unwrap_or(Ordering::Equal)
            .then(self.block.cmp(&other.block))
            .then(self.row.cmp(&other.row))
    }
}

/// Heap entry ordered so that the *worst* kept hit is at the top of a max-heap.
#[derive(Clone, Copy)]
struct Worst(Hit);
impl PartialEq for Worst {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Worst {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.rank_cmp(&o.0)
    }
}

/// Bounded selection of the k best hits (by [`Hit::rank_cmp`]).
#[derive(Clone)]
pub struct TopKHeap {
    k: usize,
    heap: BinaryHeap<Worst>,
}

impl std::fmt::Debug for TopKHeap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TopKHeap")
            .field("k", &self.k)
            .field("len", &self.heap.len())
            .finish()
    }
}

impl TopKHeap {
    pub fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    #[inline]
    pub fn push(&mut self, hit: Hit) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(Worst(hit));
        } else if let Some(mut top) = self.heap.peek_mut() {
            if hit.rank_cmp(&top.0) == Ordering::Less {
                *top = Worst(hit);
            }
        }
    }

    pub fn merge(mut self, other: TopKHeap) -> TopKHeap {
        for w in other.heap {
            self.push(w.0);
        }
        self
    }

    /// The kept hits, best first.
    pub fn into_sorted(self) -> Vec<Hit> {
        let mut v: Vec<Hit> = self.heap.into_iter().map(|w| w.0).collect();
        v.sort_by(Hit::rank_cmp);
        v
    }
}

/// Dot product, vectorised: 16 independent accumulators over exact chunks keep LLVM in SIMD
/// registers without reassociating one sum. On x86-64 CPUs with AVX2 + FMA (detected at run
/// time) it runs a copy compiled for them; elsewhere plain multiply-add, which the baseline
/// target vectorises too (`mul_add` without compile-time FMA would be a libm call per element).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        #[allow(unsafe_code)]
        return unsafe { dot_avx2_fma(a, b) };
    }
    dot_lanes(a, b, |x, y, acc| x * y + acc)
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn dot_avx2_fma(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes(a, b, f32::mul_add)
}

#[inline(always)]
fn dot_lanes(a: &[f32], b: &[f32], fma: impl Fn(f32, f32, f32) -> f32) -> f32 {
    const LANES: usize = 16;
    let mut acc = [0.0f32; LANES];
    let (ca, ra) = a.split_at(a.len() / LANES * LANES);
    let (cb, rb) = b.split_at(ca.len());
    for (x, y) in ca.chunks_exact(LANES).zip(cb.chunks_exact(LANES)) {
        for i in 0..LANES {
            acc[i] = fma(x[i], y[i], acc[i]);
        }
    }
    let mut tail = 0.0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail = fma(*x, *y, tail);
    }
    // pairwise reduction of the lanes
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for i in 0..w {
            acc[i] += acc[i + w];
        }
    }
    acc[0] + tail
}

/// Rows scored per parallel task.
const CHUNK_ROWS: usize = 2048;

/// Exact top-k by dot product of `query` against every row of every block (row-major, `dim`
/// columns). With unit-norm rows and query this is cosine similarity. Parallel over chunks of
/// rows with rayon; each task keeps its own bounded heap, merged at the end.
pub fn top_k(query: &[f32], blocks: &[&[f32]], dim: usize, k: usize) -> Vec<Hit> {
    assert_eq!(query.len(), dim, "query dimension");
    let tasks: Vec<(u32, usize, &[f32])> = blocks
        .iter()
        .enumerate()
        .flat_map(|(b, block)| {
            assert_eq!(
                block.len() % dim,
                0,
                "block length is not a multiple of dim"
            );
            block
                .chunks(CHUNK_ROWS * dim)
                .enumerate()
                .map(move |(c, chunk)| (b as u32, c * CHUNK_ROWS, chunk))
        })
        .collect();
    let scan = |&(b, first_row, chunk): &(u32, usize, &[f32])| {
        let mut top = TopKHeap::new(k);
        for (i, row) in chunk.chunks_exact(dim).enumerate() {
            top.push(Hit {
                score: dot(query, row),
                block: b,
                row: (first_row + i) as u32,
            });
        }
        top
    };
    let total_rows: usize = blocks.iter().map(|b| b.len() / dim).sum();
    let top = if total_rows < 4 * CHUNK_ROWS {
        tasks
            .iter()
            .map(scan)
            .fold(TopKHeap::new(k), TopKHeap::merge)
    } else {
        tasks
            .par_iter()
            .map(scan)
            .reduce(|| TopKHeap::new(k), TopKHeap::merge)
    };
    top.into_sorted()
}
