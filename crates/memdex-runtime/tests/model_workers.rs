//! Several model workers (`EngineOptions::model_workers`): with two, two model batches are
//! embedded at the same time, each by its own encoder; with one they never overlap; every
//! search still gets its own hits; an encoder that cannot be replicated (or whose copy fails
//! to load) is refused by name before the store is opened, and so is 0.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use memdex_core::TextKind;
use memdex_embed::Encoder;
use memdex_rank::{RankOptions, TopK};
use memdex_runtime::{Engine, EngineOptions, Health, RuntimeError, SearchAsk, SearchJob};
use memdex_testkit::{user_session, HashEncoder, HookedEncoder, Replicas};

/// What the encoders of one engine saw: calls inside `embed` now (and how many pairs met)
/// and at most at once, and the threads that embedded.
#[derive(Debug, Default)]
struct Probe {
    inside: Mutex<Inside>,
    entered: Condvar,
    most: AtomicUsize,
    threads: Mutex<BTreeSet<String>>,
}

/// An encoder for these tests: a [`HookedEncoder`] whose hook records the embedding thread
/// and makes each query call wait (a barrier of 2 with a timeout, so a test cannot hang) for
/// a second call to be inside `embed` too; its replicas (clones) share the probe.
fn pairing(wait: Duration, replicas: Replicas) -> (Box<dyn Encoder>, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let p = probe.clone();
    let hook = move |_: &[&str], kind: TextKind| {
        let name = std::thread::current().name().unwrap_or("?").to_string();
        p.threads.lock().unwrap().insert(name);
        if kind == TextKind::Query {
            meet(&p, wait);
        }
        Ok(())
    };
    let encoder = HookedEncoder {
        max_batch_tokens: 8192,
        replicas,
        ..HookedEncoder::new(1024, "pairing", hook)
    };
    (Box::new(encoder), probe)
}

/// Inside `embed`: counts the call in and waits until another call comes in (it met a call
/// already inside, or one comes) or `wait` passed; counts it out.
fn meet(p: &Probe, wait: Duration) {
    let mut inside = p.inside.lock().unwrap();
    inside.calls += 1;
    p.most.fetch_max(inside.calls, Ordering::SeqCst);
    if inside.calls >= 2 {
        inside.pairs += 1;
        p.entered.notify_all();
    } else {
        let pairs = inside.pairs;
        inside = (p.entered)
            .wait_timeout_while(inside, wait, |i| i.pairs == pairs)
            .unwrap()
            .0;
    }
    inside.calls -= 1;
}

/// Calls inside `embed`, and how many times a call came in beside another.
#[derive(Debug, Default)]
struct Inside {
    calls: usize,
    pairs: u64,
}

const TENANTS: [&str; 4] = ["ann", "ben", "cid", "dan"];

/// Tenant `t`'s unique words: one session each, whose only turn is the word.
fn words(t: usize) -> Vec<String> {
    (0..6).map(|i| format!("topic{}", t * 6 + i)).collect()
}

fn start(dir: &std::path::Path, encoder: Box<dyn Encoder>, model_workers: usize) -> Engine {
    let opts = EngineOptions {
        compact_every: None,
        model_workers,
        ..EngineOptions::default()
    };
    let e = Engine::start(dir, encoder, cpu(), opts).unwrap();
    for (t, tenant) in TENANTS.iter().enumerate() {
        let sessions = (words(t).iter().enumerate())
            .map(|(i, w)| user_session(tenant, &format!("s{i}"), i as i64, &[w.as_str()]))
            .collect();
        e.append(tenant, sessions)
            .unwrap()
            .blocking_recv()
            .unwrap()
            .unwrap();
    }
    e
}

fn job(e: &Engine, tenant: &str, text: &str) -> SearchJob {
    SearchJob {
        snapshot: e.view(),
        tenant: tenant.into(),
        text: text.into(),
        ask: SearchAsk {
            date_ms: None,
            top: TopK {
                k: 1,
                explain: false,
            },
            opts: RankOptions::dense(),
        },
    }
}

/// The value of `tenant`'s top hit for `word`.
fn top(e: &Engine, tenant: &str, word: &str) -> String {
    let hits = e.search(job(e, tenant, word)).unwrap();
    let hits = hits.blocking_recv().unwrap().unwrap().hits;
    assert_eq!(hits.len(), 1, "{tenant} {word}");
    hits[0].value.clone()
}

