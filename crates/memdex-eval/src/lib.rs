//! memdex evaluation: LongMemEval and LoCoMo files → a store → a ranking per question →
//! LongMemEval's official retrieval metrics (see `metrics`), with per-type breakdowns and a
//! per-question log that `scripts/eval_crosscheck.py` recomputes independently.

mod dataset;
mod kernel_check;
mod load;
pub mod metrics;
mod options;
mod ranked;
mod run;
mod synth;

pub use dataset::{longmemeval_question, Dataset, EvalQuestion, Gold, Skip};
pub use kernel_check::{compare_batches, compare_fused, FusedAgreement, TIE as FUSED_TIE};
pub use load::{load_and_index, load_and_index_with, LoadOptions, LoadReport};
pub use memdex_rank::{Bm25Flavour, FragRelScope, FragRelStage, RankOptions, Retriever};
pub use options::EvalOptions;
pub use run::{
    evaluate_questions, evaluate_questions_with, percentile, AltGold, EvalConfig, EvalReport,
    Latency, LevelMetrics, RunInfo,
};
pub use synth::{
    count as synth_count, plan as synth_plan, write_synth, Profile, Slot, SynthOptions, SynthReport,
};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum EvalError {
    #[error(transparent)]
    Engine(#[from] memdex_pipeline::EngineError),
    #[error(transparent)]
    Ingest(#[from] memdex_ingest::IngestError),
    #[error(transparent)]
    Embed(#[from] memdex_embed::EmbedError),
    #[error(transparent)]
    Store(#[from] memdex_store::StoreError),
    #[error("writing the log: {0}")]
    Log(#[from] std::io::Error),
}
