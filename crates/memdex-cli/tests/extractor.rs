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

#[test]
fn bench_extract_reports_the_model_beside_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let gguf = dir.path().join("tiny.gguf");
    memdex_extract_model::testing::write_tiny(&gguf, "llama").unwrap();
    let input = dir.path().join("texts.jsonl");
    let texts = [
        "Ann: I adopted a dog named Luna yesterday.",
        "Bob: Congratulations! What breed is she?",
        "Ann: My sister lives in Porto.",
    ];
    let lines: Vec<String> = texts
        .iter()
        .map(|t| serde_json::json!({ "text": t }).to_string())
        .collect();
    std::fs::write(&input, lines.join("\n")).unwrap();
    let spec = format!("model:{}", gguf.display());
    let bench = |extra: &[&str]| {
        let mut args = vec!["bench", "extract", "--input", input.to_str().unwrap()];
        args.extend_from_slice(extra);
        memdex(&args)
    };
    let out = bench(&[
        "--extractor",
        &spec,
        "--mode",
        "both",
        "--show",
        "2",
        "--json",
    ]);
    ok(&out);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["texts"], 3, "{r}");
    assert!(r["extractor"]
        .as_str()
        .unwrap()
        .starts_with("model-v1:tiny.gguf@"));
    assert_eq!(r["rules"]["items_with_facts"], 2, "{r}");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{r}");
    for (run, mode) in runs.iter().zip(["batched", "alone"]) {
        assert_eq!(run["mode"], mode);
        assert!(run["items_per_s"].as_f64().unwrap() > 0.0, "{r}");
        // each pass counts its own items: every one either kept model facts or fell back
        let kept = run["items_with_model_facts"].as_u64().unwrap();
        assert_eq!(kept + run["fallback_items"].as_u64().unwrap(), 3, "{r}");
        assert!(run["generated_tokens"].as_u64().unwrap() > 0, "{r}");
    }
    // a batch gives each item the answer it gets alone
    assert_eq!(r["same_alone_and_batched"], 3, "{r}");
    // --show 2: the first two items, each with the rules' facts beside what was kept
    let shown = r["shown"].as_array().unwrap();
    assert_eq!(shown.len(), 2, "{r}");
    assert_eq!(shown[0]["text"], texts[0]);
    assert!(!shown[0]["rules"].as_array().unwrap().is_empty(), "{r}");
    assert!(shown[1]["rules"].as_array().unwrap().is_empty(), "{r}");
    for x in shown {
        if x["from_model"] == false {
            assert_eq!(
                x["facts"], x["rules"],
                "a fallback keeps the rules' facts: {r}"
            );
        }
    }
    // --limit, the text report
    let out = bench(&["--extractor", &spec, "--limit", "1", "--show", "5"]);
    ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1 texts") && text.contains("batched"),
        "{text}"
    );
    assert_eq!(text.matches("\nitem: ").count(), 1, "{text}");
    // the rules alone, an empty file: refused, named
    let e = fails(&bench(&["--extractor", "rules"]));
    assert!(e.contains("model:PATH.gguf"), "{e}");
    std::fs::write(&input, "").unwrap();
    let e = fails(&bench(&["--extractor", &spec]));
    assert!(e.contains("texts.jsonl") && e.contains("no texts"), "{e}");
}
