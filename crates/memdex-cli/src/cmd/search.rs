use anyhow::Result;
use memdex_engine::{SearchHit, Searcher};
use memdex_store::Store;

use crate::cli::SearchArgs;
use crate::output::print_json;

pub fn run(a: SearchArgs) -> Result<()> {
    let store = Store::open(&a.store)?;
    let embedder = super::load_embedder(&a.model, store.manifest().model_source.as_deref())?;
    let searcher = Searcher::new(store, embedder)?;
    let mut opts = super::rank_options(&a.rank, memdex_engine::RankOptions::default())?;
    if a.rank.time.is_none() && !searcher.store().manifest().extraction.events {
        // the default pipeline on a store indexed with --extract-events false: skip the stage
        // (asking for it with --time is an error naming the option)
        tracing::warn!("store has no event dates; time stage off");
        opts.time = None;
    }
    let date_ms = match &a.date {
        Some(d) => {
            Some(memdex_ingest::parse_date(d).map_err(|e| anyhow::anyhow!("--date {d:?}: {e}"))?)
        }
        None => None,
    };
    let query = memdex_engine::contextual_query(&a.query, &a.recent);
    if query != a.query {
        tracing::info!("ambiguous query; searching with recent turns: {query:?}");
    }
    let hits = searcher.search(&a.tenant, &query, date_ms, a.k, &opts)?;
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
    }
    if hits.is_empty() {
        println!("no items");
    }
    Ok(())
}

/// Chain-of-Note reading prompt (LongMemEval, Figure 13).
const CON_PROMPT: &str = "I will give you several history chats between you and a user. \
Please answer the question based on the relevant chat history. Answer the question step by step: \
first extract all the relevant information, and then reason over the information to get the answer.";

/// The reading stage: items sorted by time (LongMemEval §5.5: structured JSON + Chain-of-Note).
fn reading_context(query: &str, date_ms: i64, hits: &[SearchHit]) -> serde_json::Value {
    let mut items: Vec<&SearchHit> = hits.iter().collect();
    items.sort_by_key(|h| (h.timestamp_ms, h.position));
    let history: Vec<serde_json::Value> = items
        .iter()
        .map(|h| {
            serde_json::json!({
                "date": format_ms(h.timestamp_ms),
                "session_id": h.session_id,
                "content": h.value,
            })
        })
        .collect();
    let history_text = serde_json::to_string_pretty(&history).unwrap_or_default();
    let prompt = format!(
        "{CON_PROMPT}\n\nHistory Chats: {history_text}\n\nCurrent Date: {}\n\nQuestion: {query}\n\nAnswer (step by step):",
        format_ms(date_ms)
    );
    serde_json::json!({
        "query": query,
        "question_date": format_ms(date_ms),
        "items": items,
        "prompt": prompt,
    })
}

/// `YYYY-MM-DD HH:MM` (UTC).
pub fn format_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| format!("{ms} ms"))
}
