//! A question's ranking as corpus ids (with its gold), and the batches questions are ranked in
//! on a batched scorer or the fused kernel.

use crate::dataset::{EvalQuestion, Gold, Skip};

/// Questions scored together on a batched (device) scorer or the fused kernel.
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
