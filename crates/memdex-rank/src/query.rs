//! One query as the ranking reads it, and where its dense scores come from.

use memdex_score::DenseScorer;

/// One query: its text (BM25, the time stage), vector (dense) and date (recency and time
/// references; default: the newest item's date).
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    pub text: &'a str,
    pub vector: &'a [f32],
    pub date_ms: Option<i64>,
}

/// Where a ranking's dense scores come from.
#[derive(Debug, Clone, Copy)]
pub enum Dense<'a> {
    /// Computed now by this scorer (the CPU loop, usually).
    Scorer(&'a dyn DenseScorer),
    /// Computed elsewhere (a device scan of a whole batch), one per live row of the tenant in
    /// timeline order; any other length is an error.
    Scores(&'a [f32]),
}
