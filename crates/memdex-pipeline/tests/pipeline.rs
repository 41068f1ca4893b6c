//! The append pipeline and the ranking over its store, with a test-double encoder (no model on
//! disk):
//! idempotency, conflicts refusing a whole request, empty sessions, key reuse, deletes
//! forgotten by idempotency and ranking alike, failed commits leaving nothing behind.

#![allow(clippy::unwrap_used)]

use memdex_core::{Granularity, Session, TextKind};
use memdex_embed::Encoder;
use memdex_ingest::ItemizeOptions;
use memdex_pipeline::{AppendPipeline, PipelineError, SessionStatus};
use memdex_rank::{
    rank, BatchQuery, CpuRanker, Dense, Query, RankError, RankOptions, Snapshot, TenantCache, TopK,
};
use memdex_score::CpuScorer;
use memdex_store::{Extraction, Store, StoreWriter};
use memdex_testkit::{user_session, HashEncoder};

const DIM: usize = 32;

fn open(dir: &std::path::Path) -> (StoreWriter, AppendPipeline) {
    let enc = HashEncoder::new(DIM);
    let w = StoreWriter::open_or_create_with(
        dir,
        enc.info(),
        Granularity::Turn,
        None,
        &Extraction::default(),
    )
    .unwrap();
    let p = AppendPipeline::new(
        Store::open(dir).unwrap(),
        ItemizeOptions::new(Granularity::Turn),
        false,
    )
    .unwrap();
    (w, p)
}

#[test]
fn admit_commit_reuse_conflict_empty_and_forget() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut w, mut p) = open(tmp.path());
    let enc = HashEncoder::new(DIM);
    let mut embedded: Vec<String> = Vec::new();
    let mut embed = |keys: &[&str]| -> Result<_, PipelineError> {
        embedded.extend(keys.iter().map(|k| k.to_string()));
        Ok(enc.embed(keys, TextKind::Passage)?)
    };
    let a = p
        .admit(&[
            session("ann", "s1", &["I adopted a dog named Rex", "shared text"]),
            session("ben", "s1", &["shared text"]),
        ])
        .unwrap();
    assert_eq!(
        a.iter().map(|x| x.status).collect::<Vec<_>>(),
        [SessionStatus::Stored; 2]
    );
    let c = p.commit(&mut w, &mut embed).unwrap();
    assert_eq!(
        (c.rows, c.keys_embedded, c.keys_reused),
        (3, 2, 1),
        "one key shared by two tenants"
    );

    // a retry is unchanged; a new session reusing a stored key text is not re-embedded
    let a = p
        .admit(&[
            session("ann", "s1", &["I adopted a dog named Rex", "shared text"]),
            session("cai", "s1", &["shared text", "a brand new line"]),
        ])
        .unwrap();
    assert_eq!(a[0].status, SessionStatus::Unchanged);
    assert_eq!(a[1].status, SessionStatus::Stored);
    let c = p.commit(&mut w, &mut embed).unwrap();
    assert_eq!(
        (c.rows, c.keys_embedded, c.keys_reused),
        (2, 1, 1),
        "stored vector copied"
    );

    // a conflict refuses the whole request: its other (valid) session is not staged
    let e = p
        .admit(&[
            session("dan", "s1", &["fine"]),
            session("ann", "s1", &["other content"]),
        ])
        .unwrap_err();
    assert!(matches!(e, PipelineError::SessionConflict { .. }), "{e}");
    assert_eq!(p.pending_items(), 0);
    let e = p.admit(&[session("dan", "s2", &["   ", ""])]).unwrap_err();
    assert!(matches!(e, PipelineError::EmptySession { .. }), "{e}");

    // a failed commit leaves nothing pending or staged: the same session is admitted again
    p.admit(&[session("eve", "s1", &["will fail"])]).unwrap();
    let e = p.commit(&mut w, &mut |_: &[&str]| {
        Err(PipelineError::Model {
            message: "down".into(),
        })
    });
    assert!(e.is_err());
    assert_eq!(p.pending_items(), 0);
    assert_eq!(
        p.admit(&[session("eve", "s1", &["will fail"])]).unwrap()[0].status,
        SessionStatus::Stored
    );
    p.discard();

    // after a delete, the forgotten session is stored again (not unchanged, not a conflict)
    let ann_ids: Vec<u64> = {
        let s = Store::open(tmp.path()).unwrap();
        s.tenant_slices("ann")
            .iter()
            .flat_map(|x| x.segment.item_ids()[x.start..x.start + x.rows].to_vec())
            .collect()
    };
    w.delete_items(&ann_ids).unwrap();
    p.forget("ann", Some(&["s1".to_string()])).unwrap();
    let a = p
        .admit(&[session(
            "ann",
            "s1",
            &["I adopted a dog named Rex", "shared text"],
        )])
        .unwrap();
    assert_eq!(a[0].status, SessionStatus::Stored);
    // each commit embeds its fresh keys, then the word table's new terms (each word of the
    // stored keys once: "shared" is not embedded again for the second commit)
    assert_eq!(
        embedded,
        [
            "I adopted a dog named Rex",
            "shared text",
            "adopted",
            "dog",
            "named",
            "rex",
            "shared",
            "text",
            "a brand new line",
            "brand",
            "new",
            "line"
        ]
    );
}

