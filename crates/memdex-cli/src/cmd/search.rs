use anyhow::Result;
use memdex_engine::Searcher;
use memdex_store::Store;

use crate::cli::SearchArgs;
use crate::output::print_json;

pub fn run(a: SearchArgs) -> Result<()> {
    let store = Store::open(&a.store)?;
    let embedder = super::load_embedder(&a.model, store.manifest().model_source.as_deref())?;
    let searcher = Searcher::new(store, embedder)?;
    let opts = super::rank_options(&a.rank, memdex_engine::RankOptions::default())?;
    let hits = searcher.search(&a.tenant, &a.query, a.k, &opts)?;
    if a.json {
        return print_json(&hits);
    }
    for h in &hits {
        let when = format_ms(h.timestamp_ms);
        println!(
            "{:>2}. {:.4}  [{} · session {} · #{}]",
            h.rank, h.score, when, h.session_id, h.turn
        );
        for line in h.value.lines() {
            println!("      {line}");
        }
    }
    if hits.is_empty() {
        println!("no items");
    }
    Ok(())
}

/// `YYYY-MM-DD HH:MM` (UTC).
pub fn format_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| format!("{ms} ms"))
}
