//! Family profiles: the tiny fixture model laid out as each family ships in a Hugging Face
//! cache (repo id, which sentence-transformers files exist, tokenizer.json or vocab.txt) is
//! resolved by repo id without flags and embeds as the family's model card prescribes. The
//! reference is the plain fixture (mean pooling, unit vectors, no prefix) fed the text the
//! family would see.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use candle_core::Device;
use memdex_core::{Pooling, TextKind};
use memdex_embed::{EmbedOptions, Embedder, Family, ModelFiles, BGE_EN_QUERY};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-bert")
}

fn plain() -> Embedder {
    Embedder::load(
        fixture().to_str().unwrap(),
        Device::Cpu,
        &EmbedOptions {
            // the profiles' 512 is capped by the fixture's 40 positions; match it
            max_length: Some(40),
            ..Default::default()
        },
    )
    .unwrap()
}

/// A hub cache holding the fixture as `repo`, keeping only `keep` of its files (config.json and
/// the weights always), plus `extra` files written as given.
fn cached(
    cache: &Path,
    repo: &str,
    keep: &[&str],
    extra: &[(&str, String)],
) -> (hf_hub::Cache, PathBuf) {
    let root = cache.join(format!("models--{}", repo.replace('/', "--")));
    let snap = root.join("snapshots/0123abcd");
    std::fs::create_dir_all(&snap).unwrap();
    for f in ["config.json", "model.safetensors"].iter().chain(keep) {
        let to = snap.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(fixture().join(f), to).unwrap();
    }
    for (f, body) in extra {
        let to = snap.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, body).unwrap();
    }
    std::fs::create_dir_all(root.join("refs")).unwrap();
    std::fs::write(root.join("refs/main"), "0123abcd").unwrap();
    (hf_hub::Cache::new(cache.to_path_buf()), snap)
}

fn load(files: ModelFiles) -> Embedder {
    Embedder::from_files(files, Device::Cpu, &EmbedOptions::default()).unwrap()
}

fn close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-5, "{a:?}\n{b:?}");
    }
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// The fixture's WordPiece vocabulary as a BERT `vocab.txt` (one token a line, id order).
fn vocab_txt() -> String {
    let t: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture().join("tokenizer.json")).unwrap()).unwrap();
    let vocab = t["model"]["vocab"].as_object().unwrap();
    let mut v: Vec<(u64, &str)> = vocab
        .iter()
        .map(|(k, id)| (id.as_u64().unwrap(), k.as_str()))
        .collect();
    v.sort();
    v.iter().map(|(_, k)| format!("{k}\n")).collect()
}

const TEXTS: [&str; 3] = ["my dog", "Where did Caroline go?", "a b c"];

