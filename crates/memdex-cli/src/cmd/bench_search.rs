//! `memdex bench search`: the latency one client of `memdex serve` waits for, without HTTP —
//! query embedding and ranking timed apart, one query at a time, tenants taken in turn.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Result};
use memdex_eval::percentile;
use memdex_memory::{Reader, StageNames};
use memdex_rank::{fit_to_store, CpuRanker, Query, RankOptions, SharedRanker, Stages};
use memdex_store::Store;
use serde::Serialize;

use crate::cli::{BenchSearchArgs, ModelArgs};
use crate::output::print_json;

/// Latency percentiles of one stage, in milliseconds.
#[derive(Serialize)]
struct Stage {
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
    mean: f64,
}

impl Stage {
    fn of(mut ms: Vec<f64>) -> Stage {
        Stage {
            p50: percentile(&mut ms, 50.0),
            p90: percentile(&mut ms, 90.0),
            p99: percentile(&mut ms, 99.0),
            max: percentile(&mut ms, 100.0),
            mean: ms.iter().sum::<f64>() / ms.len() as f64,
        }
    }
}

#[derive(Serialize)]
struct Report {
    bench: &'static str,
    store: String,
    tenants: usize,
    rows: u64,
    model: String,
    device: String,
    backend: &'static str,
    /// The encoder's kernels (the fast CPU encoder: instruction set, `MEMDEX_CPU_ISA`).
    kernels: String,
    threads: usize,
    queries: usize,
    /// Mean query length in tokens (special tokens included).
    query_tokens: f64,
    embed_ms: Stage,
    rank_ms: Stage,
    total_ms: Stage,
}

const TEMPLATES: [&str; 12] = [
    "what did I say about the {}?",
    "when did we talk about my {}?",
    "which {} did I mention last month?",
    "how is my {} doing these days?",
    "what was the name of the {} I liked?",
    "where did I buy the {}?",
    "did I ever tell you about the {} and the {}?",
    "remind me what happened with the {} after the trip",
    "what advice did you give me on my {}?",
    "who gave me the {}?",
    "how much did the {} cost in the end?",
    "what do I usually do with my {} on weekends?",
];

const TOPICS: [&str; 24] = [
    "dog",
    "cat",
    "sister",
    "guitar",
    "marathon",
    "job",
    "garden",
    "trip",
    "book",
    "piano",
    "doctor",
    "car",
    "birthday",
    "recipe",
    "movie",
    "camera",
    "apartment",
    "bike",
    "yoga class",
    "coffee machine",
    "vacation",
    "project",
    "interview",
    "painting",
];

/// The `i`-th query: distinct texts for the first 12 × 24 × 24 indices.
pub(super) fn query(i: usize) -> String {
    let t = TEMPLATES[i % TEMPLATES.len()];
    let a = TOPICS[(i / TEMPLATES.len()) % TOPICS.len()];
    let b = TOPICS[(i / (TEMPLATES.len() * TOPICS.len()) + i) % TOPICS.len()];
    t.replacen("{}", a, 1).replacen("{}", b, 1)
}

/// A store to benchmark searches on: its reader (the store's own model), its tenants, live
/// rows and the ranking options (the search defaults with the user's stages, fitted).
pub(super) struct Bench {
    pub reader: Reader,
    pub tenants: Vec<String>,
    pub rows: u64,
    pub opts: RankOptions,
}

impl Bench {
    pub fn open(store: &Path, model: &ModelArgs, rank: &Stages) -> Result<Bench> {
        Bench::open_with(store, model, rank, None)
    }

    /// [`Self::open`] ranking through `ranker` (None: the CPU ranker).
    pub fn open_with(
        store: &Path,
        model: &ModelArgs,
        rank: &Stages,
        ranker: Option<SharedRanker>,
    ) -> Result<Bench> {
        let s = Store::open(store)?;
        let tenants: Vec<String> = s.tenants().keys().map(|t| t.to_string()).collect();
        if tenants.is_empty() {
            bail!("{}: the store has no items", store.display());
        }
        let rows = s.rows();
        let embedder = super::common::load_embedder(model, s.manifest().model_source.as_deref())?;
        let ranker = ranker.unwrap_or_else(|| std::sync::Arc::new(CpuRanker::default()));
        let reader = Reader::with_ranker(s, Box::new(embedder), ranker, StageNames::Flags)?;
        let mut opts = super::common::rank_options(rank, RankOptions::default())?;
        fit_to_store(&mut opts, rank.time.is_some(), reader.store());
        Ok(Bench {
            reader,
            tenants,
            rows,
            opts,
        })
    }
}

pub fn run(a: BenchSearchArgs) -> Result<()> {
    if a.queries == 0 || a.k == 0 {
        bail!("--queries and --k must be at least 1");
    }
    let Bench {
        reader,
        tenants,
        rows,
        opts,
    } = Bench::open(&a.store, &a.model, &a.rank)?;

    let run_one = |i: usize, tenant: &str| -> Result<(f64, f64, usize)> {
        let text = query(i);
        let t = Instant::now();
        let e = reader.embed_queries(&[&text])?;
        let embed = t.elapsed().as_secs_f64() * 1e3;
        let q = Query {
            text: &text,
            vector: e.row(0),
            date_ms: None,
        };
        let t = Instant::now();
        let hits = reader.rank(tenant, &q, &opts)?.hits(a.k);
        let rank = t.elapsed().as_secs_f64() * 1e3;
        std::hint::black_box(hits);
        Ok((embed, rank, e.tokens[0]))
    };
    // warm-up, untimed: every tenant's BM25 / importance caches (a server warms them at start),
    // the weights in cache, the thread pool
    let warm = tracing::info_span!("warm-up").entered();
    for (i, t) in tenants.iter().enumerate() {
        run_one(100_000 + i, t)?;
    }
    drop(warm);
    let (mut embed, mut rank, mut total, mut tokens) = (vec![], vec![], vec![], 0usize);
    for i in 0..a.queries {
        let (e, r, n) = run_one(i, &tenants[i % tenants.len()])?;
        embed.push(e);
        rank.push(r);
        total.push(e + r);
        tokens += n;
    }
    let r = Report {
        bench: "search",
        store: a.store.display().to_string(),
        tenants: tenants.len(),
        rows,
        model: reader.encoder().info().name.clone(),
        device: reader.encoder().device(),
        backend: reader.encoder().backend(),
        kernels: reader.encoder().kernels(),
        threads: rayon::current_num_threads(),
        queries: a.queries,
        query_tokens: tokens as f64 / a.queries as f64,
        embed_ms: Stage::of(embed),
        rank_ms: Stage::of(rank),
        total_ms: Stage::of(total),
    };
    if a.json {
        return print_json(&r);
    }
    println!(
        "memdex search bench: {} queries (~{:.1} tokens) over {} tenants, {} rows; {} on {} ({}, {}), {} threads",
        r.queries, r.query_tokens, r.tenants, r.rows, r.model, r.device, r.backend, r.kernels, r.threads
    );
    for (name, s) in [
        ("embed", &r.embed_ms),
        ("rank", &r.rank_ms),
        ("total", &r.total_ms),
    ] {
        println!(
            "{name:>6} ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}  mean {:.2}",
            s.p50, s.p90, s.p99, s.max, s.mean
        );
    }
    Ok(())
}
