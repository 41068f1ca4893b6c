//! The public knowledge-update set (memdex-testkit `fixtures/knowledge-updates.json`) through
//! the default `memdex index` and `memdex search` with the real MiniLM: a present-tense
//! question must put the newer statement's session above the older one's in ≥ 90 % of the
//! scenarios, and a question about the earlier state must still find the older one in its
//! top 5, every time. Prints the before/after table (the update stage off and on) per relation.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use memdex_testkit::{knowledge_updates, minilm, ok};
use serde_json::Value;

fn memdex(model: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memdex"))
        .args(args)
        .env("MEMDEX_MODEL", model)
        .env_remove("MEMDEX_STORE")
        .output()
        .unwrap();
    ok(&out)
}

/// Rank (1-based) of the first hit from each of two sessions (99: not in the top 10).
fn ranks(hits: &Value, a: &str, b: &str) -> (usize, usize) {
    let first = |s: &str| {
        hits.as_array()
            .unwrap()
            .iter()
            .find(|h| h["session_id"] == s)
            .map_or(99, |h| h["rank"].as_u64().unwrap() as usize)
    };
    (first(a), first(b))
}

#[derive(Default)]
struct Tally {
    scenarios: usize,
    newest_first_before: usize,
    newest_first: usize,
    past_found: usize,
    past_oldest_first: usize,
}

#[test]
fn newer_statements_rank_first_for_the_present_and_older_ones_stay_for_the_past() {
    let Some(model) = minilm("knowledge_updates") else {
        return;
    };
    let set = knowledge_updates();
    let scenarios = set["scenarios"].as_array().unwrap();
    assert!(scenarios.len() >= 40, "{} scenarios", scenarios.len());
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("sessions.jsonl");
    let mut lines = String::new();
    for sc in scenarios {
        for s in sc["sessions"].as_array().unwrap() {
            let mut s = s.clone();
            s["tenant"] = sc["id"].clone();
            lines.push_str(&format!("{s}\n"));
        }
    }
    std::fs::write(&input, lines).unwrap();
    let store = tmp.path().join("store");
    let store = store.to_str().unwrap();
    memdex(
        &model,
        &[
            "index",
            "--input",
            input.to_str().unwrap(),
            "--store",
            store,
        ],
    );
    let search = |tenant: &str, q: &str, extra: &[&str]| -> Value {
        let mut args = vec!["search", "--store", store, "--tenant", tenant, "--query", q];
        args.extend_from_slice(&["-k", "10", "--json"]);
        args.extend_from_slice(extra);
        serde_json::from_str(&memdex(&model, &args)).unwrap()
    };
    let mut by_relation: BTreeMap<String, Tally> = BTreeMap::new();
    let mut misses = Vec::new();
    for sc in scenarios {
        let (id, new, old) = (
            sc["id"].as_str().unwrap(),
            sc["new_session"].as_str().unwrap(),
            sc["old_session"].as_str().unwrap(),
        );
        let t = by_relation
            .entry(sc["relation"].as_str().unwrap().to_string())
            .or_default();
        t.scenarios += 1;
        let present = sc["present"].as_str().unwrap();
        let (n, o) = ranks(&search(id, present, &[]), new, old);
        t.newest_first += usize::from(n < o);
        if n >= o {
            misses.push(format!("{id}: new at {n}, old at {o}"));
        }
        let (n0, o0) = ranks(&search(id, present, &["--update-window", "0"]), new, old);
        t.newest_first_before += usize::from(n0 < o0);
        let (pn, po) = ranks(&search(id, sc["past"].as_str().unwrap(), &[]), new, old);
        t.past_found += usize::from(po <= 5);
        t.past_oldest_first += usize::from(po < pn);
    }
    let total = |f: fn(&Tally) -> usize| by_relation.values().map(f).sum::<usize>();
    let n = total(|t| t.scenarios);
    eprintln!("relation      scenarios  newest-first before  after  past: old in top 5  old first");
    for (r, t) in &by_relation {
        eprintln!(
            "{r:<13} {:>9}  {:>19}  {:>5}  {:>18}  {:>9}",
            t.scenarios, t.newest_first_before, t.newest_first, t.past_found, t.past_oldest_first
        );
    }
    let (before, after) = (total(|t| t.newest_first_before), total(|t| t.newest_first));
    eprintln!("all: newest first {before}/{n} before, {after}/{n} after; misses: {misses:?}");
    assert!(
        after as f64 >= 0.9 * n as f64,
        "newest first in {after} of {n} scenarios (< 90 %): {misses:?}"
    );
    assert_eq!(
        total(|t| t.past_found),
        n,
        "a past question lost the older statement"
    );
}
