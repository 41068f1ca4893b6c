//! `memdex bench extract`: the fact extractor model against the rules on the same texts, in
//! one run: items/s, generated tokens/s and how many items keep a model fact, batched (as
//! `memdex index` feeds it) and/or one item at a time.

use std::time::Instant;

use anyhow::{bail, Result};
use chrono::NaiveDate;
use memdex_extract::{FactExtractor, HeuristicFacts};
use memdex_extract_model::{ModelExtraction, ModelFacts, ModelStats};
use serde::Serialize;

use crate::cli::{BenchExtractArgs, ExtractMode, ExtractorDevice, ExtractorSpec};
use crate::output::print_json;

#[derive(Serialize)]
struct Report {
    bench: &'static str,
    extractor: String,
    device: &'static str,
    /// Threads of the CPU pool candle's CPU kernels use (`RAYON_NUM_THREADS`).
    threads: usize,
    texts: usize,
    /// Opening the GGUF: its sha256, requantization, the prompt prefix's attention cache.
    load_seconds: f64,
    rules: RulesRun,
    runs: Vec<ModelRun>,
    /// With `--mode both`: items whose facts are the same alone as batched.
    #[serde(skip_serializing_if = "Option::is_none")]
    same_alone_and_batched: Option<usize>,
    /// `--show N`: the first N items, as the first run extracted them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    shown: Vec<Shown>,
}

/// One item's extraction, for a reader.
#[derive(Serialize)]
struct Shown {
    text: String,
    /// The model's raw answer (None: generation failed).
    raw: Option<String>,
    /// The facts the key gets: the model's grounded lines, or the rules' fallback.
    facts: Vec<String>,
    from_model: bool,
    rules: Vec<String>,
}

#[derive(Serialize)]
struct RulesRun {
    seconds: f64,
    items_per_s: f64,
    items_with_facts: usize,
}

#[derive(Serialize)]
struct ModelRun {
    mode: &'static str,
    seconds: f64,
    items_per_s: f64,
    prompt_tokens: u64,
    generated_tokens: u64,
    generated_tokens_per_s: f64,
    /// Items whose facts came from the model; the rest fell back to the rules.
    items_with_model_facts: u64,
    fallback_items: u64,
    errors: u64,
    /// Seconds this adds to a build per 1,000 items, over the rules'.
    added_seconds_per_1000_items: f64,
}

const NO_MODEL: &str =
    "--extractor: give the model to measure, `model:PATH.gguf` (the rules run beside it)";

pub fn run(a: BenchExtractArgs) -> Result<()> {
    if a.choice.extractor == ExtractorSpec::Rules {
        bail!(NO_MODEL);
    }
    let mut texts = super::embed::read_texts(&a.input)?;
    if let Some(n) = a.limit {
        texts.truncate(n);
    }
    if texts.is_empty() {
        bail!("{}: no texts", a.input.display());
    }
    let t = Instant::now();
    let Some(model) = super::fact_model::load_extractor(&a.choice)? else {
        bail!(NO_MODEL);
    };
    let load_seconds = t.elapsed().as_secs_f64();
    let items: Vec<(&str, Option<NaiveDate>)> = texts.iter().map(|t| (t.as_str(), None)).collect();

    let (rules, rule_facts) = rules_run(&items);
    let mut runs = Vec::new();
    let mut answers: Vec<Vec<ModelExtraction>> = Vec::new();
    if matches!(a.mode, ExtractMode::Batched | ExtractMode::Both) {
        let (run, out) = model_run(&model, &items, "batched", &rules, |m, xs| m.run_batch(xs));
        runs.push(run);
        answers.push(out);
    }
    if matches!(a.mode, ExtractMode::Alone | ExtractMode::Both) {
        let (run, out) = model_run(&model, &items, "alone", &rules, |m, xs| {
            xs.iter().map(|&(t, d)| m.run(t, d)).collect()
        });
        runs.push(run);
        answers.push(out);
    }
    let same_alone_and_batched = match answers.as_slice() {
        [b, a] => Some(b.iter().zip(a).filter(|(x, y)| x.facts == y.facts).count()),
        _ => None,
    };
    let shown = answers
        .into_iter()
        .next()
        .unwrap_or_default()
        .into_iter()
        .zip(texts.iter().zip(rule_facts))
        .take(a.show)
        .map(|(x, (text, rules))| Shown {
            text: text.clone(),
            raw: x.raw,
            facts: x.facts,
            from_model: x.from_model,
            rules,
        })
        .collect();
    let report = Report {
        bench: "extract",
        extractor: model.name().to_string(),
        device: match a.choice.extractor_device {
            ExtractorDevice::Cpu => "cpu",
            ExtractorDevice::Cuda => "cuda:0",
        },
        threads: rayon::current_num_threads(),
        texts: texts.len(),
        load_seconds,
        rules,
        runs,
        same_alone_and_batched,
        shown,
    };
    if a.json {
        return print_json(&report);
    }
    print_text(&report);
    Ok(())
}

