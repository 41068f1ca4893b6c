//! Embedder tests: the tiny fixture model against an independent Python forward pass, and the
//! real all-MiniLM-L6-v2 against sentence-transformers' vectors when the model is present.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use candle_core::Device;
use memdex_core::{Pooling, TextKind};
use memdex_embed::{CpuSplit, EmbedError, EmbedOptions, Embedder, Isa, ModelFiles};
use serde::Deserialize;

#[derive(Deserialize)]
struct Golden {
    text: String,
    tokens: usize,
    #[serde(default)]
    ids: Vec<u32>,
    embedding: Vec<f32>,
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read_golden(path: &Path) -> Vec<Golden> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "vectors of one dimension");
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

/// Min cosine to the f32 reference of bf16 products with f32 sums (`LargeBatchGemm::Bf16`, and
/// the default on CPUs with usable AMX).
const BF16_FLOOR: f32 = 0.999;

/// The cosine an embedder must reach where f32-grade parity asks `strict`: bf16 products are
/// held to [`BF16_FLOOR`] (default options run them on AMX machines).
fn floor(e: &Embedder, strict: f32) -> f32 {
    if e.kernels().contains("bf16") {
        strict.min(BF16_FLOOR)
    } else {
        strict
    }
}

fn tiny() -> Embedder {
    let dir = fixture("tiny-bert");
    Embedder::load(dir.to_str().unwrap(), Device::Cpu, &EmbedOptions::default()).unwrap()
}

#[test]
fn tiny_model_settings_come_from_sentence_transformers_files() {
    let e = tiny();
    let info = e.info();
    assert_eq!(info.dim, 32);
    assert_eq!(info.pooling, Pooling::Mean);
    assert!(info.normalize);
    assert_eq!(
        info.max_length, 24,
        "sentence_bert_config.json, not tokenizer.json's 8"
    );
    assert_eq!(info.fingerprint.len(), 64);
}

#[test]
fn tiny_model_matches_independent_reference() {
    let golden = read_golden(&fixture("tiny-bert/expected.jsonl"));
    let e = tiny();
    let texts: Vec<&str> = golden.iter().map(|g| g.text.as_str()).collect();
    let ids = e.tokenize(&texts, TextKind::Passage).unwrap();
    assert_eq!(ids.len(), golden.len());
    for (g, got) in golden.iter().zip(&ids) {
        assert_eq!(&g.ids, got, "token ids of {:?}", g.text);
    }
    // all at once (mixed lengths share padded batches) and one by one must both match
    let out = e.embed(&texts, TextKind::Passage).unwrap();
    let min = floor(&e, 0.99999);
    for (i, g) in golden.iter().enumerate() {
        assert_eq!(out.tokens[i], g.tokens);
        let c = cosine(out.row(i), &g.embedding);
        assert!(c > min, "{:?}: cosine {c} ({})", g.text, e.kernels());
        let single = e.embed(&[texts[i]], TextKind::Passage).unwrap();
        let c = cosine(single.row(0), out.row(i));
        assert!(c > min, "batched vs single {:?}: cosine {c}", g.text);
    }
}

#[test]
fn tiny_small_token_budget_gives_same_vectors() {
    let golden = read_golden(&fixture("tiny-bert/expected.jsonl"));
    let texts: Vec<&str> = golden.iter().map(|g| g.text.as_str()).collect();
    let dir = fixture("tiny-bert");
    let opts = EmbedOptions {
        token_budget: Some(30),
        max_batch: Some(2),
        ..Default::default()
    };
    let small = Embedder::load(dir.to_str().unwrap(), Device::Cpu, &opts).unwrap();
    let a = small.embed(&texts, TextKind::Passage).unwrap();
    let b = tiny().embed(&texts, TextKind::Passage).unwrap();
    for i in 0..texts.len() {
        assert!(cosine(a.row(i), b.row(i)) > 0.99999);
    }
}

