//! The serving engine keeps TiM thoughts and the MemTree: appends post-think before they
//! answer, the thought stage serves the newer statement first, deletes take thoughts and
//! leaves with them, and a restarted engine goes on from what is stored.

#![allow(clippy::unwrap_used)]

mod common;

use memdex_core::Session;
use memdex_rank::{RankOptions, ThoughtStage};
use memdex_runtime::{DeleteTarget, Engine, EngineOptions};
use memdex_store::Store;
use memdex_structures::{default_thoughts, default_tree, report};
use memdex_testkit::{user_session, HashEncoder};

fn start(dir: &std::path::Path) -> Engine {
    let opts = EngineOptions {
        compact_every: None,
        structures: (Some(default_thoughts()), Some(default_tree())),
        ..EngineOptions::default()
    };
    Engine::start(dir, Box::new(HashEncoder::new(64)), cpu(), opts).unwrap()
}

fn append(e: &Engine, s: Session) {
    let tenant = s.tenant.clone();
    e.append(&tenant, vec![s])
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap();
}

fn top(e: &Engine, tenant: &str, text: &str, opts: &RankOptions) -> Vec<String> {
    common::top_values(e, tenant, text, 5, opts)
}

#[test]
fn served_appends_think_and_deletes_forget() {
    let tmp = tempfile::tempdir().unwrap();
    let e = start(tmp.path());
    append(
        &e,
        user_session("ann", "s1", 0, &["My sister lives in Porto."]),
    );
    append(
        &e,
        user_session("ann", "s2", 9, &["I adopted a dog named Max."]),
    );
    append(
        &e,
        user_session("ann", "s3", 40, &["She moved to Lisbon last month."]),
    );
    let opts = RankOptions {
        thoughts: Some(ThoughtStage::default()),
        ..RankOptions::default()
    };
    let q = "Where does my sister live?";
    // the served store keeps rounds: values are `user: …` lines
    assert_eq!(
        top(&e, "ann", q, &opts)[0],
        "user: She moved to Lisbon last month."
    );
    e.shutdown();

    // a restart goes on from the stored structures
    let e = start(tmp.path());
    append(
        &e,
        user_session("ann", "s4", 50, &["My sister lives in Madrid now."]),
    );
    let hits = top(&e, "ann", q, &opts);
    assert_eq!(hits[0], "user: My sister lives in Madrid now.", "{hits:?}");
    let r = e
        .delete(DeleteTarget::Session {
            tenant: "ann".into(),
            session_id: "s4".into(),
        })
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap();
    assert_eq!(r.items_deleted, 1);
    let hits = top(&e, "ann", q, &opts);
    assert!(hits.iter().all(|h| !h.contains("Madrid")), "{hits:?}");
    e.shutdown();

    let store = Store::open(tmp.path()).unwrap();
    let live = report::live_thoughts(&store, "ann").unwrap();
    assert!(live.iter().all(|t| t.object != "Madrid"), "{live:?}");
    let log = report::history(&store, "ann").unwrap();
    assert!(
        log.iter()
            .any(|l| l.reason == "its source items were deleted"),
        "{log:?}"
    );
    let (stats, _) = report::tree(&store, "ann", 0).unwrap();
    assert_eq!(stats.leaves, 3, "the deleted item's leaf is gone");
}

/// The CPU ranker, which ranks these engines' searches.
fn cpu() -> memdex_rank::SharedRanker {
    std::sync::Arc::new(memdex_rank::CpuRanker::default())
}
