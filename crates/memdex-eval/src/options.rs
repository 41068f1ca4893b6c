//! Evaluation settings.

use memdex_core::Granularity;
use memdex_rank::RankOptions;

use crate::dataset::Dataset;

/// Evaluation settings.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalOptions {
    pub dataset: Dataset,
    pub granularity: Granularity,
    pub ks: Vec<usize>,
    /// The ranking pipeline under test.
    pub rank: RankOptions,
}
