use anyhow::{Context, Result};
use memdex_memory::{Explain, RankChoice, Reader, SearchRequest, StageNames};
use memdex_rank::format_ms;

use crate::cli::SearchArgs;
use crate::output::print_json;

/// `memdex search`: one request through the door's read-only half ([`Reader`]), checked as
/// every front end's is.
pub fn run(a: SearchArgs) -> Result<()> {
    let rank = RankChoice {
        device: a.rank_device.into(),
        ..RankChoice::default()
    };
    let open = super::common::open_options(&a.model, rank);
    let reader = Reader::open(&a.store, &open, StageNames::Flags)
        .with_context(|| format!("opening {}", a.store.display()))?;
    let req = SearchRequest {
        query: a.query,
        k: a.k,
        date: a.date,
        recent_turns: a.recent,
        stages: a.rank,
        explain: a.explain,
        context: a.context,
    };
    let answer = reader.search(&a.tenant, &req)?;
    if answer.searched != answer.query {
        tracing::info!(
            "ambiguous query; searching with recent turns: {:?}",
            answer.searched
        );
    }
    if a.context {
        return print_json(&answer.context());
    }
    let hits = answer.hits;
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
    add("expansion", e.expansion);
    add("first stage", Some(e.first_stage));
    add("fragrel", e.fragrel);
    add("thoughts/tree", e.structures);
    add("importance/recency", e.signals);
    add("superseded", e.superseded);
    for (&name, &v) in &e.stages {
        add(name, Some(v));
    }
    parts.push(format!("score rank {}", e.score_rank));
    if let Some(t) = e.time {
        parts.push(format!("time stage: {t}, rank {}", e.time_rank));
    }
    if let Some(from) = e.update_moved_from {
        parts.push(format!("update stage moved it from rank {from}"));
    }
    if let Some(u) = &e.update {
        parts.push(format!(
            "linked to item {} (session {}): the newer session states a change ({:?} in \"{}\")",
            u.linked_item_id, u.linked_session_id, u.cue, u.sentence
        ));
    }
    parts.join(" · ")
}
