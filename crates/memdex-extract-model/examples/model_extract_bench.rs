//! The model extractor against the rules on LoCoMo turns: speed and how many turns yield a
//! model fact.
//!
//! cargo run --release -p memdex-extract-model --example model_extract_bench -- \
//!     MODEL.gguf locomo.json [TURNS=60] [--no-requantize] [--show K] [--mode batched|alone|both]
//!
//! `--mode` (default batched): all turns in one `run_batch` (prompts of equal token length in
//! lockstep), one `run` per turn, or both in turn, the second checked equal to the first.
//! (RAYON_NUM_THREADS=1 on a busy machine: candle's kernels spin on a second thread.)

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use memdex_extract::{FactExtractor, HeuristicFacts};
use memdex_extract_model::{ModelFacts, ModelOptions};

/// The first `n` turns of speaker A of each conversation, round-robin, as `Name: text`.
fn turns(path: &PathBuf, n: usize) -> Result<Vec<String>> {
    let raw = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let convs: Vec<serde_json::Value> = serde_json::from_slice(&raw)?;
    let mut per: Vec<Vec<String>> = Vec::new();
    for c in &convs {
        let conv = &c["conversation"];
        let a = conv["speaker_a"].as_str().unwrap_or_default();
        let mut mine = Vec::new();
        for s in 1..=60 {
            let Some(sess) = conv[format!("session_{s}")].as_array() else {
                continue;
            };
            for t in sess {
                if t["speaker"].as_str() == Some(a) {
                    let text = t["text"].as_str().unwrap_or_default();
                    mine.push(format!("{a}: {text}"));
                }
            }
        }
        per.push(mine);
    }
    let mut out = Vec::new();
    for i in 0.. {
        if out.len() >= n || per.iter().all(|p| p.len() <= i) {
            break;
        }
        out.extend(per.iter().filter_map(|p| p.get(i).cloned()));
    }
    out.truncate(n);
    Ok(out)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let model = PathBuf::from(
        args.first()
            .context("usage: MODEL.gguf locomo.json [TURNS]")?,
    );
    let data = PathBuf::from(
        args.get(1)
            .context("usage: MODEL.gguf locomo.json [TURNS]")?,
    );
    let n: usize = args.get(2).map_or(Ok(60), |s| s.parse())?;
    let requantize = !args.iter().any(|a| a == "--no-requantize");
    let show: usize = args
        .iter()
        .position(|a| a == "--show")
        .and_then(|i| args.get(i + 1))
        .map_or(Ok(8), |s| s.parse())?;
    let mode = args
        .iter()
        .position(|a| a == "--mode")
        .and_then(|i| args.get(i + 1))
        .map_or("batched", String::as_str)
        .to_string();
    let texts = turns(&data, n)?;
    let t0 = Instant::now();
    let m = ModelFacts::load(
        &model,
        ModelOptions {
            requantize,
            ..ModelOptions::default()
        },
    )?;
    let load_s = t0.elapsed().as_secs_f64();
    let rules = HeuristicFacts::default();
    let t1 = Instant::now();
    let rule_facts: Vec<Vec<String>> = texts.iter().map(|t| rules.extract(t, None)).collect();
    let rules_s = t1.elapsed().as_secs_f64();
    let items: Vec<(&str, _)> = texts.iter().map(|t| (t.as_str(), None)).collect();
    let mut runs = Vec::new();
    if mode == "alone" || mode == "both" {
        let t = Instant::now();
        let xs: Vec<_> = texts.iter().map(|t| m.run(t, None)).collect();
        runs.push(("alone", t.elapsed().as_secs_f64(), xs));
    }
    if mode == "batched" || mode == "both" {
        let t = Instant::now();
        let xs = m.run_batch(&items);
        runs.push(("batched", t.elapsed().as_secs_f64(), xs));
    }
    anyhow::ensure!(
        !runs.is_empty(),
        "--mode {mode}: use batched, alone or both"
    );
    for (name, secs, _) in &runs {
        println!(
            "{name}: {:.1} s, {:.3} turns/s",
            secs,
            texts.len() as f64 / secs
        );
    }
    if let [(_, _, a), (_, _, b)] = runs.as_slice() {
        let same = a.iter().zip(b).filter(|(x, y)| x == y).count();
        println!("batched == alone for {same} of {} turns", texts.len());
    }
    let xs = &runs.last().expect("a run").2;
    for ((t, r), x) in texts.iter().zip(&rule_facts).zip(xs).take(show) {
        println!(
            "turn: {t}\n  model raw: {:?}\n  kept ({}): {:?}\n  rules: {r:?}",
            x.raw,
            if x.from_model {
                "model"
            } else {
                "rules fallback"
            },
            x.facts
        );
    }
    let s = m.stats();
    let rule_items = rule_facts.iter().filter(|f| !f.is_empty()).count();
    println!(
        "{}",
        serde_json::json!({
            "turns": texts.len(), "mode": mode, "requantize": requantize, "rayon_threads": std::env::var("RAYON_NUM_THREADS").unwrap_or_default(), "load_seconds": load_s,
            "model_seconds": s.seconds, "turns_per_second": s.items as f64 / s.seconds,
            "generated_tokens": s.generated_tokens, "prompt_tokens": s.prompt_tokens,
            "generated_tokens_per_second": s.generated_tokens as f64 / s.seconds,
            "turns_with_model_fact": s.model_items, "fallback_turns": s.fallback_items,
            "errors": s.errors, "turns_with_rule_fact": rule_items,
            "rules_turns_per_second": texts.len() as f64 / rules_s.max(1e-9),
        })
    );
    Ok(())
}
