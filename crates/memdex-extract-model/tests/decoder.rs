//! memdex's decoder against candle's own quantized llama and qwen2 on tiny random GGUFs, and
//! its batches against rows run alone.

use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use candle_transformers::models::{quantized_llama, quantized_qwen2};
use memdex_extract_model::decoder::{Decoder, KvCache};
use memdex_extract_model::testing::{write_tiny, write_tiny_as};
use memdex_extract_model::{GgufHeader, ModelFacts, ModelOptions};

const ARCHS: [&str; 2] = ["llama", "qwen2"];

fn tiny(dir: &Path, arch: &str) -> PathBuf {
    let p = dir.join(format!("{arch}.gguf"));
    write_tiny(&p, arch).expect("write tiny gguf");
    p
}

fn tiny_q8(dir: &Path, arch: &str) -> PathBuf {
    let p = dir.join(format!("{arch}-q8.gguf"));
    write_tiny_as(&p, arch, GgmlDType::Q8_0).expect("write tiny gguf");
    p
}

fn decoder(path: &Path) -> Decoder {
    let (h, mut r) = GgufHeader::open(path).expect("open");
    let arch = h.arch().expect("arch");
    Decoder::from_gguf(arch, &h.content, &mut r, &Device::Cpu).expect("decoder")
}

fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
    (a - b)
        .and_then(|d| d.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>())
        .expect("diff")
}

fn ids(v: &[u32]) -> Tensor {
    Tensor::new(v, &Device::Cpu)
        .and_then(|t| t.unsqueeze(0))
        .expect("ids")
}

/// `(ids, position) → last logits` of a model.
type Forward = Box<dyn FnMut(&Tensor, usize) -> Tensor>;

/// candle's model of the same file.
fn reference(path: &Path, arch: &str) -> Forward {
    let (h, mut r) = GgufHeader::open(path).expect("open");
    let dev = Device::Cpu;
    if arch == "llama" {
        let mut m = quantized_llama::ModelWeights::from_gguf(h.content, &mut r, &dev)
            .expect("candle's model");
        Box::new(move |x, pos| m.forward(x, pos).expect("llama"))
    } else {
        let mut m = quantized_qwen2::ModelWeights::from_gguf(h.content, &mut r, &dev)
            .expect("candle's model");
        Box::new(move |x, pos| m.forward(x, pos).expect("qwen2"))
    }
}

#[test]
fn the_decoder_gives_candles_logits() {
    let dir = tempfile::tempdir().expect("tmp");
    for arch in ARCHS {
        let path = tiny(dir.path(), arch);
        let dec = decoder(&path);
        let mut want = reference(&path, arch);
        let mut cache = KvCache::default();
        let prompt: Vec<u32> = (0..17).map(|i| (i * 37 + 11) % 256).collect();
        // a prompt in three passes: several tokens, several more after a cache, then one
        for (from, to) in [(0, 9), (9, 16), (16, 17)] {
            let x = ids(&prompt[from..to]);
            let got = dec.forward(&x, &mut cache).expect("forward");
            let d = max_diff(&got, &want(&x, from));
            assert!(d < 1e-4, "{arch} tokens {from}..{to}: max |Δ| {d}");
        }
        assert_eq!(cache.len(), 17);
    }
}

/// A batch's rows against the same prompts run alone: equal with quantized weights (the
/// quantized matmul works row by row), within rounding with f32 weights (the dense matmul
/// may block a batch's rows differently).
#[test]
fn rows_of_a_batch_get_what_they_get_alone() {
    let dir = tempfile::tempdir().expect("tmp");
    for arch in ARCHS {
        check_batch_rows(&tiny(dir.path(), arch), 1e-5);
        check_batch_rows(&tiny_q8(dir.path(), arch), 0.0);
    }
}

fn check_batch_rows(path: &Path, tol: f32) {
    let dev = Device::Cpu;
    let dec = decoder(path);
    let mut prefix = KvCache::default();
    dec.forward(&ids(&[1, 2, 3, 4, 5]), &mut prefix)
        .expect("prefix");
    let prompts: [[u32; 4]; 3] = [[10, 20, 30, 40], [50, 60, 70, 80], [90, 100, 110, 120]];
    let alone: Vec<(Tensor, Tensor)> = prompts
        .iter()
        .map(|p| {
            let mut c = prefix.clone();
            let first = dec.forward(&ids(p), &mut c).expect("alone");
            let second = dec.forward(&ids(&[7]), &mut c).expect("alone, next");
            (
                first.squeeze(0).expect("row"),
                second.squeeze(0).expect("row"),
            )
        })
        .collect();
    let mut c = prefix.repeat(3).expect("repeat");
    let x = Tensor::new(&prompts, &dev).expect("batch");
    let first = dec.forward(&x, &mut c).expect("batch");
    let name = path.display();
    for (r, (a, _)) in alone.iter().enumerate() {
        let d = max_diff(&first.get(r).expect("row"), a);
        assert!(d <= tol, "{name} row {r}: max |Δ| {d}");
    }
    // rows 2 and 0 go on, in that order
    let mut c = c.select(&[2, 0]).expect("select");
    let x = Tensor::new(&[[7u32], [7]], &dev).expect("next");
    let second = dec.forward(&x, &mut c).expect("next");
    for (row, item) in [(0, 2), (1, 0)] {
        let d = max_diff(&second.get(row).expect("row"), &alone[item].1);
        assert!(d <= tol, "{name} item {item} after select: max |Δ| {d}");
    }
}

