//! memdex's CUDA kernels (see README.md): the PTX built from `kernels/cuda/*.cu`, the CPU reference of
//! every kernel ([`cpu::Cpu`]), launch wrappers on candle's CUDA device (`gpu`, feature `cuda`),
//! and [`test_device!`], which runs one test body on every device this build and machine have.
//!
//! Every kernel is reached through a trait ([`RankKernels`], [`HashKernels`], the bench side's
//! [`ScanKernels`]; [`Kernels`] is all three), so tests and benchmarks compare the devices on
//! identical inputs. [`KernelRanker`] puts the fused ranking behind memdex-rank's
//! ranking seam ([`memdex_rank::BatchRanker`]): the accelerated ranker, with the CPU ranker as
//! its fallback and a per-batch cost model ([`Placement::Auto`]).

pub mod checks;
pub mod cpu;
pub mod expand;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod parts;
pub mod rank;
mod ranker;
pub mod scan;
mod scoring;
pub mod staging;
pub mod text;
mod text_inputs;
pub mod tiles;
mod types;

pub use half::f16;
pub use parts::{Assembly, AssemblyGate, Concatenated, RankPart};
pub use rank::{range_offsets, RankParams, RankQueries, RankRows, TimeRule};
pub use ranker::{BatchSeconds, CostModel, KernelRanker, Placement, Side, PROBE_EVERY};
pub use scan::ScanKernels;
pub use text::{PartText, TextExpand, TextQueries, MAX_TEXT_EXPAND_TERMS};
pub use text_inputs::text_inputs_reference;
pub use types::{
    splits_for, BucketMask, FragRelParams, Matrix, Timeline, TopKResult, MAX_SPLITS, NO_ROW,
};

/// PTX text of each `kernels/cuda/*.cu`, named after the file (`SEGMENTED_TOPK` for
/// `segmented_topk.cu`); empty strings when built without nvcc (`AVAILABLE == false`).
pub mod ptx {
    include!(concat!(env!("OUT_DIR"), "/ptx.rs"));
}

/// Largest `k` the kernels keep per query (shared-memory lists).
pub const MAX_K: usize = 128;
/// Largest embedding dimension (16-byte chunks per lane held in registers).
pub const MAX_DIM: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("invalid kernel input: {0}")]
    Invalid(String),
    #[error("memdex-kernels was built without nvcc (set MEMDEX_NVCC=1): no PTX to load")]
    NoPtx,
    #[cfg(feature = "cuda")]
    #[error("CUDA: {0}")]
    Cuda(#[from] candle_core::Error),
}

/// A device memdex's kernels run on. Inputs live in host memory in every kernel trait (the
/// GPU implementation uploads them per call); `gpu::Gpu` also has device-resident entry points
/// for benchmarks. The kernels come in three traits, so that each user implements only what
/// it calls: [`RankKernels`] (the fused ranking: the accelerated ranker), [`HashKernels`]
/// (TiM's bucket ids: the write path), and the bench side's scans ([`scan::ScanKernels`]:
/// `gpu_bench` and the device checks). [`Kernels`] is all three, what the checks run over.
pub trait KernelDevice {
    /// `cpu` or `cuda:N`.
    fn device(&self) -> String;

    /// Disagreements the device found in its own work and recovered from, oldest first: the
    /// CUDA kernels' `gather_parts` building other rows than the per-part copies on the first
    /// batch ([`AssemblyGate`]; the copies build every batch from then on). The answers stay
    /// right, so only this says the kernel is wrong: a check run on a device that reports a
    /// new fault fails ([`checks::run`]). None by default.
    fn faults(&self) -> Vec<String> {
        Vec::new()
    }
}

/// TiM's hashing on a device: what the write path (`memdex-pipeline`) calls.
pub trait HashKernels: KernelDevice {
    /// TiM bucket ids of `x` (`n × dim`, row-major) in every table: `n × tables` ids,
    /// `argmax([x R_t ; −x R_t])` with the first maximum winning. `proj` is
    /// `tables × (buckets/2) × dim` ([`memdex_score::lsh::Lsh::projection`]).
    fn lsh_project(
        &self,
        x: &[f32],
        dim: usize,
        proj: &[f32],
        tables: usize,
        buckets: usize,
    ) -> Result<Vec<u32>, KernelError>;
}

