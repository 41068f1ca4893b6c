//! `memdex bench rank`: the default ranking of batches of queries through the fused kernel
//! (`Searcher::search_fused`: memdex-kernels' `rank_topk`, CPU reference or CUDA) against the
//! CPU pipeline (`memdex_rank::rank`, one query at a time): time per batch on each side and
//! whether they return the same top-k.

use anyhow::{bail, Result};
use memdex_core::TextKind;
use memdex_eval::{compare_batches, FusedAgreement};
use memdex_pipeline::BatchQuery;
use memdex_rank::Query;
use serde::Serialize;

use super::bench_search::Bench;
use crate::cli::BenchRankArgs;
use crate::output::print_json;

#[derive(Serialize)]
struct Report {
    bench: &'static str,
    store: String,
    tenants: usize,
    rows: u64,
    /// CPU pipeline (one query after another) ÷ fused, per batch.
    speedup: f64,
    /// CPU pipeline on all cores ÷ fused, per batch.
    speedup_vs_parallel: f64,
    /// Device, batch, k, timings and the comparison of the top-k.
    agreement: FusedAgreement,
}

pub fn run(a: BenchRankArgs) -> Result<()> {
    if a.queries == 0 || a.batch == 0 || a.k == 0 {
        bail!("--queries, --batch and --k must be at least 1");
    }
    let Bench {
        searcher,
        tenants,
        rows,
        opts,
    } = Bench::open(&a.store, &a.model, &a.rank)?;
    // the kernels run where the model does (`--device`: the CPU reference on the CPU)
    let kernels = super::load_kernels(a.model.device)?;

    let texts: Vec<String> = (0..a.queries).map(super::bench_search::query).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = searcher.encoder().embed(&refs, TextKind::Query)?;
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
    // warm-up, untimed: the per-tenant caches, the device's modules
    searcher.search_fused(
        kernels.as_ref(),
        &batch[..a.batch.min(batch.len())],
        a.k,
        &opts,
    )?;

    let agreement = compare_batches(&searcher, kernels.as_ref(), &batch, a.k, a.batch, &opts)?;
    let r = Report {
        bench: "rank",
        store: a.store.display().to_string(),
        tenants: tenants.len(),
        rows,
        speedup: agreement.cpu_ms_per_batch / agreement.fused_ms_per_batch.max(1e-9),
        speedup_vs_parallel: agreement.cpu_parallel_ms_per_batch
            / agreement.fused_ms_per_batch.max(1e-9),
        agreement,
    };
    if a.json {
        return print_json(&r);
    }
    let g = &r.agreement;
    println!(
        "memdex rank bench: {} queries in batches of {} over {} tenants, {} rows; fused on {}",
        g.queries, g.batch, r.tenants, r.rows, g.device
    );
    println!(
        "per batch: CPU pipeline {:.2} ms one query at a time, {:.2} ms on {} threads; fused \
         {:.2} ms ({:.2}x, {:.2}x)",
        g.cpu_ms_per_batch,
        g.cpu_parallel_ms_per_batch,
        g.cpu_threads,
        g.fused_ms_per_batch,
        r.speedup,
        r.speedup_vs_parallel
    );
    println!(
        "top-{}: identical {}, near ties only {}, different {} (max score diff {:.2e})",
        g.k, g.identical, g.near_ties_only, g.different, g.max_score_diff
    );
    Ok(())
}