#[test]
fn batched_extraction_answers_as_each_item_alone() {
    let dir = tempfile::tempdir().expect("tmp");
    // byte-level vocabulary: equal byte lengths (no "th") give prompts of equal length
    let texts = [
        "Ann: I own a cat.",
        "Bob: I own a dog.",
        "Cy: I love a pig",
        "ok",
        "Dan: we moved to Oslo last year.",
        "Eve: I own a cow.",
    ];
    for arch in ARCHS {
        let path = tiny_q8(dir.path(), arch);
        let m = ModelFacts::load(&path, ModelOptions::default()).expect("load");
        let alone: Vec<_> = texts.iter().map(|t| m.run(t, None)).collect();
        let items: Vec<_> = texts.iter().map(|t| (*t, None)).collect();
        let together = m.run_batch(&items);
        assert_eq!(together, alone, "{arch}");
        assert!(
            alone.iter().all(|x| x.raw.is_some()),
            "{arch}: generation ran"
        );
    }
}

/// A GGUF's metadata and tensors, as written.
type Metadata = Vec<(String, Value)>;
type Tensors = Vec<(String, QTensor)>;
type Edit = fn(&mut Metadata, &mut Tensors);

/// `src` rewritten with `edit` applied to its metadata and tensors.
fn rewrite(src: &Path, dst: &Path, edit: Edit) {
    let (h, mut r) = GgufHeader::open(src).expect("open");
    let mut md: Metadata = h.content.metadata.clone().into_iter().collect();
    let mut ts: Tensors = h
        .content
        .tensor_infos
        .keys()
        .map(|n| {
            let t = h.content.tensor(&mut r, n, &Device::Cpu).expect("tensor");
            (n.clone(), t)
        })
        .collect();
    edit(&mut md, &mut ts);
    let md: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let ts: Vec<(&str, &QTensor)> = ts.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut f = std::fs::File::create(dst).expect("create");
    gguf_file::write(&mut f, &md, &ts).expect("write");
}

fn set(md: &mut Metadata, key: &str, v: Value) {
    md.iter_mut()
        .find(|(k, _)| k == key)
        .expect("key present")
        .1 = v;
}

/// Inconsistent shapes and settings in a file are load errors naming the file, never panics.
#[test]
fn inconsistent_models_are_refused_at_load() {
    let dir = tempfile::tempdir().expect("tmp");
    let good = tiny(dir.path(), "llama");
    let edits: [(&str, Edit); 7] = [
        ("zero-heads", |md, _| {
            set(md, "llama.attention.head_count", Value::U32(0))
        }),
        ("odd-heads", |md, _| {
            set(md, "llama.attention.head_count", Value::U32(3))
        }),
        ("rope", |md, _| {
            set(md, "llama.rope.dimension_count", Value::U32(6))
        }),
        ("no-layer", |md, _| {
            set(md, "llama.block_count", Value::U32(1 << 30))
        }),
        ("shape", |_, ts| {
            let w = Tensor::zeros((32, 24), candle_core::DType::F32, &Device::Cpu).expect("0");
            let q = QTensor::quantize(&w, GgmlDType::F32).expect("q");
            let slot = ts.iter_mut().find(|(n, _)| n == "blk.1.attn_q.weight");
            slot.expect("tensor").1 = q;
        }),
        // a width the weights do not have: the rotary tables it implies would need terabytes
        ("wide", |md, _| {
            set(md, "llama.embedding_length", Value::U32(1 << 30));
            set(md, "llama.attention.head_count", Value::U32(1));
            set(md, "llama.attention.head_count_kv", Value::U32(1));
            set(md, "llama.rope.dimension_count", Value::U32(1 << 30));
        }),
        // a feed-forward of width 0 (a division by zero in candle's quantized matmul)
        ("zero-width", |_, ts| {
            for (n, t) in ts.iter_mut() {
                let dims = match n.rsplit('.').nth(1) {
                    Some("ffn_gate" | "ffn_up") => (0, 32),
                    Some("ffn_down") => (32, 0),
                    _ => continue,
                };
                let w = Tensor::zeros(dims, candle_core::DType::F32, &Device::Cpu).expect("0");
                *t = QTensor::quantize(&w, GgmlDType::F32).expect("q");
            }
        }),
    ];
    for (name, edit) in edits {
        let bad = dir.path().join(format!("{name}.gguf"));
        rewrite(&good, &bad, edit);
        let e = ModelFacts::load(&bad, ModelOptions::default()).expect_err(name);
        assert!(
            e.to_string().contains(&format!("{name}.gguf")),
            "{name}: {e}"
        );
    }
}