/// Two searches, the second queued once the first is inside `embed` (so they are two model
/// batches); each answered with its own hit. Returns the most calls inside `embed` at once.
fn two_batches(workers: usize, wait: Duration) -> (usize, BTreeSet<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let (encoder, probe) = pairing(wait, Replicas::Clones);
    let e = start(tmp.path(), encoder, workers);
    assert_eq!(e.stats().model_workers.load(Ordering::SeqCst), workers);
    assert_eq!(e.health(), Health::Ok);
    let first = e.search(job(&e, "ann", "topic0")).unwrap();
    let t0 = Instant::now();
    while probe.inside.lock().unwrap().calls == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the first batch never came"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let second = e.search(job(&e, "ben", "topic7")).unwrap();
    let value = |t: memdex_runtime::Ticket<memdex_runtime::Searched>| {
        let hits: Vec<memdex_rank::SearchHit> = t.blocking_recv().unwrap().unwrap().hits;
        hits[0].value.clone()
    };
    assert!(value(first).contains("topic0"));
    assert!(value(second).contains("topic7"));
    e.shutdown();
    assert_eq!(e.health(), Health::ShuttingDown);
    let threads = probe.threads.lock().unwrap().clone();
    (probe.most.load(Ordering::SeqCst), threads)
}

#[test]
fn two_workers_embed_two_batches_at_once() {
    // the wait is only the fallback: the pair meets at once
    let t = Instant::now();
    let (most, threads) = two_batches(2, Duration::from_secs(20));
    assert_eq!(most, 2, "the second batch was embedded while the first was");
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    let names: Vec<&str> = threads.iter().map(String::as_str).collect();
    assert_eq!(names, ["memdex-model-0", "memdex-model-1"]);
}

#[test]
fn one_worker_never_embeds_two_batches_at_once() {
    let (most, threads) = two_batches(1, Duration::from_millis(300));
    assert_eq!(most, 1, "one model worker embeds one batch at a time");
    let names: Vec<&str> = threads.iter().map(String::as_str).collect();
    assert_eq!(names, ["memdex-model-0"]);
}

#[test]
fn each_search_gets_its_own_hits_with_two_workers() {
    let tmp = tempfile::tempdir().unwrap();
    // a query call waits up to 2 ms for a pair: batches queue up behind each worker
    let (encoder, probe) = pairing(Duration::from_millis(2), Replicas::Clones);
    let e = start(tmp.path(), encoder, 2);
    std::thread::scope(|s| {
        for caller in 0..8 {
            let e = &e;
            s.spawn(move || {
                for n in 0..30 {
                    let t = (caller + n) % TENANTS.len();
                    let word = &words(t)[(caller * 7 + n) % 6];
                    let value = top(e, TENANTS[t], word);
                    assert_eq!(
                        value,
                        format!("user: {word}"),
                        "{} asked {word}",
                        TENANTS[t]
                    );
                }
            });
        }
    });
    assert_eq!(e.stats().searches_answered.load(Ordering::SeqCst), 240);
    assert_eq!(
        probe.threads.lock().unwrap().len(),
        2,
        "both workers embedded"
    );
    e.shutdown();
}

#[test]
fn workers_the_encoder_cannot_have_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = |model_workers| EngineOptions {
        compact_every: None,
        model_workers,
        ..EngineOptions::default()
    };
    let single = || Box::new(HookedEncoder::new(32, "single", |_: &[&str], _| Ok(())));
    let refused = |r: Result<Engine, RuntimeError>| match r {
        Err(RuntimeError::Invalid { message }) => message,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let m = refused(Engine::start(tmp.path(), single(), cpu(), opts(2)));
    assert!(m.contains("model_workers = 2"), "{m}");
    assert!(m.contains("single encoder cannot be replicated"), "{m}");
    let m = refused(Engine::start(
        tmp.path(),
        Box::new(HashEncoder::new(32)),
        cpu(),
        opts(0),
    ));
    assert!(
        m.contains("model_workers = 0") && m.contains("at least 1"),
        "{m}"
    );
    let (broken, _) = pairing(Duration::ZERO, Replicas::Fail);
    match Engine::start(tmp.path(), broken, cpu(), opts(3)) {
        Err(RuntimeError::Internal { message }) => {
            assert!(message.contains("model worker 1's copy"), "{message}");
            assert!(message.contains("no room for another copy"), "{message}");
        }
        other => panic!("expected the copy's failure, got {other:?}"),
    }
    // nothing was held: the store opens with one worker of the same encoder
    let e = Engine::start(tmp.path(), single(), cpu(), opts(1)).unwrap();
    assert_eq!(e.health(), Health::Ok);
    e.shutdown();
}

/// The CPU ranker, which ranks these engines' searches.
fn cpu() -> memdex_rank::SharedRanker {
    std::sync::Arc::new(memdex_rank::CpuRanker::default())
}
