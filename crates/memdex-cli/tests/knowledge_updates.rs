//! The update stage on its two public sets (memdex-testkit fixtures), through the default
//! `memdex index` and `memdex search` with the real MiniLM, one store for both:
//! * the knowledge-update set: a present-tense question must put the newer statement's
//!   session above the older one's in ≥ 90 % of the scenarios, and a question about the
//!   earlier state must still find the older one in its top 5, every time;
//! * the control set (a later session mentions something related that supersedes nothing):
//!   of the scenarios whose answer ranks first with the stage off (tier `stage`), ≥ 95 % keep
//!   it first with the stage on (a `repeated-fact` scenario may put either session first).
//!
//! Prints both tables with the stage on and off, per relation / kind.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memdex_testkit::{knowledge_updates, minilm, ok, update_controls};
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

/// A store holding every scenario of both sets, one tenant each (`u-ID`, `c-ID`).
struct Sets {
    _dir: tempfile::TempDir,
    store: PathBuf,
    model: PathBuf,
}

impl Sets {
    fn build(model: PathBuf) -> Sets {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = String::new();
        for (prefix, set) in [("u", knowledge_updates()), ("c", update_controls())] {
            for sc in set["scenarios"].as_array().unwrap() {
                for s in sc["sessions"].as_array().unwrap() {
                    let mut s = s.clone();
                    s["tenant"] = format!("{prefix}-{}", sc["id"].as_str().unwrap()).into();
                    lines.push_str(&format!("{s}\n"));
                }
            }
        }
        let input = dir.path().join("sessions.jsonl");
        std::fs::write(&input, lines).unwrap();
        let store = dir.path().join("store");
        let (i, s) = (input.to_str().unwrap(), store.to_str().unwrap());
        memdex(&model, &["index", "--input", i, "--store", s]);
        Sets {
            _dir: dir,
            store,
            model,
        }
    }

    /// The top 10 of `q` for `tenant`, the stage on (`on`) or off.
    fn search(&self, tenant: &str, q: &str, on: bool) -> Value {
        let store = self.store.to_str().unwrap();
        let mut args = vec!["search", "--store", store, "--tenant", tenant, "--query", q];
        args.extend_from_slice(&["-k", "10", "--json"]);
        if !on {
            args.extend_from_slice(&["--update-window", "0"]);
        }
        serde_json::from_str(&memdex(&self.model, &args)).unwrap()
    }
}