/// The fused ranking on a device: what the accelerated ranker ([`KernelRanker`]) calls.
pub trait RankKernels: KernelDevice {
    /// memdex's default ranking pipeline for a batch of queries, fused (semantics in
    /// [`rank`]): the top `k` live rows of each query's range.
    fn rank_topk(
        &self,
        m: &Matrix<'_>,
        rows: &RankRows<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError>;

    /// [`RankKernels::rank_topk`] without the selection: every row of each query's range gets its
    /// final score (the ranges concatenated as in [`range_offsets`]; dead rows −∞). The time
    /// stage's `front` rule is left to the caller (it orders flagged rows first); `boost` is
    /// applied. For callers that need the whole order (evaluation metrics).
    fn rank_scores(
        &self,
        m: &Matrix<'_>,
        rows: &RankRows<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
    ) -> Result<Vec<f32>, KernelError>;

    /// [`RankKernels::rank_topk`] over rows given in parts, one per tenant ([`parts`]): the
    /// queries' ranges index the parts concatenated in order, each range within one part, every
    /// row live. The default concatenates them on the host; the CUDA kernels keep keyed parts
    /// resident on the device and upload only the parts they have not seen.
    fn rank_topk_parts(
        &self,
        dim: usize,
        parts: &[RankPart<'_>],
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        let c = Concatenated::new(dim, parts, queries)?;
        self.rank_topk(&c.matrix(), &c.rows(), queries, params, k)
    }

    /// [`RankKernels::rank_topk_parts`] with each query's BM25 scores and time flags computed by
    /// the kernels from its part's text columns (`texts`, one per part: postings, dates) and
    /// its term ids and window (`text`); `queries.sparse` and `flags` are not read. With
    /// [`TextQueries::expand`] they also pick each query's expansion terms from its part's
    /// candidates and return its whole keyword share (`params.sparse_fused` must say so). The
    /// default computes them on the host ([`text_inputs_reference`]); the CUDA kernels keep
    /// keyed part texts resident and compute them on the device.
    #[allow(clippy::too_many_arguments)]
    fn rank_topk_text(
        &self,
        dim: usize,
        parts: &[RankPart<'_>],
        texts: &[PartText<'_>],
        text: &TextQueries<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        let (sparse, flags) = text_inputs_reference(dim, parts, texts, text, queries, params)?;
        let q = RankQueries {
            sparse: &sparse,
            flags: &flags,
            ..*queries
        };
        self.rank_topk_parts(dim, parts, &q, params, k)
    }

    /// [`RankKernels::rank_scores`] over rows given in parts (as [`RankKernels::rank_topk_parts`]).
    fn rank_scores_parts(
        &self,
        dim: usize,
        parts: &[RankPart<'_>],
        queries: &RankQueries<'_>,
        params: &RankParams,
    ) -> Result<Vec<f32>, KernelError> {
        let c = Concatenated::new(dim, parts, queries)?;
        self.rank_scores(&c.matrix(), &c.rows(), queries, params)
    }
}

/// Every kernel of a device: ranking, hashing and the bench side's scans. The device checks
/// ([`checks`]) and `kernels_check` run over it; implemented for whatever implements the
/// three.
pub trait Kernels: RankKernels + HashKernels + ScanKernels {}

impl<T: RankKernels + HashKernels + ScanKernels + ?Sized> Kernels for T {}

/// Runs one test body on every device: always on the CPU reference (test `cpu_vs_brute_force`:
/// the checks compare it with their brute force, not with itself), and on `cuda:0` when the
/// crate is built with `cuda` and a device answers. Without a device the CUDA test writes
/// `SKIPPED …` straight to stderr (past the test harness's capture, so the run's output shows
/// it) and passes, unless `MEMDEX_REQUIRE_CUDA=1` (set by `scripts/gpu-check.sh` on the GPU
/// box, where every device test runs), where it fails.
///
/// ```ignore
/// fn body(k: &dyn memdex_kernels::Kernels) { /* … */ }
/// memdex_kernels::test_device!(my_test, body);
/// ```
#[macro_export]
macro_rules! test_device {
    ($name:ident, $body:path) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            /// The CPU kernels against the brute force (the comparisons with the CPU kernels
            /// themselves are skipped: see `checks::against_cpu_kernels`).
            #[test]
            fn cpu_vs_brute_force() {
                $body(&$crate::cpu::Cpu);
            }

            #[cfg(feature = "cuda")]
            #[test]
            fn cuda() {
                match $crate::gpu::Gpu::new(0) {
                    Ok(gpu) => $body(&gpu),
                    Err(e) if std::env::var("MEMDEX_REQUIRE_CUDA").as_deref() == Ok("1") => {
                        panic!("MEMDEX_REQUIRE_CUDA=1 but no CUDA device: {e}")
                    }
                    Err(e) => {
                        use std::io::Write as _;
                        // not eprintln!: the harness captures that for passing tests
                        let _ = writeln!(
                            std::io::stderr(),
                            "SKIPPED {}::cuda (no CUDA device: {e})",
                            stringify!($name)
                        );
                    }
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn ptx_present_when_built_with_nvcc() {
        let all = [
            super::ptx::LSH_PROJECT,
            super::ptx::SEGMENTED_TOPK,
            super::ptx::FRAGREL_ENV,
            super::ptx::RANK,
        ];
        if super::ptx::AVAILABLE {
            assert!(super::ptx::SCALE.contains(".entry memdex_scale_f32"));
            assert!(all[0].contains(".entry memdex_lsh_project"));
            assert!(all[1].contains(".entry memdex_topk_merge"));
            assert!(all[2].contains(".entry memdex_fragrel_topk("));
            assert!(all[2].contains(".entry memdex_fragrel_topk_d512"));
            assert!(all[3].contains(".entry memdex_rank_topk("));
            // every instantiation the host may launch of the tiled scans
            use crate::tiles::{TileWidth, Tiled};
            for (kernel, ptx) in [(Tiled::Scan, all[1]), (Tiled::Dense, all[3])] {
                for dim in [384, 1024] {
                    for w in [TileWidth::One, TileWidth::Four, TileWidth::Sixteen] {
                        let name = kernel.name(dim, w);
                        assert!(ptx.contains(&format!(".entry {name}(")), "{name}");
                    }
                }
            }
            assert!(super::ptx::QUERY_INPUTS.contains(".entry memdex_query_inputs"));
            assert!(super::ptx::GATHER_PARTS.contains(".entry memdex_gather_parts"));
            assert!(super::ptx::TENSOR_TOPK.contains(".entry memdex_tensor_topk("));
        } else {
            assert!(all.iter().all(|p| p.is_empty()));
        }
    }
}
