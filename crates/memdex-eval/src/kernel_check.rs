//! The fused default ranking (`Searcher::search_fused`: memdex-kernels' `rank_topk` on its CPU
//! reference or a GPU) checked against the CPU pipeline on real questions: does each return
//! the same top-k, and how long does a batch take on each side.

use std::collections::HashMap;
use std::time::Instant;

use memdex_core::TextKind;
use memdex_embed::Embeddings;
use memdex_kernels::Kernels;
use memdex_pipeline::{BatchQuery, EngineError, FusedRanking, Searcher};
use memdex_rank::{Query, RankError, RankOptions, SearchHit};
use serde::Serialize;

use crate::options::EvalOptions;
use crate::ranked::{batch_window, Ranked, SCAN_BATCH};
use crate::{EvalError, EvalQuestion, Skip};

/// Scores closer than this count as a tie (the kernel scores f16 rows in f32 arithmetic).
pub const TIE: f64 = 1e-3;

/// How the fused ranking's top-k compare with the CPU pipeline's, query by query.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FusedAgreement {
    /// Where the kernels ran (`cpu`: their reference; `cuda:N`).
    pub device: String,
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
    /// Largest |fused score − CPU score| over the items the fused ranking returned.
    pub max_score_diff: f64,
    /// The CPU pipeline, query after query, per batch (ms).
    pub cpu_ms_per_batch: f64,
    /// The CPU pipeline, the batch's queries on all cores at once, per batch (ms).
    pub cpu_parallel_ms_per_batch: f64,
    /// Threads of the parallel CPU pipeline (and of the fused path's BM25 share).
    pub cpu_threads: usize,
    /// One fused call per batch, BM25 (on all cores) and the device's copies included (ms).
    pub fused_ms_per_batch: f64,
}

impl FusedAgreement {
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

/// Ranks `queries` both ways, `batch` at a time, and compares the top `k`.
pub fn compare_batches(
    searcher: &Searcher,
    kernels: &dyn Kernels,
    queries: &[BatchQuery<'_>],
    k: usize,
    batch: usize,
    opts: &RankOptions,
) -> Result<FusedAgreement, EvalError> {
    let mut agree = FusedAgreement {
        device: kernels.device(),
        k,
        batch,
        tie: TIE,
        ..FusedAgreement::default()
    };
    let (mut cpu_ms, mut cpu_par_ms, mut fused_ms, mut batches) = (0.0, 0.0, 0.0, 0usize);
    for chunk in queries.chunks(batch.max(1)) {
        batches += 1;
        let t = Instant::now();
        let fused = searcher.search_fused(kernels, chunk, k, opts)?;
        fused_ms += t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let cpu: Vec<_> = chunk
            .iter()
            .map(|q| searcher.rank(q.tenant, &q.query, opts))
            .collect();
        cpu_ms += t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let parallel = searcher.rank_parallel(chunk, opts);
        cpu_par_ms += t.elapsed().as_secs_f64() * 1e3;
        std::hint::black_box(parallel);
        for (ranking, hits) in cpu.into_iter().zip(fused) {
            let ranking = match ranking {
                Ok(r) => r,
                Err(EngineError::Rank(RankError::UnknownTenant { .. })) => continue,
                Err(e) => return Err(e.into()),
            };
            let all: HashMap<u64, f64> = (0..ranking.len())
                .map(|i| (ranking.item(i).item_id, ranking.scores[i]))
                .collect();
            agree.add(&ranking.hits(k), &hits?, &all);
        }
    }
    agree.cpu_ms_per_batch = cpu_ms / batches.max(1) as f64;
    agree.cpu_parallel_ms_per_batch = cpu_par_ms / batches.max(1) as f64;
    agree.cpu_threads = rayon::current_num_threads();
    agree.fused_ms_per_batch = fused_ms / batches.max(1) as f64;
    Ok(agree)
}

/// [`compare_batches`] over an evaluation's questions (abstentions left out), in batches of
/// 256, top 10.
pub fn compare_fused(
    searcher: &Searcher,
    kernels: &dyn Kernels,
    questions: &[EvalQuestion],
    opts: &RankOptions,
) -> Result<FusedAgreement, EvalError> {
    let asked: Vec<&EvalQuestion> = questions
        .iter()
        .filter(|q| q.skip != Some(Skip::Abstention))
        .collect();
    let texts: Vec<&str> = asked.iter().map(|q| q.query.as_str()).collect();
    let vectors = searcher.encoder().embed(&texts, TextKind::Query)?;
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
    compare_batches(searcher, kernels, &batch, 10, SCAN_BATCH, opts)
}

/// The current batch's whole rankings from the fused kernel (`Searcher::rank_fused_all`): one
/// kernel call per [`SCAN_BATCH`] questions, its time shared among them.
#[derive(Default)]
pub(crate) struct FusedScan {
    /// First question of the batch; per question of the batch its ranking (None: abstention
    /// or a tenant without items).
    start: usize,
    ranked: Vec<Option<Ranked>>,
    ms_each: f64,
}

impl FusedScan {
    /// Question `qi`'s ranking (None: its tenant has no items) and its share of the batch's
    /// time in ms, ranking the next batch first when `qi` is past this one.
    pub(crate) fn take(
        &mut self,
        searcher: &Searcher,
        kernels: &dyn Kernels,
        questions: &[EvalQuestion],
        qvecs: &Embeddings,
        qi: usize,
        opts: &EvalOptions,
    ) -> Result<(Option<Ranked>, f64), EvalError> {
        if self.ranked.is_empty() || qi >= self.start + self.ranked.len() {
            self.rank_batch(searcher, kernels, questions, qvecs, qi, opts)?;
        }
        let r = self.ranked.get_mut(qi - self.start).and_then(Option::take);
        Ok((r, self.ms_each))
    }

    fn rank_batch(
        &mut self,
        searcher: &Searcher,
        kernels: &dyn Kernels,
        questions: &[EvalQuestion],
        qvecs: &Embeddings,
        qi: usize,
        opts: &EvalOptions,
    ) -> Result<(), EvalError> {
        let t = Instant::now();
        let (end, wanted) = batch_window(questions, qi);
        let batch: Vec<BatchQuery<'_>> = wanted
            .iter()
            .map(|&i| BatchQuery {
                tenant: &questions[i].tenant,
                query: Query {
                    text: &questions[i].query,
                    vector: qvecs.row(i),
                    date_ms: questions[i].question_date_ms,
                },
            })
            .collect();
        let rankings = searcher.rank_fused_all(kernels, &batch, &opts.rank)?;
        self.start = qi;
        self.ranked = (qi..end).map(|_| None).collect();
        for (&i, r) in wanted.iter().zip(rankings) {
            self.ranked[i - qi] = match r {
                Ok(r) => Some(ranked(r, opts)),
                Err(EngineError::Rank(RankError::UnknownTenant { .. })) => None,
                Err(e) => return Err(e.into()),
            };
        }
        self.ms_each = t.elapsed().as_secs_f64() * 1e3 / wanted.len().max(1) as f64;
        Ok(())
    }
}

/// A fused ranking as the metrics read it: corpus ids in timeline order, scores, order.
fn ranked(r: FusedRanking<'_>, opts: &EvalOptions) -> Ranked {
    let raw_ids: Vec<String> = r
        .items
        .iter()
        .map(|it| {
            opts.dataset
                .base_id(opts.granularity, it.session_id, it.turn)
        })
        .collect();
    Ranked {
        ids: raw_ids.clone(),
        raw_ids,
        scores: r.scores,
        order: r.order,
    }
}