/// A replica (another model worker's encoder) is the same model with the same options: the
/// same identity, batching and vectors, bit for bit, whether asked directly or through the
/// `Encoder` trait; the candle backend replicates too.
#[test]
fn a_replica_is_the_same_model_with_the_same_options() {
    use memdex_embed::Encoder;
    let golden = read_golden(&fixture("tiny-bert/expected.jsonl"));
    let texts: Vec<&str> = golden.iter().map(|g| g.text.as_str()).collect();
    let opts = EmbedOptions {
        token_budget: Some(30),
        max_batch: Some(2),
        query_prefix: Some("q: ".into()),
        ..Default::default()
    };
    let mut backends = vec![memdex_embed::CpuBackend::Fast];
    if cfg!(feature = "candle") {
        backends.push(memdex_embed::CpuBackend::Candle);
    }
    for cpu_backend in backends {
        let opts = EmbedOptions {
            cpu_backend,
            ..opts.clone()
        };
        let dir = fixture("tiny-bert");
        let e = Embedder::load(dir.to_str().unwrap(), Device::Cpu, &opts).unwrap();
        let r = e.replica().expect("a CPU encoder replicates").unwrap();
        assert_eq!(r.info(), e.info());
        assert_eq!(r.backend_name(), e.backend_name());
        assert_eq!(r.batch_policy(), (30, 2));
        assert_eq!(r.cpu_split(), e.cpu_split());
        for kind in [TextKind::Query, TextKind::Passage] {
            let (a, b) = (
                e.embed(&texts, kind).unwrap(),
                r.embed(&texts, kind).unwrap(),
            );
            assert_eq!(a, b, "{cpu_backend:?} {kind:?}");
        }
        let boxed = Encoder::replica(&e).expect("through the trait").unwrap();
        assert_eq!(boxed.info(), e.info());
        let ids = e.tokenize(&texts, TextKind::Query).unwrap();
        assert_eq!(
            boxed.embed_ids(&ids).unwrap(),
            e.embed(&texts, TextKind::Query).unwrap()
        );
    }
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
}

#[test]
fn cls_pooling_and_prefixes_change_vectors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tiny-cls");
    copy_dir(&fixture("tiny-bert"), &dir);
    std::fs::write(
        dir.join("1_Pooling/config.json"),
        r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("config_sentence_transformers.json"),
        r#"{"prompts": {"query": "what: ", "passage": ""}}"#,
    )
    .unwrap();
    let e = Embedder::load(dir.to_str().unwrap(), Device::Cpu, &EmbedOptions::default()).unwrap();
    assert_eq!(e.info().pooling, Pooling::Cls);
    assert_eq!(e.info().query_prefix, "what: ");
    assert_ne!(e.info().fingerprint, tiny().info().fingerprint);
    let q = e.embed(&["my dog"], TextKind::Query).unwrap();
    let p = e.embed(&["my dog"], TextKind::Passage).unwrap();
    assert_eq!(q.tokens[0], p.tokens[0] + 2, "prefix adds `what` and `:`");
    assert!(cosine(q.row(0), p.row(0)) < 0.9999);
}

#[test]
fn bad_model_dirs_get_clear_errors() {
    let err = |spec: &str| {
        Embedder::load(spec, Device::Cpu, &EmbedOptions::default())
            .unwrap_err()
            .to_string()
    };
    let e = err("/nonexistent/model-dir");
    assert!(
        e.contains("/nonexistent/model-dir") && e.contains("fetch-model"),
        "{e}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    copy_dir(&fixture("tiny-bert"), &dir);
    std::fs::remove_file(dir.join("tokenizer.json")).unwrap();
    let e = err(dir.to_str().unwrap());
    assert!(e.contains("has no tokenizer.json"), "{e}");

    copy_dir(&fixture("tiny-bert"), &dir);
    let cfg = std::fs::read_to_string(dir.join("config.json")).unwrap();
    std::fs::write(
        dir.join("config.json"),
        cfg.replace("\"hidden_size\": 32", "\"hidden_size\": 48"),
    )
    .unwrap();
    let e =
        Embedder::load(dir.to_str().unwrap(), Device::Cpu, &EmbedOptions::default()).unwrap_err();
    assert!(matches!(e, EmbedError::Weights { .. }), "{e}");
    assert!(
        e.to_string().contains("model.safetensors") && e.to_string().contains("config.json"),
        "{e}"
    );

    std::fs::write(dir.join("config.json"), "{not json").unwrap();
    let e = err(dir.to_str().unwrap());
    assert!(
        e.contains("config.json") && e.contains("invalid JSON"),
        "{e}"
    );
}

#[test]
fn finds_models_in_the_hugging_face_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("models--acme--tiny-bert");
    let snap = repo.join("snapshots/0123abcd");
    copy_dir(&fixture("tiny-bert"), &snap);
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "0123abcd").unwrap();
    let cache = hf_hub::Cache::new(tmp.path().to_path_buf());
    let files = ModelFiles::resolve_in("acme/tiny-bert", &cache).unwrap();
    assert_eq!(files.name, "acme/tiny-bert");
    assert_eq!(files.dir, snap);
    let e = ModelFiles::resolve_in("acme/other", &cache)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("acme/other") && e.contains("Hugging Face cache"),
        "{e}"
    );
}

