//! What opening a store and its first reads cost a reader: `Store::open`, then for each of a
//! few tenants the first `tenant_slices` with a dense scan of every vector it gives (what a
//! search reads of the store), then the same again (warm), and the word table's first use.
//! One JSON line per run. Written to compare builds (before and after checksums) on the same
//! store; docs/serving.md and bench/results/store-integrity-2026-11-28 quote it.
//!
//! usage: cargo run --release -p memdex-store --example open_cost -- STORE [TENANTS]
//! (TENANTS: how many tenants to read, the first by name; default 3)

use std::path::Path;
use std::time::Instant;

use memdex_store::Store;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Reads every vector of the tenant's rows (a dense scan against a fixed query).
fn scan(store: &Store, tenant: &str) -> (usize, f32) {
    let dim = store.dim();
    let q: Vec<f32> = (0..dim).map(|i| ((i % 7) as f32 - 3.0) / 8.0).collect();
    let (mut rows, mut best) = (0, f32::MIN);
    for s in store.tenant_slices(tenant) {
        for run in s.vector_runs() {
            for v in run.data(dim).chunks_exact(dim) {
                let d: f32 = v.iter().zip(&q).map(|(a, b)| a * b).sum();
                best = best.max(d);
                rows += 1;
            }
        }
    }
    (rows, best)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = Path::new(args.get(1).ok_or("usage: open_cost STORE [TENANTS]")?);
    let n: usize = args.get(2).map_or(Ok(3), |a| a.parse())?;
    let t = Instant::now();
    let store = Store::open(dir)?;
    let open_ms = ms(t);
    let tenants: Vec<String> = store
        .tenants()
        .keys()
        .take(n)
        .map(|t| t.to_string())
        .collect();
    let (mut first, mut again, mut rows) = (Vec::new(), Vec::new(), 0);
    for tenant in &tenants {
        let t = Instant::now();
        let (r, best) = scan(&store, tenant);
        first.push(ms(t));
        let t = Instant::now();
        std::hint::black_box(scan(&store, tenant));
        again.push(ms(t));
        rows += r;
        std::hint::black_box(best);
    }
    let t = Instant::now();
    let terms = store.words().len();
    let words_ms = ms(t);
    println!(
        "{{\"open_ms\": {open_ms:.3}, \"first_read_ms\": {first:?}, \"again_ms\": {again:?}, \
         \"rows_read\": {rows}, \"words_first_ms\": {words_ms:.3}, \"terms\": {terms}}}"
    );
    Ok(())
}
