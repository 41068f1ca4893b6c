//! The fused encoder (`memdex-fused-bert`) against candle's BERT, the reference, on the golden
//! texts: its plan on the CPU reference (`--cpu-backend fused`) everywhere the `candle` feature
//! is built, and on a CUDA device (`--cuda-encoder fused`) where one answers — otherwise that
//! test says SKIPPED, or fails under `MEMDEX_REQUIRE_CUDA=1` (scripts/gpu-check.sh sets it on
//! the GPU box, where `MEMDEX_TEST_MODEL` and `MEMDEX_TEST_GOLDEN` point at the pack's model and
//! golden texts).
#![cfg(feature = "candle")]
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use candle_core::Device;
use memdex_core::TextKind;
use memdex_embed::{CpuBackend, EmbedOptions, Embedder, Embeddings};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn texts(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["text"].as_str().unwrap().to_string()
        })
        .collect()
}

/// The tiny fixture model, and MiniLM (`MEMDEX_TEST_MODEL`, else models/all-MiniLM-L6-v2) with
/// its golden texts (`MEMDEX_TEST_GOLDEN`, else the fixture's ten) when present.
fn cases() -> Vec<(PathBuf, Vec<String>)> {
    let tiny = fixture("tiny-bert");
    let mut v = Vec::new();
    if tiny.is_dir() {
        v.push((tiny.clone(), texts(&tiny.join("expected.jsonl"))));
    }
    let model = std::env::var("MEMDEX_TEST_MODEL").map_or_else(
        |_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/all-MiniLM-L6-v2"),
        PathBuf::from,
    );
    let golden = std::env::var("MEMDEX_TEST_GOLDEN")
        .map_or_else(|_| fixture("minilm-golden.jsonl"), PathBuf::from);
    if model.join("model.safetensors").is_file() {
        v.push((model, texts(&golden)));
    } else {
        assert!(
            std::env::var("MEMDEX_REQUIRE_MODEL").is_err(),
            "MEMDEX_REQUIRE_MODEL is set but no model at {}",
            model.display()
        );
        eprintln!("SKIPPED (MiniLM): no model at {}", model.display());
    }
    v
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

/// The smallest cosine between the two encoders' vectors, text by text.
fn min_cosine(a: &Embeddings, b: &Embeddings, what: &str) -> f32 {
    assert_eq!(a.tokens, b.tokens, "{what}: tokens");
    (0..a.len())
        .map(|i| cosine(a.row(i), b.row(i)))
        .fold(1.0, f32::min)
}

fn load(dir: &Path, device: Device, opts: EmbedOptions) -> Embedder {
    Embedder::load(dir.to_str().unwrap(), device, &opts).unwrap()
}

#[test]
fn fused_reference_matches_candle() {
    for (dir, texts) in cases() {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let candle = load(
            &dir,
            Device::Cpu,
            EmbedOptions {
                cpu_backend: CpuBackend::Candle,
                ..Default::default()
            },
        );
        // batches of a few texts too: sequences padded to their batch's longest
        let fused = load(
            &dir,
            Device::Cpu,
            EmbedOptions {
                cpu_backend: CpuBackend::Fused,
                token_budget: Some(96),
                ..Default::default()
            },
        );
        assert_eq!(fused.backend_name(), "fused-reference");
        let want = candle.embed(&refs, TextKind::Passage).unwrap();
        let got = fused.embed(&refs, TextKind::Passage).unwrap();
        let c = min_cosine(&got, &want, "fused reference");
        eprintln!(
            "{}: fused reference vs candle f32, {} texts: min cosine {c:.7}",
            dir.display(),
            refs.len()
        );
        assert!(c >= 0.9999, "{}: min cosine {c}", dir.display());
    }
}

#[cfg(not(feature = "cuda"))]
#[test]
fn fused_cuda_matches_candle() {
    eprintln!("SKIPPED: built without the `cuda` feature (scripts/build-cuda.sh builds it)");
}

/// On a device: the fused encoder against candle's BERT on the same device (f16) and on the
/// CPU (f32), the golden texts all at once, one at a time and three at a time (different
/// buckets), each twice (the second time replays the captured graphs).
#[cfg(feature = "cuda")]
#[test]
fn fused_cuda_matches_candle() {
    use memdex_core::DeviceChoice;
    use memdex_embed::CudaEncoder;
    let Some(device) = cuda_device() else { return };
    for (dir, texts) in cases() {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let cpu = load(
            &dir,
            Device::Cpu,
            EmbedOptions {
                cpu_backend: CpuBackend::Candle,
                ..Default::default()
            },
        );
        let candle = load(
            &dir,
            device.clone(),
            EmbedOptions {
                cuda_encoder: Some(CudaEncoder::Candle),
                ..Default::default()
            },
        );
        let want = cpu.embed(&refs, TextKind::Passage).unwrap();
        let candle16 = candle.embed(&refs, TextKind::Passage).unwrap();
        for max_batch in [None, Some(1), Some(3)] {
            let fused = load(
                &dir,
                memdex_embed::select_device(DeviceChoice::Cuda(0)).unwrap(),
                EmbedOptions {
                    cuda_encoder: Some(CudaEncoder::Fused),
                    max_batch,
                    ..Default::default()
                },
            );
            assert_eq!(
                fused.backend_name(),
                "fused-cuda",
                "no silent fallback to candle"
            );
            for pass in ["captured", "replayed"] {
                let got = fused.embed(&refs, TextKind::Passage).unwrap();
                let vs_cpu = min_cosine(&got, &want, "vs candle cpu f32");
                let vs_cuda = min_cosine(&got, &candle16, "vs candle cuda f16");
                eprintln!(
                    "{} batches of {max_batch:?}, {pass}: fused cuda vs candle cpu f32 min cosine {vs_cpu:.7}, vs candle cuda f16 {vs_cuda:.7} ({})",
                    dir.display(),
                    fused.kernels()
                );
                assert!(
                    vs_cpu >= 0.9999 && vs_cuda >= 0.9999,
                    "{}: {vs_cpu} {vs_cuda}",
                    dir.display()
                );
            }
        }
    }
}

#[cfg(feature = "cuda")]
fn cuda_device() -> Option<Device> {
    match memdex_embed::select_device(memdex_core::DeviceChoice::Cuda(0)) {
        Ok(d) => Some(d),
        Err(e) if std::env::var("MEMDEX_REQUIRE_CUDA").as_deref() == Ok("1") => {
            panic!("MEMDEX_REQUIRE_CUDA=1 but no CUDA device: {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED: no CUDA device ({e}); the fused encoder's device test did not run");
            None
        }
    }
}
