//! memdex retrieval indexes. Now: exact cosine top-k over contiguous embedding blocks.
//!
//! Inputs are plain row-major `&[f32]` blocks (a tenant's slices of the mmapped store), so
//! this crate needs neither Arrow nor candle. Every fast path has a slow reference beside it
//! (`reference` module) and a test comparing the two.

mod exact;
pub mod reference;

pub use exact::{dot, top_k, Hit, TopK};
