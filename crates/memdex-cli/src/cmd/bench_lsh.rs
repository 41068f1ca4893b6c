use std::time::Instant;

use anyhow::{bail, Result};
use memdex_score::lsh::{Lsh, LshParams};
use memdex_store::Store;
use serde::Serialize;

use crate::cli::BenchLshArgs;
use crate::output::print_json;

#[derive(Serialize)]
struct Row {
    buckets: usize,
    tables: usize,
    probes: usize,
    recall_at_10: f64,
    /// Mean share of the tenant's rows scored per query.
    scanned: f64,
    exact_ms_per_query: f64,
    lsh_ms_per_query: f64,
    speedup: f64,
    index_seconds: f64,
}

pub fn run(a: BenchLshArgs) -> Result<()> {
    let store = Store::open(&a.store)?;
    let tenant = match &a.tenant {
        Some(t) => t.clone(),
        None => match store.tenants().into_iter().max_by_key(|(_, n)| *n) {
            Some((t, _)) => t.to_string(),
            None => bail!("{}: the store is empty", a.store.display()),
        },
    };
    let dim = store.dim();
    // the tenant's rows as one contiguous block
    let rows: Vec<f32> = store
        .tenant_slices(&tenant)
        .iter()
        .flat_map(|s| s.vector_runs())
        .flat_map(|r| r.data(dim).iter().copied())
        .collect();
    let n = rows.len() / dim;
    if n < 20 {
        bail!("tenant {tenant:?} has {n} items; the benchmark needs at least 20");
    }
    let queries: Vec<usize> = (0..a.queries.min(n))
        .map(|i| i * n / a.queries.min(n))
        .collect();
    // exact leave-one-out neighbours
    let t = Instant::now();
    let truth: Vec<Vec<u32>> = queries
        .iter()
        .map(|&q| {
            memdex_score::top_k(&rows[q * dim..(q + 1) * dim], &[&rows], dim, 11)
                .into_iter()
                .filter(|h| h.row as usize != q)
                .take(10)
                .map(|h| h.row)
                .collect()
        })
        .collect();
    let exact_ms = t.elapsed().as_secs_f64() * 1e3 / queries.len() as f64;
    let mut out = Vec::new();
    for buckets in [16, 64, 256] {
        for tables in [1, 4, 8] {
            let lsh = Lsh::new(
                dim,
                LshParams {
                    buckets,
                    tables,
                    seed: 42,
                },
            );
            let t = Instant::now();
            let index = lsh.index(&rows);
            let index_seconds = t.elapsed().as_secs_f64();
            let (mut found, mut scanned) = (0usize, 0usize);
            let t = Instant::now();
            for (qi, &q) in queries.iter().enumerate() {
                let (hits, s) =
                    index.search(&lsh, &rows, &rows[q * dim..(q + 1) * dim], 11, a.probes);
                scanned += s;
                found += hits
                    .iter()
                    .filter(|h| h.row as usize != q && truth[qi].contains(&h.row))
                    .count();
            }
            let lsh_ms = t.elapsed().as_secs_f64() * 1e3 / queries.len() as f64;
            out.push(Row {
                buckets,
                tables,
                probes: a.probes,
                recall_at_10: found as f64 / truth.iter().map(Vec::len).sum::<usize>() as f64,
                scanned: scanned as f64 / (queries.len() * n) as f64,
                exact_ms_per_query: exact_ms,
                lsh_ms_per_query: lsh_ms,
                speedup: exact_ms / lsh_ms,
                index_seconds,
            });
        }
    }
    let stored = stored_buckets(&store, &tenant, &rows, &queries, &truth, a.probes, exact_ms);
    if a.json {
        return print_json(&serde_json::json!({"tenant": tenant, "rows": n,
            "queries": queries.len(), "results": out, "stored": stored}));
    }
    println!(
        "tenant {tenant:?}: {n} rows, {} leave-one-out queries, exact {exact_ms:.3} ms/query",
        queries.len()
    );
    println!(
        "{:>7} {:>6} {:>6} {:>10} {:>8} {:>9} {:>8}",
        "buckets", "tables", "probes", "recall@10", "scanned", "ms/query", "speedup"
    );
    for r in &out {
        println!(
            "{:>7} {:>6} {:>6} {:>10.3} {:>7.1}% {:>9.3} {:>7.1}x",
            r.buckets,
            r.tables,
            r.probes,
            r.recall_at_10,
            r.scanned * 100.0,
            r.lsh_ms_per_query,
            r.speedup
        );
    }
    if let Some(r) = stored {
        println!(
            "stored bucket ids ({} buckets, {} tables, seed {}): recall@10 {:.3}, scanned {:.1}%, \
             {:.3} ms/query, {:.1}x",
            r.buckets,
            r.tables,
            r.seed,
            r.recall_at_10,
            r.scanned * 100.0,
            r.lsh_ms_per_query,
            r.speedup
        );
    }
    Ok(())
}

#[derive(Serialize)]
struct Stored {
    buckets: u32,
    tables: u32,
    seed: u64,
    probes: usize,
    recall_at_10: f64,
    scanned: f64,
    lsh_ms_per_query: f64,
    speedup: f64,
}

/// The store's own hashing (bucket ids read from the segments' column), when it has one.
fn stored_buckets(
    store: &Store,
    tenant: &str,
    rows: &[f32],
    queries: &[usize],
    truth: &[Vec<u32>],
    probes: usize,
    exact_ms: f64,
) -> Option<Stored> {
    let meta = store.manifest().lsh?;
    let lsh = memdex_pipeline::lsh::projections(&meta);
    let dim = store.dim();
    // slice-relative hits → rows of the concatenated block
    let offsets: Vec<u32> = store
        .tenant_slices(tenant)
        .iter()
        .scan(0u32, |acc, s| {
            let o = *acc;
            *acc += s.rows as u32;
            Some(o)
        })
        .collect();
    let (mut found, mut scanned) = (0usize, 0usize);
    let t = Instant::now();
    for (qi, &q) in queries.iter().enumerate() {
        let r = memdex_pipeline::lsh::lsh_top_k(
            store,
            &lsh,
            tenant,
            &rows[q * dim..(q + 1) * dim],
            11,
            probes,
        )?;
        scanned += r.scanned;
        found += r
            .hits
            .iter()
            .map(|h| offsets[h.block as usize] + h.row)
            .filter(|&row| row as usize != q && truth[qi].contains(&row))
            .count();
    }
    let lsh_ms = t.elapsed().as_secs_f64() * 1e3 / queries.len() as f64;
    Some(Stored {
        buckets: meta.buckets,
        tables: meta.tables,
        seed: meta.seed,
        probes,
        recall_at_10: found as f64 / truth.iter().map(Vec::len).sum::<usize>().max(1) as f64,
        scanned: scanned as f64 / (queries.len() * rows.len() / dim) as f64,
        lsh_ms_per_query: lsh_ms,
        speedup: exact_ms / lsh_ms,
    })
}
