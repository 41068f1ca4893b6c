//! The converter on the committed synthetic container (`scripts/gen-tiny-e5s1.py`, which
//! also computed `expected.jsonl` with an independent pure-Python tokenizer and BERT pass).

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use memdex_convert::{convert_e5s1, E5s1, Source};
use memdex_core::{DeviceChoice, TextKind};
use memdex_embed::{select_device, CpuBackend, EmbedOptions, Embedder, WeightFormat};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-e5s1.bin")
}

struct Expected {
    kind: TextKind,
    text: String,
    ids: Vec<u32>,
    embedding: Vec<f32>,
}

fn expected() -> Vec<Expected> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/expected.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let kind = match v["kind"].as_str().unwrap() {
                "query" => TextKind::Query,
                _ => TextKind::Passage,
            };
            Expected {
                kind,
                text: v["text"].as_str().unwrap().to_string(),
                ids: serde_json::from_value(v["ids"].clone()).unwrap(),
                embedding: serde_json::from_value(v["embedding"].clone()).unwrap(),
            }
        })
        .collect()
}

fn converted() -> (tempfile::TempDir, PathBuf) {
    let c = E5s1::read(&fixture()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tiny-e5");
    let out = convert_e5s1(&c, &dir, &Source::default()).unwrap();
    assert_eq!(out.tensors, 5 + 2 * 16);
    assert_eq!(out.pieces, 81);
    (tmp, dir)
}

#[test]
fn header_and_vocab_are_read() {
    let c = E5s1::read(&fixture()).unwrap();
    let s = c.shape;
    assert_eq!(
        (s.hidden, s.layers, s.heads, s.intermediate),
        (32, 2, 2, 64)
    );
    assert_eq!((s.vocab, s.max_positions, s.type_vocab), (84, 24, 2));
    let v = &c.vocab;
    assert_eq!((v.bos, v.eos, v.pad, v.unk), (0, 2, 1, 3));
    assert_eq!(v.pieces[4].0, "\u{2581}");
    assert_eq!(v.pieces.last().unwrap().0, "<mask>");
    assert_eq!(v.normalize.len(), 7);
    assert_eq!(v.normalize[0], ('\t', " ".to_string()));
    assert!(v
        .normalize
        .iter()
        .any(|(c, s)| *c == '\u{ad}' && s.is_empty()));
}

#[test]
fn tokenizer_json_matches_the_reference_tokenizer() {
    let (_tmp, dir) = converted();
    let tok = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
    for e in expected() {
        let prefix = match e.kind {
            TextKind::Query => "query: ",
            TextKind::Passage => "passage: ",
        };
        let enc = tok.encode(format!("{prefix}{}", e.text), true).unwrap();
        let mut ids = enc.get_ids().to_vec();
        if ids.len() > 24 {
            // the reference truncates to the model's 24 positions, keeping </s>
            ids.truncate(23);
            ids.push(2);
        }
        assert_eq!(ids, e.ids, "{prefix}{:?}", e.text);
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (n(a) * n(b))
}

#[test]
fn both_encoders_reproduce_the_reference_embeddings() {
    let (_tmp, dir) = converted();
    let exp = expected();
    for backend in [CpuBackend::Fast, CpuBackend::Candle] {
        let opts = EmbedOptions {
            cpu_backend: backend,
            ..Default::default()
        };
        let device = select_device(DeviceChoice::Cpu).unwrap();
        let e = Embedder::load(dir.to_str().unwrap(), device, &opts).unwrap();
        let info = e.info();
        assert_eq!((info.dim, info.max_length, info.normalize), (32, 24, true));
        assert_eq!(
            (info.query_prefix.as_str(), info.passage_prefix.as_str()),
            ("query: ", "passage: ")
        );
        for kind in [TextKind::Query, TextKind::Passage] {
            let rows: Vec<&Expected> = exp.iter().filter(|x| x.kind == kind).collect();
            let texts: Vec<&str> = rows.iter().map(|x| x.text.as_str()).collect();
            let ids = e.tokenize(&texts, kind).unwrap();
            let got = e.embed(&texts, kind).unwrap();
            for (i, x) in rows.iter().enumerate() {
                assert_eq!(ids[i], x.ids, "{backend:?} ids of {:?}", x.text);
                let c = cosine(got.row(i), &x.embedding);
                assert!(c > 0.99999, "{backend:?} {kind:?} {:?}: cosine {c}", x.text);
            }
        }
    }
}

#[test]
fn the_gguf_weights_reproduce_the_reference_through_quantized_matmul() {
    let (_tmp, dir) = converted();
    let opts = EmbedOptions {
        weights: WeightFormat::Gguf,
        cpu_backend: CpuBackend::Candle,
        ..Default::default()
    };
    let device = select_device(DeviceChoice::Cpu).unwrap();
    let e = Embedder::load(dir.to_str().unwrap(), device, &opts).unwrap();
    assert_eq!(e.backend_name(), "candle-gguf");
    let dense = Embedder::load(
        dir.to_str().unwrap(),
        select_device(DeviceChoice::Cpu).unwrap(),
        &EmbedOptions::default(),
    )
    .unwrap();
    assert_ne!(e.info().fingerprint, dense.info().fingerprint);
    let exp = expected();
    let mut worst = 1f32;
    for kind in [TextKind::Query, TextKind::Passage] {
        let rows: Vec<&Expected> = exp.iter().filter(|x| x.kind == kind).collect();
        let texts: Vec<&str> = rows.iter().map(|x| x.text.as_str()).collect();
        let got = e.embed(&texts, kind).unwrap();
        for (i, x) in rows.iter().enumerate() {
            worst = worst.min(cosine(got.row(i), &x.embedding));
        }
    }
    // candle rounds the activations to 8 bits per block of 32 before each quantized product
    assert!(worst > 0.999, "worst cosine {worst}");
    assert!(
        worst < 0.999_999,
        "no rounding at all: {worst} (not the quantized path?)"
    );
}

#[test]
fn the_fast_encoder_dequantises_the_gguf_weights_to_the_dense_vectors() {
    let (_tmp, dir) = converted();
    let load = |weights| {
        let device = select_device(DeviceChoice::Cpu).unwrap();
        let opts = EmbedOptions {
            weights,
            ..Default::default()
        };
        Embedder::load(dir.to_str().unwrap(), device, &opts).unwrap()
    };
    let (gguf, dense) = (load(WeightFormat::Gguf), load(WeightFormat::Dense));
    assert_eq!(gguf.backend_name(), "fast-cpu");
    let exp = expected();
    let texts: Vec<&str> = exp.iter().map(|x| x.text.as_str()).collect();
    let (a, b) = (
        gguf.embed(&texts, TextKind::Passage).unwrap(),
        dense.embed(&texts, TextKind::Passage).unwrap(),
    );
    for (i, t) in texts.iter().enumerate() {
        let c = cosine(a.row(i), b.row(i));
        assert!(c > 0.999_999, "{t:?}: cosine {c}");
    }
}

#[test]
fn the_gguf_file_holds_the_containers_blocks_unchanged() {
    use candle_core::quantized::{gguf_file, GgmlDType};
    let (_tmp, dir) = converted();
    let path = dir.join("model.gguf");
    let mut f = std::fs::File::open(&path).unwrap();
    let content = gguf_file::Content::read(&mut f).unwrap();
    assert_eq!(content.tensor_infos.len(), 5 + 2 * 16);
    let c = E5s1::read(&fixture()).unwrap();
    for (name, dtype, dims) in c.expected_tensors() {
        let hf = memdex_convert::e5s1::hf_name(&name).unwrap();
        let t = content
            .tensor(&mut f, &hf, &candle_core::Device::Cpu)
            .unwrap();
        assert_eq!(t.shape().dims(), dims.as_slice(), "{hf}");
        let want = match dtype {
            memdex_convert::e5s1::DType::Q4_0 => GgmlDType::Q4_0,
            memdex_convert::e5s1::DType::F32 => GgmlDType::F32,
        };
        assert_eq!(t.dtype(), want, "{hf}");
        let (_, raw) = c.bytes(&name).unwrap();
        assert_eq!(t.data().unwrap().as_ref(), raw, "{hf}: bytes differ");
    }
}

#[test]
fn gguf_weights_missing_or_broken_are_errors_naming_the_file() {
    let (_tmp, dir) = converted();
    let both = [CpuBackend::Fast, CpuBackend::Candle].map(|cpu_backend| EmbedOptions {
        weights: WeightFormat::Gguf,
        cpu_backend,
        ..Default::default()
    });
    let load = |opts: &EmbedOptions| {
        let device = select_device(DeviceChoice::Cpu).unwrap();
        Embedder::load(dir.to_str().unwrap(), device, opts).map(|_| ())
    };
    let gguf = dir.join("model.gguf");
    let good = std::fs::read(&gguf).unwrap();
    for opts in &both {
        for cut in [0, 3, 20, 200, good.len() / 2, good.len() - 1] {
            std::fs::write(&gguf, &good[..cut]).unwrap();
            let err = load(opts).unwrap_err().to_string();
            assert!(err.contains("model.gguf"), "cut {cut}: {err}");
        }
        // bytes of the header region set to 0xFF: an error or a valid load, never a panic
        for i in (0..good.len().min(4096)).step_by(3) {
            let mut b = good.clone();
            b[i] = 0xFF;
            std::fs::write(&gguf, &b).unwrap();
            if let Err(e) = load(opts) {
                assert!(e.to_string().contains("model.gguf"), "byte {i}: {e}");
            }
        }
    }
    let f16 = EmbedOptions {
        precision: Some(memdex_embed::Precision::F16),
        ..both[0].clone()
    };
    std::fs::write(&gguf, &good).unwrap();
    let err = load(&f16).unwrap_err().to_string();
    assert!(err.contains("--precision"), "{err}");
    std::fs::remove_file(&gguf).unwrap();
    let err = load(&both[0]).unwrap_err().to_string();
    assert!(err.contains("model.gguf"), "{err}");
    // the dense weights still load
    load(&EmbedOptions::default()).unwrap();
}

#[test]
fn weights_are_dequantised_under_bert_names() {
    let (_tmp, dir) = converted();
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let w = st.tensor("embeddings.word_embeddings.weight").unwrap();
    assert_eq!(w.shape(), [84, 32]);
    let q = st
        .tensor("encoder.layer.1.intermediate.dense.weight")
        .unwrap();
    assert_eq!(q.shape(), [64, 32]);
    assert_eq!(st.names().len(), 5 + 2 * 16);
    // the first word-embedding row equals the container's first Q4_0 block, dequantised
    let c = E5s1::read(&fixture()).unwrap();
    let (_, raw) = c.bytes("emb.word").unwrap();
    let want = memdex_convert::q4::dequantize(&raw[..18]);
    let got: Vec<f32> = w.data()[..128]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(got, want);
    let prov: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("PROVENANCE.json")).unwrap()).unwrap();
    assert_eq!(prov["label"], "Q4-derived");
}

#[test]
fn truncated_or_garbled_containers_are_errors_naming_the_file() {
    let good = std::fs::read(fixture()).unwrap();
    let path = Path::new("bad.bin");
    // every truncation up to the end of the directory, then a few into the data
    let cuts = (0..4096.min(good.len())).chain((4096..good.len()).step_by(97));
    for cut in cuts {
        let err = E5s1::parse(path, good[..cut].to_vec()).unwrap_err();
        assert!(err.to_string().starts_with("bad.bin: "), "{cut}: {err}");
    }
    let mut bad = good.clone();
    bad[0] = b'X';
    let err = E5s1::parse(path, bad).unwrap_err().to_string();
    assert!(err.contains("not an E5S1 container"), "{err}");
    // every single byte of the header region set to 0xFF: an error or a valid parse, never
    // a panic (some bytes, e.g. scores, may still parse)
    for i in 0..2048.min(good.len()) {
        let mut b = good.clone();
        b[i] = 0xFF;
        let _ = E5s1::parse(path, b);
    }
}
