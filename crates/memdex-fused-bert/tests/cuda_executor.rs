//! The CUDA executor on a device against the plan's CPU reference, with random models (no
//! files): MiniLM's widths and a narrow model, serving-sized batches (one-kernel attention)
//! and long ones (attention as cuBLAS products and the softmax kernel), graphs replayed and
//! launches one by one. Without a device: SKIPPED, or a failure under `MEMDEX_REQUIRE_CUDA=1`
//! (scripts/gpu-check.sh sets it on the GPU box).
#![allow(clippy::unwrap_used)]

#[cfg(not(feature = "cuda"))]
#[test]
fn device_passes_match_the_cpu_reference() {
    eprintln!("SKIPPED: built without the `cuda` feature (scripts/build-cuda.sh builds it)");
}

#[cfg(feature = "cuda")]
mod common;

#[cfg(feature = "cuda")]
use {
    candle_core::Device,
    common::{cosine, Rng},
    memdex_core::Pooling,
    memdex_fused_bert::cuda::CudaBert,
    memdex_fused_bert::{Act, CpuBert},
};

#[cfg(feature = "cuda")]
fn context() -> Option<std::sync::Arc<candle_core::cuda_backend::cudarc::driver::CudaContext>> {
    match Device::new_cuda(0) {
        Ok(d) => Some(d.as_cuda_device().unwrap().cuda_stream().context().clone()),
        Err(e) if std::env::var("MEMDEX_REQUIRE_CUDA").as_deref() == Ok("1") => {
            panic!("MEMDEX_REQUIRE_CUDA=1 but no CUDA device: {e}")
        }
        Err(e) => {
            eprintln!(
                "SKIPPED: no CUDA device ({e}); the fused executor's device test did not run"
            );
            None
        }
    }
}

#[cfg(feature = "cuda")]
#[test]
fn device_passes_match_the_cpu_reference() {
    let Some(ctx) = context() else { return };
    let mut rng = Rng(21);
    for (hidden, heads, pooling) in [(384usize, 12usize, Pooling::Mean), (64, 2, Pooling::Cls)] {
        let shape = common::shape(hidden, heads, 2, Act::Gelu, pooling);
        let w = common::weights(&shape, &mut rng);
        let cpu = CpuBert::new(shape, &w).unwrap();
        let mut dev = CudaBert::new(&ctx, shape, &w, 0).unwrap();
        // a query batch, a single text, a batch past 128 tokens (split attention)
        for (n, max_len) in [(30usize, 16usize), (1, 9), (5, 150)] {
            let seqs = common::sequences(n, max_len, shape.vocab, &mut rng);
            let refs: Vec<&[u32]> = seqs.iter().map(Vec::as_slice).collect();
            let want = cpu.forward(&refs, 0, false).unwrap();
            let mut outs = Vec::new();
            for graphs in [true, true, false] {
                dev.set_graphs(graphs);
                outs.push(dev.forward(&refs).unwrap());
            }
            for (k, got) in outs.iter().enumerate() {
                let worst = (0..n)
                    .map(|b| {
                        cosine(
                            &got[b * hidden..(b + 1) * hidden],
                            &want[b * hidden..(b + 1) * hidden],
                        )
                    })
                    .fold(1.0, f32::min);
                eprintln!("hidden {hidden}, {n} x ≤{max_len}, run {k}: min cosine vs the CPU reference {worst:.7}");
                assert!(
                    worst >= 0.9999,
                    "hidden {hidden}, {n} x {max_len}, run {k}: {worst}"
                );
            }
            assert_eq!(
                outs[0], outs[1],
                "a replayed graph gives the captured pass's vectors"
            );
        }
        assert_eq!(dev.captures(), 3, "one capture per bucket");
    }
}
