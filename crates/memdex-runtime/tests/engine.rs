//! The serving engine over a test-double encoder: appends answer once visible, deletes are
//! never ranked, server appends reuse stored vectors, a panicking model fails its batch and
//! keeps serving.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use memdex_core::{Session, TextKind};
use memdex_rank::RankOptions;
use memdex_runtime::{DeleteTarget, Engine, EngineOptions, Health, RuntimeError};
use memdex_testkit::{user_session, HookedEncoder};

fn start(dir: &std::path::Path) -> (Engine, Arc<AtomicUsize>) {
    let (e, passages, _) = start_gated(dir);
    (e, passages)
}

type Gate = Arc<(Mutex<bool>, Condvar)>;

/// An encoder that counts the passages it embeds, panics on a text saying `PANIC` and waits
/// at a text saying `WAIT` until the gate opens.
fn start_gated(dir: &std::path::Path) -> (Engine, Arc<AtomicUsize>, Gate) {
    let passages = Arc::new(AtomicUsize::new(0));
    let gate: Gate = Arc::new((Mutex::new(false), Condvar::new()));
    let (seen, wait) = (passages.clone(), gate.clone());
    let probe = HookedEncoder::new(32, "probe", move |texts: &[&str], kind: TextKind| {
        assert!(!texts.contains(&"PANIC"), "the probe was told to panic");
        if texts.contains(&"WAIT") {
            let (open, cv) = &*wait;
            let mut g = open.lock().unwrap();
            while !*g {
                g = cv.wait(g).unwrap();
            }
        }
        if kind == TextKind::Passage {
            seen.fetch_add(texts.len(), Ordering::SeqCst);
        }
        Ok(())
    });
    let opts = EngineOptions {
        compact_every: None,
        ..EngineOptions::default()
    };
    (
        Engine::start(dir, Box::new(probe), cpu(), opts).unwrap(),
        passages,
        gate,
    )
}

fn search(e: &Engine, tenant: &str, text: &str) -> Vec<String> {
    common::top_values(e, tenant, text, 10, &RankOptions::dense())
}

#[test]
fn appends_reuse_vectors_deletes_are_never_ranked() {
    let tmp = tempfile::tempdir().unwrap();
    let (e, passages) = start(tmp.path());
    let r = e
        .append(
            "ann",
            vec![session(
                "ann",
                "s1",
                &["my locker code is 4711", "I water the plants"],
            )],
        )
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap();
    assert_eq!(r.items_written, 2);
    let embedded = passages.load(Ordering::SeqCst);
    // another tenant stores the same texts: their stored vectors are copied
    e.append("ben", vec![session("ben", "b1", &["I water the plants"])])
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap();
    assert_eq!(
        passages.load(Ordering::SeqCst),
        embedded,
        "no re-embedding of a stored key"
    );
    assert_eq!(search(&e, "ben", "plants").len(), 1, "tenants stay apart");

    let id = r.sessions[0].item_ids[0];
    e.delete(DeleteTarget::Item {
        tenant: "ann".into(),
        item_id: id,
    })
    .unwrap()
    .blocking_recv()
    .unwrap()
    .unwrap();
    let hits = search(&e, "ann", "locker code 4711");
    assert!(hits.iter().all(|h| !h.contains("4711")), "{hits:?}");
    let again = e
        .delete(DeleteTarget::Item {
            tenant: "ann".into(),
            item_id: id,
        })
        .unwrap()
        .blocking_recv()
        .unwrap();
    assert!(matches!(again, Err(RuntimeError::NotFound { .. })));
    assert_eq!(e.view().summary().rows, 2);
    e.shutdown();
}

#[test]
fn a_panicking_model_fails_its_batch_and_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let (e, _) = start(tmp.path());
    let bad = e
        .embed(vec!["PANIC".into()], TextKind::Passage)
        .unwrap()
        .blocking_recv()
        .unwrap();
    match bad {
        Err(RuntimeError::Internal { message }) => assert!(message.contains("panic"), "{message}"),
        other => panic!("expected an internal error, got {other:?}"),
    }
    assert_eq!(e.health(), Health::Ok);
    let ok = e
        .embed(vec!["fine".into()], TextKind::Passage)
        .unwrap()
        .blocking_recv()
        .unwrap();
    assert_eq!(ok.unwrap().len(), 1);
    assert_eq!(e.stats().panics.load(Ordering::SeqCst), 1);
    // an append whose embedding panics fails that append; the next one commits
    let r = e
        .append("ann", vec![session("ann", "s1", &["PANIC"])])
        .unwrap()
        .blocking_recv()
        .unwrap();
    assert!(r.is_err());
    let r = e
        .append("ann", vec![session("ann", "s1", &["calm"])])
        .unwrap()
        .blocking_recv()
        .unwrap();
    assert_eq!(r.unwrap().items_written, 1);
    e.shutdown();
    assert_eq!(e.health(), Health::ShuttingDown);
}

/// Appends that queue while a commit is under way are committed together: 40 appends, the
/// first held at the model, the other 39 queued behind it, make 2 commits.
#[test]
fn queued_appends_are_group_committed() {
    let tmp = tempfile::tempdir().unwrap();
    let (e, _, gate) = start_gated(tmp.path());
    let first = e
        .append("ann", vec![session("ann", "s0", &["WAIT"])])
        .unwrap();
    // the writer has taken the first append and waits for its embedding
    let t0 = std::time::Instant::now();
    while e.stats().write_queue_depth.load(Ordering::SeqCst) > 0 {
        assert!(t0.elapsed().as_secs() < 10);
        std::thread::yield_now();
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    let rest: Vec<_> = (1..40)
        .map(|i| {
            let id = format!("s{i}");
            e.append("ann", vec![session("ann", &id, &[&format!("note {i}")])])
                .unwrap()
        })
        .collect();
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    first.blocking_recv().unwrap().unwrap();
    for t in rest {
        assert_eq!(t.blocking_recv().unwrap().unwrap().items_written, 1);
    }
    assert_eq!(e.stats().appends_grouped.load(Ordering::SeqCst), 40);
    assert_eq!(
        e.stats().commits.load(Ordering::SeqCst),
        2,
        "one commit held, one for the 39 queued"
    );
    assert_eq!(e.view().summary().rows, 40);
    e.shutdown();
}

/// A session of user turns, all on one day.
fn session(tenant: &str, id: &str, texts: &[&str]) -> Session {
    user_session(tenant, id, 0, texts)
}

/// The CPU ranker, which ranks these engines' searches.
fn cpu() -> memdex_rank::SharedRanker {
    std::sync::Arc::new(memdex_rank::CpuRanker::default())
}
