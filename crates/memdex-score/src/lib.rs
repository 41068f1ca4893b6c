//! memdex scoring: exact cosine top-k over contiguous embedding blocks, the
//! official whitespace BM25, and score fusion.
//!
//! Inputs are plain row-major `&[f32]` blocks (a tenant's slices of the mmapped store), so
//! this crate needs neither Arrow nor candle. Every fast path has a slow reference beside it
//! (`reference` module) and a test comparing the two.

pub mod bm25;
pub mod dense;
mod exact;
pub mod fragrel;
pub mod fusion;
pub mod lsh;
pub mod reference;
pub mod signals;
pub mod text;

pub use dense::{check_request, Block, CpuScorer, DenseScorer, Run, ScoreError};
pub use exact::{dot, top_k, Hit, TopKHeap};