/// Runs `f` over `items` on two threads (each search is a process), in order.
fn par<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let half = items.len().div_ceil(2);
    std::thread::scope(|s| {
        let parts: Vec<_> = items
            .chunks(half.max(1))
            .map(|c| s.spawn(|| c.iter().map(&f).collect::<Vec<R>>()))
            .collect();
        parts.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

#[derive(Default)]
struct Tally {
    scenarios: usize,
    off: usize,
    on: usize,
    past_found: usize,
    past_oldest_first: usize,
}

fn print(title: &str, extra: &str, rows: &BTreeMap<String, Tally>) {
    eprintln!("{title:<24} scenarios  stage off  stage on{extra}");
    for (r, t) in rows {
        let past = if extra.is_empty() {
            String::new()
        } else {
            format!("  {:>18}  {:>9}", t.past_found, t.past_oldest_first)
        };
        eprintln!(
            "{r:<24} {:>9}  {:>9}  {:>8}{past}",
            t.scenarios, t.off, t.on
        );
    }
}

fn total(rows: &BTreeMap<String, Tally>, f: fn(&Tally) -> usize) -> usize {
    rows.values().map(f).sum()
}

#[test]
fn the_update_stage_moves_what_was_superseded_and_nothing_else() {
    let Some(model) = minilm("knowledge_updates") else {
        return;
    };
    let sets = Sets::build(model);
    knowledge_update_set(&sets);
    control_set(&sets);
}

fn knowledge_update_set(sets: &Sets) {
    let set = knowledge_updates();
    let scenarios = set["scenarios"].as_array().unwrap();
    assert!(scenarios.len() >= 40, "{} scenarios", scenarios.len());
    let results = par(scenarios, |sc| {
        let tenant = format!("u-{}", sc["id"].as_str().unwrap());
        let (new, old) = (
            sc["new_session"].as_str().unwrap(),
            sc["old_session"].as_str().unwrap(),
        );
        let present = sc["present"].as_str().unwrap();
        let on = ranks(&sets.search(&tenant, present, true), new, old);
        let off = ranks(&sets.search(&tenant, present, false), new, old);
        let past = ranks(
            &sets.search(&tenant, sc["past"].as_str().unwrap(), true),
            new,
            old,
        );
        (on, off, past)
    });
    let mut rows: BTreeMap<String, Tally> = BTreeMap::new();
    let mut misses = Vec::new();
    for (sc, ((n, o), (n0, o0), (pn, po))) in scenarios.iter().zip(results) {
        let t = rows
            .entry(sc["relation"].as_str().unwrap().to_string())
            .or_default();
        t.scenarios += 1;
        t.on += usize::from(n < o);
        t.off += usize::from(n0 < o0);
        t.past_found += usize::from(po <= 5);
        t.past_oldest_first += usize::from(po < pn);
        if n >= o {
            misses.push(format!("{}: new at {n}, old at {o}", sc["id"]));
        }
    }
    eprintln!("knowledge updates: newest first for the present question");
    print("relation", "  past: old in top 5  old first", &rows);
    let (n, off, on) = (
        total(&rows, |t| t.scenarios),
        total(&rows, |t| t.off),
        total(&rows, |t| t.on),
    );
    eprintln!("all: newest first {off}/{n} stage off, {on}/{n} on; misses: {misses:?}");
    assert!(
        on as f64 >= 0.9 * n as f64,
        "newest first in {on} of {n} scenarios (< 90 %): {misses:?}"
    );
    assert_eq!(
        total(&rows, |t| t.past_found),
        n,
        "a past question lost the older statement"
    );
}

fn control_set(sets: &Sets) {
    let set = update_controls();
    let scenarios = set["scenarios"].as_array().unwrap();
    let results = par(scenarios, |sc| {
        let tenant = format!("c-{}", sc["id"].as_str().unwrap());
        let (answer, related) = (
            sc["answer_session"].as_str().unwrap(),
            sc["related_session"].as_str().unwrap(),
        );
        let q = sc["question"].as_str().unwrap();
        let kept = |on: bool| {
            let (a, r) = ranks(&sets.search(&tenant, q, on), answer, related);
            a < r || (sc["kind"] == "repeated-fact" && a.min(r) == 1)
        };
        (kept(false), kept(true))
    });
    let mut tiers: BTreeMap<String, BTreeMap<String, Tally>> = BTreeMap::new();
    let mut misses = Vec::new();
    for (sc, (off, on)) in scenarios.iter().zip(results) {
        let tier = sc["tier"].as_str().unwrap().to_string();
        let t = tiers
            .entry(tier.clone())
            .or_default()
            .entry(sc["kind"].as_str().unwrap().to_string())
            .or_default();
        t.scenarios += 1;
        t.off += usize::from(off);
        t.on += usize::from(on);
        if tier == "stage" && !on {
            misses.push(format!("{} (stage off: {off})", sc["id"]));
        }
    }
    for (tier, rows) in &tiers {
        eprintln!("controls, tier {tier}: the older, right statement first");
        print("kind", "", rows);
    }
    let stage = &tiers["stage"];
    let (n, off, on) = (
        total(stage, |t| t.scenarios),
        total(stage, |t| t.off),
        total(stage, |t| t.on),
    );
    eprintln!("tier stage: right first {off}/{n} stage off, {on}/{n} on; misses: {misses:?}");
    assert!(n >= 40, "{n} controls of tier stage");
    assert!(
        on as f64 >= 0.95 * n as f64,
        "right statement first in {on} of {n} controls (< 95 %): {misses:?}"
    );
}
