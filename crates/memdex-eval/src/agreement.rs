//! A ranker (memdex-kernels' accelerated ranker, on its host fallback or a GPU) checked
//! against the CPU ranker, the reference, on real questions: does each return the same top-k,
//! and how long does a batch take on each side.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use memdex_memory::{MemoryError, Reader};
use memdex_rank::{
    all_one, BatchQuery, BatchRanker, CpuRanker, Query, RankError, RankOptions, SearchHit, TopK,
};
use serde::Serialize;

use crate::ranked::SCAN_BATCH;
use crate::{EvalError, EvalQuestion, Skip};

/// Scores closer than this count as a tie (the kernel scores f16 rows in f32 arithmetic).
pub const TIE: f64 = 1e-3;

/// How a ranker's top-k compare with the CPU ranker's, query by query.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Agreement {
    /// The ranker compared ([`BatchRanker::describe`]).
    pub ranker: String,
    pub k: usize,
    pub batch: usize,
    /// Queries compared (with a tenant the store holds).
    pub queries: usize,
    /// Same items in the same order.
    pub identical: usize,
    /// Different only where the CPU pipeline's scores are within `tie` of each other.
    pub near_ties_only: usize,
    /// Different elsewhere (a real disagreement).
    pub different: usize,
    pub tie: f64,
    /// Largest |ranker score − CPU score| over the items the ranker returned.
    pub max_score_diff: f64,
    /// The CPU ranker, query after query on one thread, per batch (ms).
    pub cpu_ms_per_batch: f64,
    /// The CPU ranker, the batch's queries on all cores at once, per batch (ms).
    pub cpu_parallel_ms_per_batch: f64,
    /// Threads of the parallel CPU ranker (and of a device ranker's BM25 share).
    pub cpu_threads: usize,
    /// One ranker call per batch, everything included (BM25 on all cores, the device's
    /// copies) (ms).
    pub ranker_ms_per_batch: f64,
    /// Batches the ranker ran per device (`cpu`, `cuda:N`; with `auto`, where it put them).
    pub rank_batches: BTreeMap<String, u64>,
}

impl Agreement {
    /// Classifies one query: `all` maps every item of the CPU ranking to its score.
    pub fn add(&mut self, cpu: &[SearchHit], fused: &[SearchHit], all: &HashMap<u64, f64>) {
        self.queries += 1;
        for h in fused {
            if let Some(&s) = all.get(&h.item_id) {
                self.max_score_diff = self.max_score_diff.max((s - f64::from(h.score)).abs());
            }
        }
        let ids = |h: &[SearchHit]| h.iter().map(|x| x.item_id).collect::<Vec<_>>();
        if ids(cpu) == ids(fused) {
            self.identical += 1;
            return;
        }
        let tie = cpu.len() == fused.len()
            && cpu.iter().zip(fused).all(|(c, f)| {
                c.item_id == f.item_id
                    || all
                        .get(&f.item_id)
                        .is_some_and(|&s| (s - f64::from(c.score)).abs() <= TIE)
            });
        if tie {
            self.near_ties_only += 1;
        } else {
            self.different += 1;
        }
    }
}

/// Ranks `queries` through `ranker` and through the CPU ranker, `batch` at a time, over the
/// searcher's store and caches, and compares the top `k`.
pub fn compare_batches(
    reader: &Reader,
    ranker: &dyn BatchRanker,
    queries: &[BatchQuery<'_>],
    k: usize,
    batch: usize,
    opts: &RankOptions,
) -> Result<Agreement, EvalError> {
    let cpu = CpuRanker::default();
    let mut agree = Agreement {
        ranker: ranker.describe(),
        k,
        batch,
        tie: TIE,
        ..Agreement::default()
    };
    let (mut cpu_ms, mut cpu_par_ms, mut ranker_ms, mut batches) = (0.0, 0.0, 0.0, 0usize);
    let top = TopK { k, explain: false };
    for chunk in queries.chunks(batch.max(1)) {
        batches += 1;
        let t = Instant::now();
        let hits = ranker
            .top(&reader.batch(chunk, opts), top)
            .map_err(MemoryError::from)?;
        ranker_ms += t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let b = reader.batch(chunk, opts);
        let one_by_one: Vec<_> = (chunk.iter())
            .map(|q| all_one(&cpu, b.store, b.cache, *q, opts))
            .collect();
        cpu_ms += t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let parallel = cpu
            .all(&reader.batch(chunk, opts))
            .map_err(MemoryError::from)?;
        cpu_par_ms += t.elapsed().as_secs_f64() * 1e3;
        std::hint::black_box(parallel);
        for (ranking, hits) in one_by_one.into_iter().zip(hits) {
            let ranking = match ranking {
                Ok(r) => r,
                Err(RankError::UnknownTenant { .. }) => continue,
                Err(e) => return Err(MemoryError::from(e).into()),
            };
            let all: HashMap<u64, f64> = (0..ranking.len())
                .map(|i| (ranking.item(i).item_id, ranking.scores[i]))
                .collect();
            let hits = hits.map_err(MemoryError::from)?;
            agree.add(&ranking.hits(k), &hits, &all);
        }
    }
    let n = batches.max(1) as f64;
    agree.cpu_ms_per_batch = cpu_ms / n;
    agree.cpu_parallel_ms_per_batch = cpu_par_ms / n;
    agree.cpu_threads = rayon::current_num_threads();
    agree.ranker_ms_per_batch = ranker_ms / n;
    agree.rank_batches = (ranker.counts().into_iter())
        .map(|c| (c.device, c.batches))
        .collect();
    Ok(agree)
}

/// [`compare_batches`] over an evaluation's questions (abstentions left out), in batches of
/// 256, top 10.
pub fn compare_rankers(
    reader: &Reader,
    ranker: &dyn BatchRanker,
    questions: &[EvalQuestion],
    opts: &RankOptions,
) -> Result<Agreement, EvalError> {
    let asked: Vec<&EvalQuestion> = questions
        .iter()
        .filter(|q| q.skip != Some(Skip::Abstention))
        .collect();
    let texts: Vec<&str> = asked.iter().map(|q| q.query.as_str()).collect();
    let vectors = reader.embed_queries(&texts)?;
    let batch: Vec<BatchQuery<'_>> = asked
        .iter()
        .enumerate()
        .map(|(i, q)| BatchQuery {
            tenant: &q.tenant,
            query: Query {
                text: &q.query,
                vector: vectors.row(i),
                date_ms: q.question_date_ms,
            },
        })
        .collect();
    compare_batches(reader, ranker, &batch, 10, SCAN_BATCH, opts)
}