/// The rules over `items`, timed; and what they found per item.
fn rules_run(items: &[(&str, Option<NaiveDate>)]) -> (RulesRun, Vec<Vec<String>>) {
    let rules = HeuristicFacts::default();
    let t = Instant::now();
    let found: Vec<Vec<String>> = items.iter().map(|&(t, d)| rules.extract(t, d)).collect();
    let seconds = t.elapsed().as_secs_f64().max(1e-9);
    let run = RulesRun {
        seconds,
        items_per_s: items.len() as f64 / seconds,
        items_with_facts: found.iter().filter(|f| !f.is_empty()).count(),
    };
    (run, found)
}

/// One timed pass of the model over `items`; its counts are this pass's alone.
fn model_run(
    model: &ModelFacts,
    items: &[(&str, Option<NaiveDate>)],
    mode: &'static str,
    rules: &RulesRun,
    pass: impl Fn(&ModelFacts, &[(&str, Option<NaiveDate>)]) -> Vec<ModelExtraction>,
) -> (ModelRun, Vec<ModelExtraction>) {
    let before = model.stats();
    let t = Instant::now();
    let out = pass(model, items);
    let seconds = t.elapsed().as_secs_f64().max(1e-9);
    let s = delta(&model.stats(), &before);
    let n = items.len() as f64;
    let run = ModelRun {
        mode,
        seconds,
        items_per_s: n / seconds,
        prompt_tokens: s.prompt_tokens,
        generated_tokens: s.generated_tokens,
        generated_tokens_per_s: s.generated_tokens as f64 / seconds,
        items_with_model_facts: s.model_items,
        fallback_items: s.fallback_items,
        errors: s.errors,
        added_seconds_per_1000_items: 1000.0 * (seconds - rules.seconds) / n,
    };
    (run, out)
}

fn delta(after: &ModelStats, before: &ModelStats) -> ModelStats {
    ModelStats {
        items: after.items - before.items,
        model_items: after.model_items - before.model_items,
        fallback_items: after.fallback_items - before.fallback_items,
        errors: after.errors - before.errors,
        prompt_tokens: after.prompt_tokens - before.prompt_tokens,
        generated_tokens: after.generated_tokens - before.generated_tokens,
        seconds: after.seconds - before.seconds,
    }
}

fn print_text(r: &Report) {
    println!(
        "{} on {} ({} threads), {} texts, loaded in {:.1} s",
        r.extractor, r.device, r.threads, r.texts, r.load_seconds
    );
    println!(
        "  rules    {:>10.1} items/s, {} items with facts",
        r.rules.items_per_s, r.rules.items_with_facts
    );
    for m in &r.runs {
        println!(
            "  {:<8} {:>10.3} items/s, {:.1} generated tokens/s, {} items with model facts, \
             {} fell back to the rules ({} failed); +{:.0} s per 1,000 items",
            m.mode,
            m.items_per_s,
            m.generated_tokens_per_s,
            m.items_with_model_facts,
            m.fallback_items,
            m.errors,
            m.added_seconds_per_1000_items
        );
    }
    if let Some(same) = r.same_alone_and_batched {
        println!("  alone == batched for {same} of {} items", r.texts);
    }
    for x in &r.shown {
        let kept = if x.from_model {
            "model"
        } else {
            "rules fallback"
        };
        println!("item: {}", x.text);
        println!(
            "  model raw: {:?}",
            x.raw.as_deref().unwrap_or("(generation failed)")
        );
        println!("  kept ({kept}): {:?}", x.facts);
        println!("  rules: {:?}", x.rules);
    }
}
