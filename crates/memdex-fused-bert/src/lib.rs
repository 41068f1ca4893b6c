//! memdex's fused BERT forward pass for CUDA (MiniLM, E5, bge: BERT-family sentence encoders).
//!
//! candle's eager BERT launches about 35 kernels and as many allocations per layer; on an H200
//! a serving batch of 30 queries spent 3.2 ms in that host work for ~10 µs of arithmetic. This
//! crate runs the same model as a fixed [`Plan`] per batch shape ([`Bucket`]): Q, K and V in
//! one product (their weights concatenated at load), bias + GELU in one kernel, residual +
//! LayerNorm in one, attention in one kernel for short sequences (softmax over the real keys;
//! products and a fused masked softmax for long ones), pooling and L2 normalisation on the
//! device with one copy of the pooled vectors back. Every kernel (`kernels/cuda/encoder/bert.cu`)
//! has a CPU reference ([`reference`]); [`CpuBert`] runs a whole plan on them; with the `cuda`
//! feature `cuda::CudaBert` runs it on a device — products on cuBLAS, buffers kept per bucket,
//! each bucket's pass captured once as a CUDA graph and replayed, on a stream of its own.
//! memdex-embed chooses it with `--cuda-encoder fused` (`MEMDEX_CUDA_ENCODER`); candle's BERT
//! stays the reference and the default.

mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod plan;
pub mod reference;
mod shape;

pub use cpu::CpuBert;
pub use plan::{Arg, Buf, Gemm, Kernel, Op, Plan, Scratch};
pub use shape::{Act, Bucket, Shape, Tensor, Weights, MAX_HIDDEN};

/// The PTX of `kernels/cuda/encoder/*.cu` (empty without nvcc at build time).
pub mod ptx {
    include!(concat!(env!("OUT_DIR"), "/ptx.rs"));
}

#[derive(Debug, thiserror::Error)]
pub enum FusedError {
    #[error("the fused encoder does not run this model: {0}")]
    Shape(String),
    #[error("invalid batch: {0}")]
    Input(String),
    #[error("this memdex was built without the fused encoder's PTX (nvcc)")]
    NoPtx,
    #[error("CUDA: {0}")]
    Cuda(String),
}

/// The ids (`bucket.rows()`, each sequence padded with `pad` to `bucket.len`) and lengths
/// (`bucket.batch`; sequences past `seqs` are one `pad` token) of a batch. Refuses a batch
/// that does not fit the bucket or the model (an id past the vocabulary, a sequence past the
/// positions).
pub fn pack_batch(
    shape: &Shape,
    seqs: &[&[u32]],
    bucket: Bucket,
    pad: u32,
) -> Result<(Vec<u32>, Vec<u32>), FusedError> {
    let bad = |why: String| Err(FusedError::Input(why));
    if seqs.len() > bucket.batch || bucket.len > shape.max_positions {
        return bad(format!(
            "{} sequences in a bucket of {} (length {}, model positions {})",
            seqs.len(),
            bucket.batch,
            bucket.len,
            shape.max_positions
        ));
    }
    if pad as usize >= shape.vocab {
        return bad(format!("padding id {pad} past the vocabulary"));
    }
    let mut ids = vec![pad; bucket.rows()];
    let mut lengths = vec![1u32; bucket.batch];
    for (b, s) in seqs.iter().enumerate() {
        if s.len() > bucket.len {
            return bad(format!(
                "a sequence of {} tokens in a bucket of {}",
                s.len(),
                bucket.len
            ));
        }
        if let Some(&id) = s.iter().find(|&&id| id as usize >= shape.vocab) {
            return bad(format!(
                "token id {id} past the vocabulary of {}",
                shape.vocab
            ));
        }
        ids[b * bucket.len..b * bucket.len + s.len()].copy_from_slice(s);
        lengths[b] = s.len().max(1) as u32;
    }
    Ok((ids, lengths))
}
