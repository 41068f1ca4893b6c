//! The door's offline halves with the test-double encoder: a batch build through [`Builder`]
//! (idempotent, one writer at a time, the model checked), then searches and batched rankings
//! through the [`Reader`] it hands over, each failure in the door's one error type.

use std::sync::Arc;

use memdex_core::{Granularity, OnError, Session};
use memdex_ingest::{ItemizeOptions, SessionList};
use memdex_memory::{
    maintain, BuildSpec, Builder, CompactOptions, IndexOptions, MemoryError, Reader, SearchRequest,
    StageNames,
};
use memdex_rank::{fit_to_store, BatchQuery, CpuRanker, Query, RankOptions, TopK};
use memdex_store::{Store, StoreSpec};
use memdex_testkit::{user_session, HashEncoder};

fn history() -> Vec<Session> {
    vec![
        user_session(
            "alice",
            "s1",
            0,
            &["I adopted a dog named Rex.", "Rex loves the park."],
        ),
        user_session("alice", "s2", 3, &["My sister lives in Lisbon."]),
        user_session("bob", "s1", 1, &["I play the cello every evening."]),
    ]
}

fn index_opts() -> IndexOptions {
    IndexOptions {
        itemize: ItemizeOptions::new(Granularity::Turn),
        on_error: OnError::Abort,
        flush_items: 2,
        accel: None,
    }
}

fn open(dir: &std::path::Path, dim: usize) -> Result<Builder, MemoryError> {
    let spec = BuildSpec::new(StoreSpec::new(Granularity::Turn));
    Builder::open(dir, Box::new(HashEncoder::new(dim)), spec)
}

#[test]
fn a_build_then_searches_through_the_door() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = open(dir.path(), 32).unwrap();
    let report = b
        .index(SessionList::new(history()), &index_opts(), &())
        .unwrap();
    assert_eq!(report.sessions_indexed, 3);
    assert_eq!(report.items_written, 4);
    assert!(report.segments_written >= 2, "{report:?}");

    // one writer at a time: a second build of the same store is told who holds it
    let e = open(dir.path(), 32).unwrap_err();
    assert!(matches!(e, MemoryError::Busy(_)), "{e}");
    assert!(e.to_string().contains("store lock"), "{e}");

    // the same sessions again: nothing written
    let again = b
        .index(SessionList::new(history()), &index_opts(), &())
        .unwrap();
    assert_eq!(again.items_written, 0, "{again:?}");
    assert_eq!(again.sessions_unchanged, 3, "{again:?}");

    let reader = b
        .into_reader(Arc::new(CpuRanker::default()), StageNames::Flags)
        .unwrap();
    assert_eq!(reader.store().rows(), 4);
    let ans = reader
        .search("alice", &SearchRequest::new("sister Lisbon", 1))
        .unwrap();
    assert_eq!(ans.hits.len(), 1);
    assert_eq!(ans.hits[0].session_id, "s2");
    // undated: asked, ranked and answered at the tenant's newest item (s2, day 3), not now
    let newest = history()[1].timestamp_ms;
    assert_eq!(ans.date_ms, newest);
    assert!(ans.context()["question_date"]
        .as_str()
        .is_some_and(|d| d == memdex_memory::format_ms(newest)));
    let t = ans.timings.expect("a ranked answer carries its timings");
    assert_eq!(
        (t.model_queue_us, t.rank_queue_us),
        (0, 0),
        "no queues offline"
    );
    let e = reader
        .search("zed", &SearchRequest::new("dog", 1))
        .unwrap_err();
    assert!(matches!(e, MemoryError::NotFound(_)), "{e}");
}

#[test]
fn batched_rankings_fail_one_query_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = open(dir.path(), 32).unwrap();
    b.index(SessionList::new(history()), &index_opts(), &())
        .unwrap();
    let reader = b
        .into_reader(Arc::new(CpuRanker::default()), StageNames::Flags)
        .unwrap();
    let texts = ["cello evening", "dog Rex", "cello"];
    let tenants = ["bob", "alice", "nobody"];
    let vectors = reader.embed_queries(&texts).unwrap();
    let queries: Vec<BatchQuery<'_>> = (0..texts.len())
        .map(|i| BatchQuery {
            tenant: tenants[i],
            query: Query {
                text: texts[i],
                vector: vectors.row(i),
                date_ms: None,
            },
        })
        .collect();
    // the search defaults, less the stages this store was built without (event dates)
    let mut opts = RankOptions::default();
    fit_to_store(&mut opts, false, reader.store());
    let all = reader.rank_batch(&queries, &opts).unwrap();
    assert_eq!(all.len(), 3);
    let bob = all[0].as_ref().unwrap();
    assert_eq!(bob.len(), 1);
    let alice = all[1].as_ref().unwrap();
    assert_eq!(alice.len(), 3);
    assert!(alice.item(alice.order[0]).value.contains("Rex"));
    assert!(matches!(&all[2], Err(MemoryError::NotFound(_))));

    let top = TopK {
        k: 1,
        explain: false,
    };
    let hits = reader.top_batch(&queries, &opts, top).unwrap();
    assert_eq!(hits[1].as_ref().unwrap()[0].session_id, "s1");
    assert!(matches!(&hits[2], Err(MemoryError::NotFound(_))));
    // the one-query ranking agrees with the batch
    let one = reader.rank("alice", &queries[1].query, &opts).unwrap();
    assert_eq!(one.order, alice.order);
}

#[test]
fn a_store_opened_with_another_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = open(dir.path(), 32).unwrap();
    b.index(SessionList::new(history()), &index_opts(), &())
        .unwrap();
    drop(b);
    let e = open(dir.path(), 16).unwrap_err();
    assert!(matches!(e, MemoryError::Invalid(_)), "{e}");
    assert!(e.to_string().contains("refusing to use it"), "{e}");
    let store = Store::open(dir.path()).unwrap();
    let e = Reader::new(store, Box::new(HashEncoder::new(16)), StageNames::Flags).unwrap_err();
    assert!(matches!(e, MemoryError::Invalid(_)), "{e}");
    // the refused opens changed nothing
    assert_eq!(Store::open(dir.path()).unwrap().rows(), 4);
    let e = Builder::open(
        &dir.path().join("missing/deeper"),
        Box::new(HashEncoder::new(32)),
        BuildSpec::new(StoreSpec::new(Granularity::Turn)),
    );
    assert!(e.is_ok(), "a new store is created where none is");
}

#[test]
fn offline_upkeep_goes_through_the_door() {
    let dir = tempfile::tempdir().unwrap();
    let opts = CompactOptions::default();
    let e = maintain::compact(&dir.path().join("none"), &opts).unwrap_err();
    assert!(matches!(e, MemoryError::NotFound(_)), "{e}");
    let mut b = open(dir.path(), 32).unwrap();
    b.index(SessionList::new(history()), &index_opts(), &())
        .unwrap();
    // a writer holds the store: compaction waits its turn, a snapshot does not need it
    let e = maintain::compact(dir.path(), &opts).unwrap_err();
    assert!(matches!(e, MemoryError::Busy(_)), "{e}");
    let copy = dir.path().join("copy");
    let r = maintain::snapshot(dir.path(), &copy, &Default::default()).unwrap();
    assert!(r.manifest_version > 0 && r.verified == r.files);
    assert!(maintain::verify(&copy).unwrap().is_sound());
    assert_eq!(Store::open(&copy).unwrap().rows(), 4);
    drop(b);
    let r = maintain::compact(dir.path(), &opts).unwrap();
    assert_eq!(r.rows_removed, 0, "{r:?}");
}