/// A model split into shards with `model.safetensors.index.json` embeds like the single file.
#[test]
fn loads_sharded_safetensors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sharded");
    copy_dir(&fixture("tiny-bert"), &dir);
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut names: Vec<String> = st.names().into_iter().map(str::to_string).collect();
    names.sort();
    let (a, b) = names.split_at(names.len() / 2);
    let mut weight_map = serde_json::Map::new();
    for (i, part) in [a, b].iter().enumerate() {
        let file = format!("model-0000{}-of-00002.safetensors", i + 1);
        let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = part
            .iter()
            .map(|n| (n.clone(), st.tensor(n).unwrap()))
            .collect();
        safetensors::serialize_to_file(views, None, &dir.join(&file)).unwrap();
        for n in part.iter() {
            weight_map.insert(n.clone(), serde_json::Value::String(file.clone()));
        }
    }
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    std::fs::write(
        dir.join("model.safetensors.index.json"),
        serde_json::json!({"metadata": {}, "weight_map": weight_map}).to_string(),
    )
    .unwrap();
    let sharded =
        Embedder::load(dir.to_str().unwrap(), Device::Cpu, &EmbedOptions::default()).unwrap();
    let texts = ["my sister moved to paris", "hello"];
    let a = sharded.embed(&texts, TextKind::Passage).unwrap();
    let b = tiny().embed(&texts, TextKind::Passage).unwrap();
    for i in 0..texts.len() {
        assert!(cosine(a.row(i), b.row(i)) > 0.99999);
    }
    std::fs::remove_file(dir.join("model-00002-of-00002.safetensors")).unwrap();
    let e =
        Embedder::load(dir.to_str().unwrap(), Device::Cpu, &EmbedOptions::default()).unwrap_err();
    assert!(
        e.to_string().contains("model-00002-of-00002.safetensors"),
        "{e}"
    );
}

/// The same weights as a PyTorch pickle (`pytorch_model.bin`) embed identically.
#[test]
fn loads_pytorch_model_bin() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pth");
    copy_dir(&fixture("tiny-bert"), &dir);
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    std::fs::copy(
        fixture("tiny-bert-pytorch_model.bin"),
        dir.join("pytorch_model.bin"),
    )
    .unwrap();
    let pth = Embedder::load(dir.to_str().unwrap(), Device::Cpu, &EmbedOptions::default()).unwrap();
    let texts = ["my sister moved to paris", ""];
    let a = pth.embed(&texts, TextKind::Passage).unwrap();
    let b = tiny().embed(&texts, TextKind::Passage).unwrap();
    for i in 0..texts.len() {
        assert!(cosine(a.row(i), b.row(i)) > 0.99999);
    }
}

fn real_model_dir() -> Option<PathBuf> {
    let dir = std::env::var("MEMDEX_TEST_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/all-MiniLM-L6-v2")
        });
    if dir.join("model.safetensors").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var("MEMDEX_REQUIRE_MODEL").is_err(),
        "MEMDEX_REQUIRE_MODEL is set but no model at {} (run scripts/fetch-model.sh)",
        dir.display()
    );
    eprintln!(
        "SKIPPED: no model at {} (run scripts/fetch-model.sh)",
        dir.display()
    );
    None
}

/// The tiny fixture model and, when fetched, the real MiniLM, each with its golden texts.
fn model_cases() -> Vec<(PathBuf, PathBuf)> {
    let mut cases = vec![(fixture("tiny-bert"), fixture("tiny-bert/expected.jsonl"))];
    if let Some(dir) = real_model_dir() {
        cases.push((dir, fixture("minilm-golden.jsonl")));
    }
    cases
}