#[test]
fn deleted_rows_are_never_ranked_and_given_scores_must_fit() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut w, mut p) = open(tmp.path());
    let enc = HashEncoder::new(DIM);
    p.admit(&[
        session("ann", "s1", &["my locker code is 4711"]),
        session("ann", "s2", &["I water the plants"]),
    ])
    .unwrap();
    let mut embed =
        |keys: &[&str]| -> Result<_, PipelineError> { Ok(enc.embed(keys, TextKind::Passage)?) };
    let c = p.commit(&mut w, &mut embed).unwrap();
    w.delete_items(&[c.first_id]).unwrap();
    let snapshot = Snapshot::new(Store::open(tmp.path()).unwrap(), 1 << 20);
    let v = enc.embed(&["locker code 4711"], TextKind::Query).unwrap();
    let asked = [BatchQuery {
        tenant: "ann",
        query: Query {
            text: "locker code 4711",
            vector: v.row(0),
            date_ms: None,
        },
    }];
    let top = TopK {
        k: 10,
        explain: false,
    };
    let ranked = (snapshot.top(&CpuRanker::default(), &asked, &RankOptions::dense(), top))
        .unwrap()
        .pop();
    let hits = ranked.unwrap().unwrap();
    assert_eq!(hits.len(), 1);
    assert!(hits[0].value.contains("plants"), "{hits:?}");

    let q = enc.embed(&["plants"], TextKind::Query).unwrap();
    let query = Query {
        text: "plants",
        vector: q.row(0),
        date_ms: None,
    };
    let store = snapshot.store();
    let e = rank(
        store,
        "ann",
        &query,
        Dense::Scores(&[0.1, 0.2]),
        &RankOptions::dense(),
        &TenantCache::default(),
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            RankError::DenseMismatch {
                expected: 1,
                got: 2,
                ..
            }
        ),
        "{e}"
    );
}

/// A cache over a small byte budget evicts whole tenants, least recently used first, and
/// ranks exactly as an unbounded one; the tenant being served is never evicted.
#[test]
fn tenant_cache_stays_within_its_budget_and_ranks_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut w, mut p) = open(tmp.path());
    let enc = HashEncoder::new(DIM);
    let tenants = ["t0", "t1", "t2", "t3", "t4", "t5"];
    let sessions: Vec<Session> = tenants
        .iter()
        .map(|t| {
            let texts: Vec<String> = (0..40)
                .map(|i| format!("{t} note {i}: the blue kettle sits by window {}", i % 7))
                .collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            session(t, "s1", &refs)
        })
        .collect();
    p.admit(&sessions).unwrap();
    let mut embed =
        |keys: &[&str]| -> Result<_, PipelineError> { Ok(enc.embed(keys, TextKind::Passage)?) };
    p.commit(&mut w, &mut embed).unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let q = enc
        .embed(&["blue kettle window 3"], TextKind::Query)
        .unwrap();
    let query = Query {
        text: "blue kettle window 3",
        vector: q.row(0),
        date_ms: None,
    };
    // the default pipeline (hybrid BM25, FragRel groups, importance) without the time stage:
    // this store has no event dates
    let opts = RankOptions {
        time: None,
        ..RankOptions::default()
    };
    let unbounded = TenantCache::default();
    let run = |cache: &TenantCache, t: &str| {
        let r = rank(&store, t, &query, Dense::Scorer(&CpuScorer), &opts, cache).unwrap();
        r.order
            .iter()
            .map(|&i| (i, r.scores[i]))
            .collect::<Vec<_>>()
    };
    for t in tenants {
        run(&unbounded, t);
    }
    let all = unbounded.stats();
    assert_eq!((all.tenants, all.evicted), (tenants.len(), 0));
    let per_tenant = all.bytes / tenants.len();
    assert!(per_tenant > 0);

    // room for about two tenants
    let small = TenantCache::with_budget(per_tenant * 2 + per_tenant / 2);
    for round in 0..2 {
        for t in tenants {
            let (a, b) = (run(&small, t), run(&unbounded, t));
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert_eq!(x.0, y.0, "round {round}, tenant {t}: same items");
                assert!((x.1 - y.1).abs() < 1e-9, "{t}: {} vs {}", x.1, y.1);
            }
            let s = small.stats();
            assert!(s.bytes <= s.budget, "{s:?}");
            assert!(s.tenants <= 2, "{s:?}");
        }
    }
    assert!(small.stats().evicted >= 8, "{:?}", small.stats());
    // one tenant larger than the whole budget is still served, and kept while it is served
    let tiny = TenantCache::with_budget(1);
    assert_eq!(run(&tiny, "t0"), run(&unbounded, "t0"));
    assert_eq!(tiny.stats().tenants, 1);
    run(&tiny, "t1");
    assert_eq!((tiny.stats().tenants, tiny.stats().evicted), (1, 1));
}

/// A session of user turns, all on one day.
fn session(tenant: &str, id: &str, texts: &[&str]) -> Session {
    user_session(tenant, id, 0, texts)
}
