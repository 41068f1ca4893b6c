//! A question's ranking as corpus ids (with its gold), and the batches questions are ranked in
//! when the ranker batches (a device).

use std::time::Instant;

use memdex_embed::Embeddings;
use memdex_memory::{MemoryError, Reader};
use memdex_rank::{BatchQuery, Query, Ranking};

use crate::dataset::{EvalQuestion, Gold, Skip};
use crate::options::EvalOptions;
use crate::EvalError;

/// Questions ranked together by a batching ranker.
pub(crate) const SCAN_BATCH: usize = 256;

/// The batch of questions starting at `qi`: where it ends, and the questions in it that are
/// ranked (abstentions are not).
pub(crate) fn batch_window(questions: &[EvalQuestion], qi: usize) -> (usize, Vec<usize>) {
    let end = (qi + SCAN_BATCH).min(questions.len());
    let wanted = (qi..end)
        .filter(|&i| questions[i].skip != Some(Skip::Abstention))
        .collect();
    (end, wanted)
}

/// One question's ranking as corpus ids, with its gold.
pub(crate) struct Ranked {
    /// Corpus ids in timeline order, after the official renaming.
    pub ids: Vec<String>,
    /// The same before renaming (the alternative gold's turn → session rule reads them).
    pub raw_ids: Vec<String>,
    pub scores: Vec<f64>,
    pub order: Vec<usize>,
}

impl Ranked {
    pub(crate) fn ranked(&self) -> Vec<&str> {
        self.order.iter().map(|&i| self.ids[i].as_str()).collect()
    }

    /// The gold ids: those marked in the corpus (LongMemEval) or listed (LoCoMo).
    pub(crate) fn gold<'a>(&'a mut self, gold: &'a Gold) -> Vec<&'a str> {
        match gold {
            Gold::ContainsAnswer { rename } => {
                for id in self.ids.iter_mut() {
                    if rename.contains(id.as_str()) {
                        *id = id.replace("answer", "noans");
                    }
                }
                let mut g: Vec<&str> = self
                    .ids
                    .iter()
                    .map(String::as_str)
                    .filter(|i| i.contains("answer"))
                    .collect();
                g.sort_unstable();
                g.dedup();
                g
            }
            Gold::Ids(g) => g.iter().map(String::as_str).collect(),
        }
    }
}

/// A ranking as the metrics read it: corpus ids in timeline order, scores, order.
pub(crate) fn ranked(r: &Ranking<'_>, opts: &EvalOptions) -> Ranked {
    let raw_ids: Vec<String> = (0..r.len())
        .map(|i| {
            let it = r.item(i);
            opts.dataset
                .base_id(opts.granularity, it.session_id, it.turn)
        })
        .collect();
    Ranked {
        ids: raw_ids.clone(),
        raw_ids,
        scores: r.scores.clone(),
        order: r.order.clone(),
    }
}

/// The current batch's whole rankings from a batching ranker: one ranker call per
/// [`SCAN_BATCH`] questions, its time shared among them.
#[derive(Default)]
pub(crate) struct Ahead {
    /// First question of the batch; per question of the batch its ranking (None: abstention
    /// or a tenant without items).
    start: usize,
    ranked: Vec<Option<Ranked>>,
    ms_each: f64,
}

impl Ahead {
    /// Question `qi`'s ranking (None: its tenant has no items) and its share of the batch's
    /// time in ms, ranking the next batch first when `qi` is past this one.
    pub(crate) fn take(
        &mut self,
        reader: &Reader,
        questions: &[EvalQuestion],
        qvecs: &Embeddings,
        qi: usize,
        opts: &EvalOptions,
    ) -> Result<(Option<Ranked>, f64), EvalError> {
        if self.ranked.is_empty() || qi >= self.start + self.ranked.len() {
            self.rank_batch(reader, questions, qvecs, qi, opts)?;
        }
        let r = self.ranked.get_mut(qi - self.start).and_then(Option::take);
        Ok((r, self.ms_each))
    }

    fn rank_batch(
        &mut self,
        reader: &Reader,
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
        let rankings = reader.rank_batch(&batch, &opts.rank)?;
        self.start = qi;
        self.ranked = (qi..end).map(|_| None).collect();
        for (&i, r) in wanted.iter().zip(rankings) {
            self.ranked[i - qi] = match r {
                Ok(r) => Some(ranked(&r, opts)),
                Err(MemoryError::NotFound(_)) => None,
                Err(e) => return Err(e.into()),
            };
        }
        self.ms_each = t.elapsed().as_secs_f64() * 1e3 / wanted.len().max(1) as f64;
        Ok(())
    }
}