/// The fast CPU encoder against candle's BertModel (the reference), text by text, on the tiny
/// model and, when present, the real one.
/// Needs candle's encoder: CI builds the `candle` feature (`scripts/test.sh`).
#[cfg(feature = "candle")]
#[test]
fn fast_cpu_matches_candle_reference() {
    use memdex_embed::{CpuBackend, LargeBatchGemm};
    for (dir, texts) in model_cases() {
        let golden = read_golden(&texts);
        let texts: Vec<&str> = golden.iter().map(|g| g.text.as_str()).collect();
        let load = |cpu_backend, cpu_isa, large_batch_gemm| {
            let opts = EmbedOptions {
                cpu_backend,
                cpu_isa,
                large_batch_gemm,
                ..Default::default()
            };
            Embedder::load(dir.to_str().unwrap(), Device::Cpu, &opts).unwrap()
        };
        let slow = load(CpuBackend::Candle, None, LargeBatchGemm::F32);
        assert_eq!(slow.backend_name(), "candle");
        let b = slow.embed(&texts, TextKind::Passage).unwrap();
        let gemms = [
            LargeBatchGemm::F32,
            LargeBatchGemm::I16,
            LargeBatchGemm::Bf16,
        ];
        note_missing_isas();
        for (isa, gemm) in Isa::available()
            .into_iter()
            .flat_map(|i| gemms.map(|g| (i, g)))
        {
            let fast = load(CpuBackend::Fast, Some(isa), gemm);
            assert_eq!(fast.backend_name(), "fast-cpu");
            assert_eq!(fast.cpu_isa(), Some(isa));
            // integer products on AVX2, and on AVX-512 with VNNI
            let int = memdex_embed::LargeBatchKernel::detect(isa, gemm).is_integer();
            assert_eq!(fast.kernels().contains("i16"), int, "{}", fast.kernels());
            let a = fast.embed(&texts, TextKind::Passage).unwrap();
            assert_eq!(a.tokens, b.tokens);
            // bf16 operands: cosine to the bar, |Δ| of a unit vector's component ~1e-2
            let (min, max_diff) = match gemm {
                LargeBatchGemm::Bf16 => (BF16_FLOOR, 2e-2),
                _ => (0.99999, 1e-3),
            };
            for (i, text) in texts.iter().enumerate() {
                assert_eq!(a.row(i).len(), b.row(i).len());
                let c = cosine(a.row(i), b.row(i));
                assert!(
                    c > min,
                    "{isa} {gemm:?} {}: {text:?}: cosine {c}",
                    dir.display()
                );
                let max_abs = a
                    .row(i)
                    .iter()
                    .zip(b.row(i))
                    .map(|(x, y)| (x - y).abs())
                    .fold(0f32, f32::max);
                assert!(
                    max_abs < max_diff,
                    "{isa} {gemm:?} {text:?}: max abs diff {max_abs}"
                );
            }
        }
    }
}

/// A job of many batches gives the same vectors whether its batches run side by side (one
/// per thread) or one at a time with every step split across the threads, and the same as one
/// big batch: a text's vector does not depend on its batch mates, even when the job's
/// batching leaves it in a batch of a few tokens (those take the small-batch path, with its
/// half-precision weights, only when they are the whole job).
#[test]
fn cpu_splits_and_batching_give_the_same_vectors() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    for (dir, texts) in model_cases() {
        let golden = read_golden(&texts);
        let texts: Vec<&str> = golden.iter().map(|g| g.text.as_str()).collect();
        let embed = |cpu_split, token_budget| {
            let opts = EmbedOptions {
                token_budget,
                cpu_split: Some(cpu_split),
                ..Default::default()
            };
            let e = Embedder::load(dir.to_str().unwrap(), Device::Cpu, &opts).unwrap();
            assert_eq!(e.cpu_split(), cpu_split);
            (
                pool.install(|| e.embed(&texts, TextKind::Passage).unwrap()),
                floor(&e, 0.9999),
            )
        };
        // 96 tokens a job's batch, 32 a thread's: batches of ≤ 32 tokens throughout
        let (side, min) = embed(CpuSplit::Batches, Some(96));
        let (ops, _) = embed(CpuSplit::Operators, Some(96));
        let (one, _) = embed(CpuSplit::Operators, Some(1 << 20));
        assert_eq!(side.tokens, ops.tokens);
        for (i, text) in texts.iter().enumerate() {
            for (name, other) in [("operators", &ops), ("one batch", &one)] {
                let max_abs = side
                    .row(i)
                    .iter()
                    .zip(other.row(i))
                    .map(|(x, y)| (x - y).abs())
                    .fold(0f32, f32::max);
                assert!(
                    max_abs < 1e-5,
                    "{} {name}: {text:?}: max |Δ| {max_abs}",
                    dir.display()
                );
            }
            let c = cosine(side.row(i), &golden[i].embedding);
            assert!(c > min, "{} vs golden: {text:?}: cosine {c}", dir.display());
        }
    }
}

