use std::time::Instant;

use anyhow::{bail, Result};
use memdex_core::TextKind;
use memdex_embed::plan_batches;
use serde::Serialize;

use crate::cli::BenchEmbedArgs;
use crate::output::print_json;

#[derive(Serialize)]
struct Report {
    bench: &'static str,
    model: String,
    device: String,
    backend: &'static str,
    /// Instruction set of the fast encoder's kernels (`MEMDEX_CPU_ISA` overrides detection);
    /// for candle: its own run-time dispatch.
    isa: String,
    /// How a job of several batches uses the threads (`MEMDEX_CPU_SPLIT`): `batches` side by
    /// side, one per thread, or `operators` (every step of one batch's pass split); `batches`
    /// and `token_budget` below count the operator split's plan.
    split: &'static str,
    threads: usize,
    texts: usize,
    /// Tokens after truncation, special tokens included (what the model sees).
    tokens: usize,
    /// Tokens including per-batch padding.
    padded_tokens: usize,
    batches: usize,
    token_budget: usize,
    max_batch: usize,
    max_length: usize,
    repeats: usize,
    /// Median wall time of one full pass (tokenize + forward + pooling).
    seconds: f64,
    all_seconds: Vec<f64>,
    /// Median time to tokenize all texts alone.
    tokenize_seconds: f64,
    texts_per_s: f64,
    tokens_per_s: f64,
    /// The encoder's useful arithmetic (no padding) per second, in 10⁹ FLOP/s.
    effective_gflops: f64,
    /// With MEMDEX_PROFILE=1: wall seconds per encoder stage, per timed pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<Vec<(&'static str, f64)>>,
}

pub fn run(a: BenchEmbedArgs) -> Result<()> {
    let mut texts = super::embed::read_texts(&a.input)?;
    if let Some(n) = a.limit {
        texts.truncate(n);
    }
    if texts.is_empty() {
        bail!("{}: no texts", a.input.display());
    }
    let embedder = super::common::load_embedder(&a.model, None)?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (budget, max_batch) = embedder.batch_policy();

    // warm-up: allocator, page cache of the weights, thread pool
    embedder.embed(&refs[..refs.len().min(64)], TextKind::Passage)?;

    let lengths: Vec<usize> = embedder
        .tokenize(&refs, TextKind::Passage)?
        .iter()
        .map(Vec::len)
        .collect();
    let plans = plan_batches(&lengths, budget, max_batch);
    let padded: usize = plans.iter().map(|p| p.padded_len * p.indices.len()).sum();

    let repeats = a.repeats.max(1);
    memdex_embed::take_stage_profile(); // drop the warm-up's
    let mut times = Vec::new();
    let mut tok_times = Vec::new();
    for _ in 0..repeats {
        let t = Instant::now();
        embedder.tokenize(&refs, TextKind::Passage)?;
        tok_times.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let out = embedder.embed(&refs, TextKind::Passage)?;
        times.push(t.elapsed().as_secs_f64());
        std::hint::black_box(out);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let all_seconds = times.clone();
    let seconds = median(&mut times);
    let tokens: usize = lengths.iter().sum();
    let r = Report {
        bench: "embed",
        model: embedder.info().name.clone(),
        device: memdex_embed::device_name(embedder.device()),
        backend: embedder.backend_name(),
        isa: embedder.kernels(),
        split: match embedder.cpu_isa() {
            Some(_) => embedder.cpu_split().name(),
            None => "operators (candle)",
        },
        threads: rayon::current_num_threads(),
        texts: texts.len(),
        tokens,
        padded_tokens: padded,
        batches: plans.len(),
        token_budget: budget,
        max_batch,
        max_length: embedder.info().max_length,
        repeats,
        seconds,
        all_seconds,
        tokenize_seconds: median(&mut tok_times),
        texts_per_s: texts.len() as f64 / seconds,
        tokens_per_s: tokens as f64 / seconds,
        effective_gflops: embedder.forward_flops(&lengths) / seconds / 1e9,
        profile: memdex_embed::take_stage_profile().map(|p| {
            p.into_iter()
                .map(|(name, s)| (name, s / repeats as f64))
                .collect()
        }),
    };
    if a.json {
        return print_json(&r);
    }
    println!(
        "memdex embed bench: {} texts, {} tokens ({} padded, {} batches; budget {} tokens, ≤{} per batch) on {} ({}, ISA {}) with {} threads, split by {}",
        r.texts, r.tokens, r.padded_tokens, r.batches, r.token_budget, r.max_batch, r.device, r.backend, r.isa, r.threads, r.split
    );
    println!(
        "median of {}: {:.3}s → {:.1} texts/s, {:.0} tokens/s, {:.1} effective GFLOP/s (tokenizer alone {:.3}s)",
        r.repeats, r.seconds, r.texts_per_s, r.tokens_per_s, r.effective_gflops, r.tokenize_seconds
    );
    if let Some(p) = &r.profile {
        let total: f64 = p.iter().map(|(_, s)| s).sum();
        println!(
            "stages (wall s per pass; {:.3}s of {:.3}s in the encoder):",
            total, r.seconds
        );
        for (name, s) in p {
            println!("  {:52} {:7.3}s {:5.1} %", name, s, 100.0 * s / r.seconds);
        }
    }
    Ok(())
}
