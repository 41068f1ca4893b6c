use anyhow::Result;
use memdex_engine::Searcher;
use memdex_rank::{
    contextual_query, fit_to_store, format_ms, reading_context, Explain, RankOptions, TopK,
};
use memdex_store::Store;

use crate::cli::SearchArgs;
use crate::output::print_json;

pub fn run(a: SearchArgs) -> Result<()> {
    let store = Store::open(&a.store)?;
    let embedder = super::load_embedder(&a.model, store.manifest().model_source.as_deref())?;
    let searcher = Searcher::new(store, Box::new(embedder))?;
    let mut opts = super::rank_options(&a.rank, RankOptions::default())?;
    fit_to_store(&mut opts, a.rank.time.is_some(), searcher.store());
    let date_ms = match &a.date {
        Some(d) => {
            Some(memdex_ingest::parse_date(d).map_err(|e| anyhow::anyhow!("--date {d:?}: {e}"))?)
        }
        None => None,
    };
    let query = contextual_query(&a.query, &a.recent);
    if query != a.query {
        tracing::info!("ambiguous query; searching with recent turns: {query:?}");
    }
    let top = TopK {
        k: a.k,
        explain: a.explain,
    };
    let hits = searcher.search_with(&a.tenant, &query, date_ms, &opts, top)?;
    if a.context {
        let now = date_ms.unwrap_or_else(|| chrono::Utc::now().timestamp_millis());
        return print_json(&reading_context(&a.query, now, &hits));
    }
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
        if let Some(e) = &h.explain {
            println!("      why: {}", explain_line(e));
        }
    }
    if hits.is_empty() {
        println!("no items");
    }
    Ok(())
}

/// One line per hit: each stage's score in pipeline order, then the reorderings.
fn explain_line(e: &Explain) -> String {
    let mut parts = Vec::new();
    let mut add = |name: &str, v: Option<f32>| {
        if let Some(v) = v {
            parts.push(format!("{name} {v:.4}"));
        }
    };
    add("dense", e.dense);
    add("bm25", e.bm25);
    add("first stage", Some(e.first_stage));
    add("fragrel", e.fragrel);
    add("thoughts/tree", e.structures);
    add("importance/recency", e.signals);
    add("superseded", e.superseded);
    parts.push(format!("score rank {}", e.score_rank));
    if let Some(t) = e.time {
        parts.push(format!("time stage: {t}, rank {}", e.time_rank));
    }
    if let Some(from) = e.update_moved_from {
        parts.push(format!("update stage moved it from rank {from}"));
    }
    parts.join(" · ")
}
