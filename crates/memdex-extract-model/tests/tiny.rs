//! The plumbing on tiny random llama and qwen2 GGUFs written here with candle's GGUF writer:
//! the header and tokenizer are read, generation runs, and its (random) output falls back to
//! the rules.
//! Plus the real SmolLM2-135M when `scripts/fetch-model.sh smollm2` has fetched it.

use std::path::{Path, PathBuf};

use memdex_extract::{FactExtractor, HeuristicFacts};
use memdex_extract_model::testing::write_tiny;
use memdex_extract_model::{ModelDevice, ModelError, ModelFacts, ModelOptions};

fn tiny(dir: &Path) -> PathBuf {
    let p = dir.join("tiny.gguf");
    write_tiny(&p, "llama").expect("write tiny gguf");
    p
}

#[test]
fn the_gguf_tokenizer_round_trips_and_keeps_chatml_markers_whole() {
    let dir = tempfile::tempdir().expect("tmp");
    let (h, _) = memdex_extract_model::GgufHeader::open(&tiny(dir.path())).expect("open");
    let tok = h.tokenizer().expect("tokenizer");
    let text = "<|im_start|>user\nthe 42 café<|im_end|>";
    let enc = tok.encode(text, false).expect("encode");
    let ids = enc.get_ids();
    let id = |t: &str| tok.token_to_id(t).expect(t);
    assert_eq!(ids[0], id("<|im_start|>"));
    assert_eq!(*ids.last().expect("ids"), id("<|im_end|>"));
    assert!(ids.contains(&id("the")), "the merges apply: {ids:?}");
    assert!(
        ids.contains(&id("4")) && ids.contains(&id("2")),
        "digits one by one"
    );
    assert_eq!(tok.decode(ids, false).expect("decode"), text);
}

#[test]
fn a_random_model_runs_and_falls_back_to_the_rules() {
    let dir = tempfile::tempdir().expect("tmp");
    let qwen = dir.path().join("qwen.gguf");
    write_tiny(&qwen, "qwen2").expect("write");
    let m = ModelFacts::load(&qwen, ModelOptions::default()).expect("load qwen2");
    assert!(m.run("Ann: I own a cat.", None).raw.is_some());
    let m = ModelFacts::load(&tiny(dir.path()), ModelOptions::default()).expect("load");
    assert!(m.name().starts_with("model-v1:tiny.gguf@"), "{}", m.name());
    assert!(
        !m.name().ends_with("+q8_0"),
        "f32 weights are not requantized"
    );
    assert!(m.batched());
    let texts = ["Caroline: I adopted a dog last week.", "", "ok"];
    let rules = HeuristicFacts::default();
    let inputs: Vec<_> = texts.iter().map(|t| (*t, None)).collect();
    let got = m.extract_batch(&inputs);
    for (t, facts) in texts.iter().zip(&got) {
        // random weights never write a grounded `a | b | c` line
        assert_eq!(facts, &rules.extract(t, None), "{t:?}");
    }
    let s = m.stats();
    assert_eq!((s.items, s.fallback_items, s.model_items), (3, 3, 0));
    assert!(s.generated_tokens > 0, "{s:?}");
    let x = m.run("Caroline: I adopted a dog.", None);
    assert!(!x.from_model && x.raw.is_some());
    // deterministic: greedy decoding from the same cache
    assert_eq!(m.run("Caroline: I adopted a dog.", None), x);
}

#[test]
fn wrong_files_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let missing = dir.path().join("nope.gguf");
    let e = ModelFacts::load(&missing, ModelOptions::default()).unwrap_err();
    assert!(
        matches!(e, ModelError::Io { .. }) && e.to_string().contains("nope.gguf"),
        "{e}"
    );
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello, not a model").expect("write");
    let e = ModelFacts::load(&text, ModelOptions::default()).unwrap_err();
    assert!(
        matches!(e, ModelError::NotGguf { .. }) && e.to_string().contains("notes.txt"),
        "{e}"
    );
    let cut = dir.path().join("cut.gguf");
    let bytes = std::fs::read(tiny(dir.path())).expect("read");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).expect("write");
    let e = ModelFacts::load(&cut, ModelOptions::default()).unwrap_err();
    assert!(e.to_string().contains("cut.gguf"), "{e}");
    let gemma = dir.path().join("gemma.gguf");
    write_tiny(&gemma, "gemma").expect("write");
    let e = ModelFacts::load(&gemma, ModelOptions::default()).unwrap_err();
    assert!(
        matches!(e, ModelError::Architecture { .. }) && e.to_string().contains("gemma.gguf"),
        "{e}"
    );
    if !cfg!(feature = "cuda") {
        let e = ModelFacts::load(
            &tiny(dir.path()),
            ModelOptions {
                device: ModelDevice::Cuda,
                ..ModelOptions::default()
            },
        )
        .unwrap_err();
        assert!(matches!(e, ModelError::NoCuda), "{e}");
    }
}

/// The fetched SmolLM2 (`scripts/fetch-model.sh smollm2`), or None with the reason printed
/// (a failure under `MEMDEX_REQUIRE_SMOLLM2=1`, as scripts/test.sh sets).
fn smollm2() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf");
    if p.is_file() {
        return Some(p);
    }
    assert!(
        std::env::var_os("MEMDEX_REQUIRE_SMOLLM2").is_none(),
        "{} absent and MEMDEX_REQUIRE_SMOLLM2 set (scripts/fetch-model.sh smollm2)",
        p.display()
    );
    eprintln!(
        "skipped: {} absent (scripts/fetch-model.sh smollm2)",
        p.display()
    );
    None
}

#[test]
fn smollm2_extracts_grounded_facts_when_present() {
    let Some(path) = smollm2() else { return };
    let m = ModelFacts::load(&path, ModelOptions::default()).expect("load SmolLM2");
    assert!(m
        .name()
        .starts_with("model-v1:SmolLM2-135M-Instruct.Q4_1.gguf@b179c9523d0e"));
    let turns = [
        "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
        "Jon: I'm starting a dance studio 'cause I'm passionate about dancing.",
        "Melanie: Thanks!",
    ];
    for t in turns {
        let x = m.run(t, None);
        let from = if x.from_model { "model" } else { "rules" };
        eprintln!("{t}\n  raw: {:?}\n  facts ({from}): {:?}", x.raw, x.facts);
        assert!(x.raw.is_some(), "generation ran");
        if !x.from_model {
            assert_eq!(x.facts, HeuristicFacts::default().extract(t, None));
        }
    }
    let s = m.stats();
    eprintln!("{s:?}");
    assert_eq!((s.items, s.errors), (3, 0));
    // batched: equal-length prompts share passes, rows leave as their answers end; each
    // answer is the one its turn gets alone (quantized weights: row-by-row arithmetic)
    let more = [
        "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
        "Melanie: I went to a pottery class yesterday and it was so relaxing.",
        "Melanie: I went to a pottery class yesterday and it was so peaceful.",
        "Jon: I'm starting a dance studio 'cause I'm passionate about dancing.",
        "Jon: I'm opening a dance studio 'cause I'm passionate about dancing.",
        "Melanie: Thanks!",
        "Caroline: Thanks!",
    ];
    let items: Vec<_> = more.iter().map(|t| (*t, None)).collect();
    let together = m.run_batch(&items);
    for (t, x) in more.iter().zip(&together) {
        assert_eq!(x, &m.run(t, None), "{t}");
    }
    // greedy decoding: on these plain first-person statements SmolLM2 writes at least one
    // grounded triple (2 of 3 on the machine this was written on)
    assert!(s.model_items >= 1, "{s:?}");
}