/// A skip the run's output shows: written to stderr directly, past the test harness's capture
/// (which swallows `eprintln!` of a passing test).
fn skipped(why: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

/// The kernels of instruction sets this CPU lacks cannot run here (an AVX2-only host never runs
/// the AVX-512 ones): said in the output, so a green run on such a host does not read as if they
/// had been checked.
fn note_missing_isas() {
    let have = Isa::available();
    for isa in [Isa::Avx2, Isa::Avx512] {
        if !have.contains(&isa) {
            skipped(&format!(
                "the {isa} kernels (this CPU lacks {isa}; a host with it runs them)"
            ));
        }
    }
}

/// Forcing an instruction set the CPU lacks is a clear error, not a crash.
#[test]
fn cpu_isa_the_cpu_lacks_is_refused() {
    let best = Isa::detect();
    let Some(&above) = [Isa::Avx2, Isa::Avx512].iter().find(|&&i| i > best) else {
        skipped(&format!(
            "this CPU has every instruction set memdex knows ({best})"
        ));
        return;
    };
    let opts = EmbedOptions {
        cpu_isa: Some(above),
        ..Default::default()
    };
    let dir = fixture("tiny-bert");
    let err = Embedder::load(dir.to_str().unwrap(), Device::Cpu, &opts)
        .expect_err("an instruction set above the CPU's must be refused");
    assert!(err.to_string().contains("this CPU lacks it"), "{err}");
}

/// Single short texts (search queries) take the skinny small-batch path, whose weights are
/// f16 copies by default: they must agree with the golden vectors (sentence-transformers for
/// MiniLM) as closely as the batched f32 path, within 1e-4 cosine; the f32 setting exactly.
#[test]
fn small_batches_keep_parity_in_f16_and_f32() {
    use memdex_embed::SmallBatchWeights;
    note_missing_isas();
    for (dir, golden) in model_cases() {
        let golden = read_golden(&golden);
        for (w, floor) in [
            (SmallBatchWeights::F16, 0.9999),
            (SmallBatchWeights::F32, 0.99999),
        ] {
            let opts = EmbedOptions {
                small_batch_weights: w,
                ..Default::default()
            };
            let e = Embedder::load(dir.to_str().unwrap(), Device::Cpu, &opts).unwrap();
            let mut min = 1.0f32;
            for g in golden.iter().filter(|g| g.tokens <= 32) {
                let out = e.embed(&[g.text.as_str()], TextKind::Passage).unwrap();
                let c = cosine(out.row(0), &g.embedding);
                min = min.min(c);
                assert!(
                    c >= floor,
                    "{w:?} {}: {:?}: cosine {c}",
                    dir.display(),
                    g.text
                );
            }
            eprintln!(
                "{w:?} small batches, {}: min cosine {min:.6}",
                dir.display()
            );
        }
    }
}

/// Parity with sentence-transformers on the real model (default backend). Runs when
/// `models/all-MiniLM-L6-v2` (or `MEMDEX_TEST_MODEL`) exists; CI fetches it first and sets
/// MEMDEX_REQUIRE_MODEL=1 so that a missing model fails instead of skipping.
#[test]
fn minilm_parity_with_sentence_transformers() {
    let Some(dir) = real_model_dir() else {
        return;
    };
    let golden = read_golden(&fixture("minilm-golden.jsonl"));
    let texts: Vec<&str> = golden.iter().map(|g| g.text.as_str()).collect();
    // the default (best ISA), then every instruction set this CPU has
    note_missing_isas();
    let isas = std::iter::once(None).chain(Isa::available().into_iter().map(Some));
    for cpu_isa in isas {
        let opts = EmbedOptions {
            cpu_isa,
            ..Default::default()
        };
        let e = Embedder::load(dir.to_str().unwrap(), Device::Cpu, &opts).unwrap();
        assert_eq!(e.info().max_length, 256);
        let out = e.embed(&texts, TextKind::Passage).unwrap();
        let mut min = 1.0f32;
        let bar = floor(&e, 0.9999);
        for (i, g) in golden.iter().enumerate() {
            assert_eq!(out.tokens[i], g.tokens, "token count of {:?}", g.text);
            let c = cosine(out.row(i), &g.embedding);
            min = min.min(c);
            assert!(
                c >= bar,
                "{cpu_isa:?} {}: {:?}: cosine {c}",
                e.kernels(),
                g.text
            );
        }
        eprintln!(
            "minilm parity ({:?}, {}): {} texts, min cosine {min:.6}",
            e.cpu_isa(),
            e.kernels(),
            golden.len()
        );
    }
}

/// bf16 operands with f32 sums (`LargeBatchGemm::Bf16`: AMX's arithmetic) keep min cosine
/// ≥ [`BF16_FLOOR`] to the reference vectors (sentence-transformers fp32 for MiniLM) on every
/// instruction set: on AMX where this process may use it, else on the tile emulator (the same
/// arithmetic), which the output says.
#[test]
fn bf16_large_batches_keep_parity() {
    use memdex_embed::LargeBatchGemm;
    if let Err(why) = memdex_embed::amx_status() {
        skipped(&format!(
            "no AMX ({why}): bf16 parity checked on the tile emulator only"
        ));
    }
    note_missing_isas();
    for (dir, golden) in model_cases() {
        let golden = read_golden(&golden);
        let texts: Vec<&str> = golden.iter().map(|g| g.text.as_str()).collect();
        for isa in Isa::available() {
            let opts = EmbedOptions {
                cpu_isa: Some(isa),
                large_batch_gemm: LargeBatchGemm::Bf16,
                ..Default::default()
            };
            let e = Embedder::load(dir.to_str().unwrap(), Device::Cpu, &opts).unwrap();
            assert!(e.kernels().contains("bf16"), "{}", e.kernels());
            let out = e.embed(&texts, TextKind::Passage).unwrap();
            let mut min = 1.0f32;
            for (i, g) in golden.iter().enumerate() {
                let c = cosine(out.row(i), &g.embedding);
                min = min.min(c);
                assert!(c >= BF16_FLOOR, "{}: {:?}: cosine {c}", e.kernels(), g.text);
            }
            eprintln!(
                "bf16 parity, {} ({}): min cosine {min:.6}",
                dir.display(),
                e.kernels()
            );
        }
    }
}

/// Half precision (what the CUDA path runs) keeps parity: candle's own BERT turns every vector
/// into NaN in f16/bf16 (its mask overflows), memdex's `masked_bert` must not. Measured on the
/// CPU here; the same code runs on CUDA. f16 holds the GPU goal (≥ 0.999); bf16's 8-bit
/// mantissa does not (≈ 0.998 on these texts), which is why CUDA defaults to f16.
/// Needs candle's encoder: CI builds the `candle` feature (`scripts/test.sh`).
#[cfg(feature = "candle")]
#[test]
fn half_precision_keeps_parity() {
    use memdex_embed::Precision;
    let load = |dir: &Path, precision| {
        let opts = EmbedOptions {
            precision: Some(precision),
            ..EmbedOptions::default()
        };
        Embedder::load(dir.to_str().unwrap(), Device::Cpu, &opts).unwrap()
    };
    // tiny model: no NaN, close to f32 (padding inside batches of different lengths)
    let golden = read_golden(&fixture("tiny-bert/expected.jsonl"));
    let texts: Vec<&str> = golden.iter().map(|g| g.text.as_str()).collect();
    for p in [Precision::F16, Precision::Bf16] {
        let out = load(&fixture("tiny-bert"), p)
            .embed(&texts, TextKind::Passage)
            .unwrap();
        for (i, g) in golden.iter().enumerate() {
            let c = cosine(out.row(i), &g.embedding);
            assert!(c >= 0.99, "{p:?} {:?}: cosine {c}", g.text);
        }
    }
    let Some(dir) = real_model_dir() else {
        return;
    };
    let golden = read_golden(&fixture("minilm-golden.jsonl"));
    let texts: Vec<&str> = golden.iter().map(|g| g.text.as_str()).collect();
    let out = load(&dir, Precision::F16)
        .embed(&texts, TextKind::Passage)
        .unwrap();
    let min = golden
        .iter()
        .enumerate()
        .map(|(i, g)| cosine(out.row(i), &g.embedding))
        .fold(1.0f32, f32::min);
    assert!(min >= 0.999, "f16 min cosine {min}");
    eprintln!("minilm f16 parity: min cosine {min:.6}");
}
