//! The update stage and `explain` through the searcher, over a test-double encoder: a newer
//! statement of the same thing ranks first for a present-tense question and the older one for
//! a question about the earlier state; each explained hit's stage scores agree with the
//! ranking they explain.

#![allow(clippy::unwrap_used)]

mod common;
use common::Ranked;
use memdex_core::{Granularity, Role, Session, TextKind, Turn};
use memdex_embed::Encoder;
use memdex_ingest::ItemizeOptions;
use memdex_pipeline::{AppendPipeline, ExtractOptions, PipelineError};
use memdex_rank::{RankOptions, Stages, TopK};
use memdex_store::{Store, StoreWriter};
use memdex_testkit::HashEncoder;

const DIM: usize = 256;
const DAY: i64 = 86_400_000;
const T0: i64 = 1_672_617_600_000;

fn session(id: &str, day: i64, text: &str) -> Session {
    Session {
        tenant: "ann".into(),
        session_id: id.into(),
        timestamp_ms: T0 + day * DAY,
        turns: vec![Turn {
            role: Role::User,
            content: text.into(),
        }],
    }
}

fn searcher(dir: &std::path::Path) -> memdex_memory::Reader {
    let enc = HashEncoder::new(DIM);
    let mut w = StoreWriter::open_or_create_with(
        dir,
        enc.info(),
        Granularity::Turn,
        None,
        &ExtractOptions::default().extraction(),
    )
    .unwrap();
    let mut p = AppendPipeline::new(
        Store::open(dir).unwrap(),
        ItemizeOptions::new(Granularity::Turn),
        false,
    )
    .unwrap();
    let mut embed =
        |t: &[&str]| -> Result<_, PipelineError> { Ok(enc.embed(t, TextKind::Passage)?) };
    p.admit(&[
        session(
            "old",
            0,
            "my sister lives in a small flat in porto by the river",
        ),
        session(
            "a",
            10,
            "the lasagna recipe needs ricotta spinach and basil",
        ),
        session("b", 20, "python list comprehension syntax question"),
        session(
            "new",
            40,
            "my sister moved and now lives in a big flat in lisbon by the sea",
        ),
        session("c", 50, "marathon training plan for twelve weeks"),
    ])
    .unwrap();
    p.commit(&mut w, &mut embed).unwrap();
    common::reader(dir, DIM)
}

fn top(s: &memdex_memory::Reader, q: &str, opts: &RankOptions) -> Vec<String> {
    let hits = s
        .ranked_with(
            "ann",
            q,
            None,
            opts,
            TopK {
                k: 3,
                explain: true,
            },
        )
        .unwrap();
    hits.iter().map(|h| h.session_id.clone()).collect()
}

#[test]
fn the_newer_statement_answers_the_present_and_the_older_one_the_past() {
    let tmp = tempfile::tempdir().unwrap();
    let s = searcher(tmp.path());
    let opts = RankOptions::default();
    let off = Stages {
        update_window: Some(0),
        ..Stages::default()
    }
    .apply(RankOptions::default(), &|f| f.to_string())
    .unwrap();
    assert!(off.update.is_none());
    // "porto" / "river" words: without the stage the older statement wins on BM25
    let q = "my sister lives in porto by the river, where does she live";
    assert_eq!(top(&s, q, &off)[..2], ["old", "new"]);
    assert_eq!(top(&s, q, &opts)[..2], ["new", "old"]);
    let q = "where did my sister live before, in porto by the river";
    assert_eq!(top(&s, q, &opts)[..2], ["old", "new"]);
    // a past-tense question about events is left alone
    let q = "my sister lives in porto by the river, where did she live";
    assert_eq!(top(&s, q, &opts)[..2], ["old", "new"]);
}

#[test]
fn explained_hits_agree_with_the_ranking_they_explain() {
    let tmp = tempfile::tempdir().unwrap();
    let s = searcher(tmp.path());
    let opts = RankOptions::default();
    let q = "my sister lives in porto by the river, where does she live";
    let plain = s.ranked("ann", q, None, 5, &opts).unwrap();
    let explained = s
        .ranked_with(
            "ann",
            q,
            None,
            &opts,
            TopK {
                k: 5,
                explain: true,
            },
        )
        .unwrap();
    assert_eq!(plain.len(), explained.len());
    for (p, e) in plain.iter().zip(&explained) {
        assert_eq!((p.item_id, p.rank, p.score), (e.item_id, e.rank, e.score));
        assert!(p.explain.is_none());
        let x = e.explain.as_ref().unwrap();
        assert!(x.dense.is_some() && x.bm25.is_some() && x.fragrel.is_some());
        // importance is the last score stage of the default pipeline: its score is the hit's
        assert!(
            (x.signals.unwrap() - e.score).abs() < 1e-6,
            "{x:?} vs {}",
            e.score
        );
        assert!(x.structures.is_none() && x.superseded.is_none());
    }
    let first = explained[0].explain.as_ref().unwrap();
    let second = explained[1].explain.as_ref().unwrap();
    assert_eq!(explained[0].session_id, "new");
    assert_eq!(first.update_moved_from, Some(2), "{first:?}");
    assert_eq!(second.update_moved_from, Some(1), "{second:?}");
    // the move names its link: the older statement, and the newer one's cue of change
    let link = first.update.as_ref().unwrap();
    assert_eq!(
        (link.linked_session_id.as_str(), link.cue),
        ("old", "moved")
    );
    assert_eq!(
        second.update.as_ref().unwrap().linked_session_id,
        "new",
        "{second:?}"
    );
    assert!(explained[2]
        .explain
        .as_ref()
        .unwrap()
        .update_moved_from
        .is_none());
}