#[test]
fn contriever_checkpoint_with_only_vocab_txt_gives_raw_mean_vectors() {
    let tmp = tempfile::tempdir().unwrap();
    let extra = [
        ("vocab.txt", vocab_txt()),
        ("tokenizer_config.json", r#"{"do_lower_case": true}"#.into()),
    ];
    let (cache, _) = cached(tmp.path(), "facebook/contriever", &[], &extra);
    let files = ModelFiles::resolve_in("facebook/contriever", &cache).unwrap();
    assert_eq!(files.family, Family::Contriever);
    assert!(files.tokenizer.ends_with("vocab.txt"));
    assert_eq!((files.pooling, files.normalize), (Pooling::Mean, false));
    assert_eq!(files.max_seq_length, Some(512));
    let e = load(files);
    assert_eq!(e.info().query_prefix, "");
    let reference = plain();
    let tokens = e.tokenize(&TEXTS, TextKind::Query).unwrap();
    assert_eq!(
        tokens,
        reference.tokenize(&TEXTS, TextKind::Query).unwrap(),
        "vocab.txt tokenises like the fixture's tokenizer.json"
    );
    let got = e.embed(&TEXTS, TextKind::Query).unwrap();
    let want = reference.embed(&TEXTS, TextKind::Query).unwrap();
    for i in 0..TEXTS.len() {
        let n = norm(got.row(i));
        assert!(
            (n - 1.0).abs() > 1e-3,
            "inner-product family: not normalised"
        );
        let unit: Vec<f32> = got.row(i).iter().map(|x| x / n).collect();
        close(&unit, want.row(i));
    }
}

#[test]
fn bare_bge_checkpoint_embeds_like_its_sentence_transformers_layout() {
    let tmp = tempfile::tempdir().unwrap();
    let cls = r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#;
    // as BAAI ships it: modules.json with CLS pooling and Normalize, no prompts
    let (cache, _) = cached(
        tmp.path(),
        "BAAI/bge-small-en-v1.5",
        &["tokenizer.json", "modules.json"],
        &[("1_Pooling/config.json", cls.into())],
    );
    // the same weights with no sentence-transformers files at all
    let (_, bare) = cached(tmp.path(), "acme/bge-tiny-en", &["tokenizer.json"], &[]);
    let st = ModelFiles::resolve_in("BAAI/bge-small-en-v1.5", &cache).unwrap();
    let bare = ModelFiles::from_dir_named(&bare, "x", "acme/bge-tiny-en".into()).unwrap();
    for f in [&st, &bare] {
        assert_eq!(f.family, Family::Bge { chinese: false });
        assert_eq!((f.pooling, f.normalize), (Pooling::Cls, true));
        assert_eq!(
            (f.query_prefix.as_str(), f.passage_prefix.as_str()),
            (BGE_EN_QUERY, "")
        );
    }
    let (st, bare) = (load(st), load(bare));
    let q = st.embed(&TEXTS, TextKind::Query).unwrap();
    close(&q.data, &bare.embed(&TEXTS, TextKind::Query).unwrap().data);
    // the instruction goes before queries only: a query is the passage of instruction + text
    let with: Vec<String> = TEXTS.iter().map(|t| format!("{BGE_EN_QUERY}{t}")).collect();
    let with: Vec<&str> = with.iter().map(String::as_str).collect();
    let p = st.embed(&with, TextKind::Passage).unwrap();
    assert_eq!(q.tokens, p.tokens);
    for i in 0..TEXTS.len() {
        close(q.row(i), p.row(i));
        assert!((norm(q.row(i)) - 1.0).abs() < 1e-4);
    }
}

#[test]
fn gte_without_a_normalize_module_is_still_cosine() {
    let tmp = tempfile::tempdir().unwrap();
    let modules = r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
        {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]"#;
    let (cache, _) = cached(
        tmp.path(),
        "thenlper/gte-small",
        &["tokenizer.json", "1_Pooling/config.json"],
        &[("modules.json", modules.into())],
    );
    let files = ModelFiles::resolve_in("thenlper/gte-small", &cache).unwrap();
    assert_eq!(files.family, Family::Gte);
    assert_eq!((files.pooling, files.normalize), (Pooling::Mean, true));
    let e = load(files);
    let got = e.embed(&TEXTS, TextKind::Query).unwrap();
    close(
        &got.data,
        &plain().embed(&TEXTS, TextKind::Query).unwrap().data,
    );
}

#[test]
fn bare_e5_checkpoint_gets_its_prefixes_from_the_repo_id() {
    let tmp = tempfile::tempdir().unwrap();
    let (cache, _) = cached(tmp.path(), "intfloat/e5-small-v2", &["tokenizer.json"], &[]);
    let files = ModelFiles::resolve_in("intfloat/e5-small-v2", &cache).unwrap();
    assert_eq!(files.family, Family::E5);
    assert_eq!((files.pooling, files.normalize), (Pooling::Mean, true));
    let e = load(files);
    let reference = plain();
    for (kind, prefix) in [
        (TextKind::Query, "query: "),
        (TextKind::Passage, "passage: "),
    ] {
        let got = e.embed(&TEXTS, kind).unwrap();
        let with: Vec<String> = TEXTS.iter().map(|t| format!("{prefix}{t}")).collect();
        let with: Vec<&str> = with.iter().map(String::as_str).collect();
        let want = reference.embed(&with, TextKind::Passage).unwrap();
        close(&got.data, &want.data);
    }
}

#[test]
fn sentence_transformers_files_win_over_the_family_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let prompts = r#"{"prompts": {"query": "q: ", "passage": "d: "}}"#;
    let (cache, _) = cached(
        tmp.path(),
        "intfloat/e5-tiny",
        &[
            "tokenizer.json",
            "modules.json",
            "1_Pooling/config.json",
            "sentence_bert_config.json",
        ],
        &[("config_sentence_transformers.json", prompts.into())],
    );
    let files = ModelFiles::resolve_in("intfloat/e5-tiny", &cache).unwrap();
    assert_eq!(files.family, Family::E5);
    assert_eq!(files.max_seq_length, Some(24));
    assert_eq!(
        (files.query_prefix.as_str(), files.passage_prefix.as_str()),
        ("q: ", "d: ")
    );
}
