//! Query expansion over a real store: a word table whose vector for "surfing" lies near the
//! question's vector lifts the turn about surfing, which shares no word with the question,
//! above a turn the dense score prefers; the explained hits carry the expansion's signal; the
//! fused kernels' CPU reference ranks the same with expansion on, picking the terms from the
//! tenant's text columns itself (and with host inputs beyond its limits).

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use memdex_core::Granularity;
use memdex_kernels::{cpu::Cpu, KernelRanker, Placement};
use memdex_rank::{
    rank_explained, top_one, BatchQuery, BatchRanker, Dense, Expand, Query, RankOptions,
    TenantCache, TopK,
};
use memdex_score::text::Analyzer;
use memdex_score::CpuScorer;
use memdex_store::{Store, StoreWriter};
use memdex_testkit::{item, model};

const QUESTION: &str = "Which outdoor sports does she like?";

/// Two turns: "we cooked pasta" (the question's vector leans to it) and "I went surfing at
/// dawn" (nothing in common with the question but the word table's "surfing").
fn store(dir: &std::path::Path) -> Store {
    let mut w =
        StoreWriter::open_or_create(dir, &model(8, "wwww"), Granularity::Turn, None).unwrap();
    let words = [
        ("surf", "surfing", [0.8f32, 0.6, 0.0, 0.0]),
        ("dawn", "dawn", [0.0, 0.0, 1.0, 0.0]),
        ("cook", "cooked", [0.0, 0.0, 0.6, 0.8]),
        ("pasta", "pasta", [0.0, 0.0, 0.0, 1.0]),
    ];
    let pairs: Vec<(String, String)> = (words.iter())
        .map(|(t, w, _)| (t.to_string(), w.to_string()))
        .collect();
    let vectors: Vec<f32> = words.iter().flat_map(|(_, _, v)| pad(v)).collect();
    w.append_words(&pairs, &vectors).unwrap();
    let texts = ["We cooked pasta", "I went surfing at dawn"];
    let items: Vec<_> = (texts.iter().enumerate())
        .map(|(i, t)| item("ann", &format!("s{i}"), 0, t))
        .collect();
    let analyzer = Analyzer::english();
    let terms: Vec<Vec<String>> = texts.iter().map(|t| analyzer.terms(t)).collect();
    let embeddings: Vec<f32> = [pad(&[0.1, 0.0, 0.0, 0.995]), pad(&[0.0, 0.0, 0.0, 1.0])].concat();
    w.append_with_terms(&items, &embeddings, &terms).unwrap();
    Store::open(dir).unwrap()
}

/// `v` in the store's 8 dimensions (the kernels take multiples of 8).
fn pad(v: &[f32; 4]) -> Vec<f32> {
    [&v[..], &[0.0; 4]].concat()
}

/// The hybrid alone (no FragRel, signals, time or update stage), expansion as given.
fn opts(expand: Option<Expand>) -> RankOptions {
    RankOptions {
        fragrel: None,
        importance: None,
        time: None,
        update: None,
        expand,
        ..RankOptions::default()
    }
}

#[test]
fn expansion_lifts_evidence_that_shares_no_word_with_the_question() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let cache = TenantCache::default();
    let query = Query {
        text: QUESTION,
        vector: &[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        date_ms: None,
    };
    let top = |o: &RankOptions| {
        let (r, trace) =
            rank_explained(&store, "ann", &query, Dense::Scorer(&CpuScorer), o, &cache).unwrap();
        trace.hits(&r, 2)
    };
    // without expansion: the dense score puts the pasta turn first, BM25 matches nothing
    let plain = top(&opts(None));
    assert!(plain[0].value.contains("pasta"), "{plain:?}");
    assert!(plain[0].explain.as_ref().unwrap().expansion.is_none());

    // with it: "surfing" is the nearest term (cosine 0.8; "pasta" and "cook" are orthogonal)
    let x = Expand {
        terms: 2,
        weight: 0.6,
    };
    let expanded = top(&opts(Some(x)));
    assert!(expanded[0].value.contains("surfing"), "{expanded:?}");
    let why = expanded[0].explain.as_ref().unwrap();
    assert!(why.expansion.unwrap() > 0.0, "{why:?}");
    assert_eq!(expanded[1].explain.as_ref().unwrap().expansion, Some(0.0));
    // at the default weight the expansion nudges, it does not overturn the dense score here
    let nudged = top(&opts(Some(Expand::default())));
    assert!(nudged[0].value.contains("pasta"), "{nudged:?}");
    assert!(nudged[1].score > plain[1].score, "{nudged:?} vs {plain:?}");

    // the fused path (the kernels' CPU reference) ranks the same with expansion on: from the
    // tenant's text columns (the kernels pick the expansion terms themselves), and beyond the
    // kernels' lists from host inputs
    let ranker = KernelRanker::new(Arc::new(Cpu), Placement::Device);
    let mut defaults = RankOptions::default();
    memdex_rank::fit_to_store(&mut defaults, false, &store);
    let wide = Expand {
        terms: memdex_kernels::MAX_TEXT_EXPAND_TERMS + 1,
        weight: 0.6,
    };
    let cases = [(opts(Some(x)), 1), (defaults, 2), (opts(Some(wide)), 2)];
    for (batches, (o, text_batches)) in (1..).zip(cases) {
        let cpu = top(&o);
        let bq = BatchQuery {
            tenant: "ann",
            query,
        };
        let k = TopK {
            k: 2,
            explain: false,
        };
        let fused = top_one(&ranker, &store, &cache, bq, &o, k).unwrap();
        let ids = |h: &[memdex_rank::SearchHit]| h.iter().map(|x| x.item_id).collect::<Vec<_>>();
        assert_eq!(ids(&fused), ids(&cpu), "{o:?}");
        for (f, c) in fused.iter().zip(&cpu) {
            assert!((f.score - c.score).abs() < 1e-4, "{f:?} vs {c:?}");
        }
        let on = (ranker.counts().into_iter())
            .find(|c| c.device == "kernels:cpu")
            .unwrap();
        assert_eq!(on.batches, batches, "the kernels ranked it");
        let seconds = ranker.seconds();
        assert_eq!(seconds.text_batches, text_batches, "{o:?}: {seconds:?}");
    }
}
