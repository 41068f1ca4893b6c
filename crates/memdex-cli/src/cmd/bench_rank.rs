//! `memdex bench rank`: the accelerated ranker (memdex-kernels' `KernelRanker`: the fused
//! kernel on CUDA, or its CPU reference) against the CPU ranker on batches of queries: time
//! per batch on each side and whether they return the same top-k.

use std::sync::Arc;

use anyhow::{bail, Result};
use memdex_eval::{compare_batches, Agreement};
use memdex_kernels::{BatchSeconds, Placement};
use memdex_rank::{BatchQuery, Query, TopK};
use serde::Serialize;

use super::bench_search::Bench;
use crate::cli::{BenchRankArgs, PlacementArg};
use crate::output::print_json;

#[derive(Serialize)]
struct Report {
    bench: &'static str,
    store: String,
    tenants: usize,
    rows: u64,
    /// The CPU ranker on one thread ÷ the ranker, per batch.
    speedup: f64,
    /// The CPU ranker on all cores ÷ the ranker, per batch.
    speedup_vs_parallel: f64,
    /// Ranker, batch, k, timings and the comparison of the top-k.
    agreement: Agreement,
    /// Where the kernel ranker's timed device batches spent their time.
    kernel_batches: BatchSeconds,
}

pub fn run(a: BenchRankArgs) -> Result<()> {
    if a.queries == 0 || a.batch == 0 || a.k == 0 {
        bail!("--queries, --batch and --k must be at least 1");
    }
    let placement = match a.placement {
        PlacementArg::Device => Placement::Device,
        PlacementArg::Auto => Placement::Auto,
    };
    // the kernels run where the model does (`--device`: the CPU reference on the CPU)
    let ranker = Arc::new(super::common::checked_ranker(&a.model, placement)?);
    let Bench {
        reader,
        tenants,
        rows,
        opts,
    } = Bench::open_with(&a.store, &a.model, &a.rank, Some(ranker.clone()))?;

    let texts: Vec<String> = (0..a.queries).map(super::bench_search::query).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = reader.embed_queries(&refs)?;
    let batch: Vec<BatchQuery<'_>> = (0..a.queries)
        .map(|i| BatchQuery {
            tenant: &tenants[i % tenants.len()],
            query: Query {
                text: &texts[i],
                vector: vectors.row(i),
                date_ms: None,
            },
        })
        .collect();
    // warm-up, untimed: the per-tenant caches, the device's modules (and with `auto`, the
    // cost model's first measurements of this batch size on both sides)
    let warm = &batch[..a.batch.min(batch.len())];
    for _ in 0..if placement == Placement::Auto { 3 } else { 1 } {
        reader.top_batch(
            warm,
            &opts,
            TopK {
                k: a.k,
                explain: false,
            },
        )?;
    }

    let warm_seconds = ranker.seconds();
    let agreement = compare_batches(&reader, ranker.as_ref(), &batch, a.k, a.batch, &opts)?;
    let r = Report {
        bench: "rank",
        store: a.store.display().to_string(),
        tenants: tenants.len(),
        rows,
        speedup: agreement.cpu_ms_per_batch / agreement.ranker_ms_per_batch.max(1e-9),
        speedup_vs_parallel: agreement.cpu_parallel_ms_per_batch
            / agreement.ranker_ms_per_batch.max(1e-9),
        agreement,
        kernel_batches: ranker.seconds().since(&warm_seconds),
    };
    if a.json {
        return print_json(&r);
    }
    let g = &r.agreement;
    println!(
        "memdex rank bench: {} queries in batches of {} over {} tenants, {} rows; ranker {}",
        g.queries, g.batch, r.tenants, r.rows, g.ranker
    );
    println!(
        "per batch: CPU ranker {:.2} ms on one thread, {:.2} ms on {} threads; ranker {:.2} ms \
         ({:.2}x, {:.2}x); batches per device {:?}",
        g.cpu_ms_per_batch,
        g.cpu_parallel_ms_per_batch,
        g.cpu_threads,
        g.ranker_ms_per_batch,
        r.speedup,
        r.speedup_vs_parallel,
        g.rank_batches
    );
    println!(
        "top-{}: identical {}, near ties only {}, different {} (max score diff {:.2e})",
        g.k, g.identical, g.near_ties_only, g.different, g.max_score_diff
    );
    let t = &r.kernel_batches;
    let per = |s: f64| s * 1e3 / t.batches.max(1) as f64;
    println!(
        "kernel ranker per device batch ({} batches, {} with the keyword side on the kernels): \
         host prepare {:.2} ms, kernel call {:.2} ms, host finish {:.2} ms (host share {:.2} ms)",
        t.batches,
        t.text_batches,
        per(t.prepare),
        per(t.kernel),
        per(t.finish),
        t.host_ms_per_batch
    );
    Ok(())
}
