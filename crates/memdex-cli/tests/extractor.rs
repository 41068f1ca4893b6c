//! `--extractor model:PATH.gguf` end to end with a tiny random GGUF written here: the store
//! records the model's name, its (random) output falls back to the rules, and the store
//! refuses to be extended with another extractor.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Output;

use memdex_testkit::{fails, ok};

fn memdex(args: &[&str]) -> Output {
    memdex_testkit::memdex(env!("CARGO_BIN_EXE_memdex"), args)
}

fn index(input: &Path, store: &Path, extractor: &str) -> Output {
    memdex(&[
        "index",
        "--input",
        input.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--extractor",
        extractor,
    ])
}

#[test]
fn a_model_extractor_is_recorded_and_a_store_is_never_mixed() {
    let dir = tempfile::tempdir().unwrap();
    let gguf = dir.path().join("tiny.gguf");
    memdex_extract_model::testing::write_tiny(&gguf, "llama").unwrap();
    let input = dir.path().join("h.jsonl");
    let session = serde_json::json!({"tenant": "ann", "session_id": "s1",
        "date": "2023-05-01T10:00:00Z", "turns": [
            {"role": "user", "content": "I adopted a dog named Luna yesterday."},
            {"role": "assistant", "content": "Congratulations!"}]});
    std::fs::write(&input, format!("{session}\n")).unwrap();
    let store = dir.path().join("store");
    let spec = format!("model:{}", gguf.display());
    let out = index(&input, &store, &spec);
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("extractor model-v1:tiny.gguf@") && err.contains("1 fell back to the rules"),
        "{err}"
    );
    let manifest = std::fs::read_to_string(store.join("manifest.json")).unwrap();
    assert!(manifest.contains("model-v1:tiny.gguf@"), "{manifest}");
    // the same model again: accepted (nothing new to index)
    ok(&index(&input, &store, &spec));
    // the rules on a model-built store: refused
    let e = fails(&index(&input, &store, "rules"));
    assert!(e.contains("model-v1:tiny.gguf@"), "{e}");
    // a wrong path and a file that is not GGUF: named
    let e = fails(&index(
        &input,
        &dir.path().join("s2"),
        "model:/no/such.gguf",
    ));
    assert!(e.contains("/no/such.gguf"), "{e}");
    let e = fails(&index(
        &input,
        &dir.path().join("s3"),
        &format!("model:{}", input.display()),
    ));
    assert!(e.contains("h.jsonl") && e.contains("not a GGUF"), "{e}");
    let e = fails(&index(&input, &dir.path().join("s4"), "gpt"));
    assert!(e.contains("model:PATH.gguf"), "{e}");
}
