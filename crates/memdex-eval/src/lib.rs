//! memdex evaluation: LongMemEval and LoCoMo files → a store → a ranking per question →
//! LongMemEval's official retrieval metrics (see `metrics`), with per-type breakdowns and a
//! per-question log that `scripts/eval_crosscheck.py` recomputes independently.

mod agreement;
mod dataset;
mod load;
pub mod metrics;
mod options;
mod ranked;
mod run;
mod synth;

pub use agreement::{compare_batches, compare_rankers, Agreement, TIE as AGREEMENT_TIE};
pub use dataset::{longmemeval_question, Dataset, EvalQuestion, Gold, Skip};
pub use load::{load_and_index, LoadOptions, LoadReport};
pub use memdex_rank::{Bm25Flavour, FragRelScope, FragRelStage, RankOptions, Retriever};
pub use options::EvalOptions;
pub use run::{
    evaluate_questions, percentile, AltGold, EvalConfig, EvalReport, Latency, LevelMetrics, RunInfo,
};
pub use synth::{
    count as synth_count, plan as synth_plan, write_synth, Slot, SynthOptions, SynthReport,
    SynthScale,
};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum EvalError {
    #[error(transparent)]
    Memory(#[from] memdex_memory::MemoryError),
    #[error(transparent)]
    Ingest(#[from] memdex_ingest::IngestError),
    #[error("writing the log: {0}")]
    Log(#[from] std::io::Error),
}
