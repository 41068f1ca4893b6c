//! TiM thoughts and MemTree maintained by the append pipeline over a test-double encoder:
//! the knowledge-update behaviour, persistence across restarts, incremental = rebuild,
//! deletion and tenant isolation.

#![allow(clippy::unwrap_used)]

mod common;
use common::Ranked;
use std::path::Path;

use memdex_core::{Granularity, Session, TextKind};
use memdex_embed::Encoder;
use memdex_ingest::ItemizeOptions;
use memdex_pipeline::{AppendPipeline, ExtractOptions, PipelineError};
use memdex_rank::{RankOptions, Retriever, ThoughtStage, TreeStage};
use memdex_store::{Store, StoreWriter, Structures};
use memdex_structures::{default_thoughts, default_tree, report, MemTree, ThoughtMemory};
use memdex_testkit::{user_session_at, HashEncoder};

const DIM: usize = 64;
const DAY: i64 = 86_400_000;
/// 2023-01-02
const T0: i64 = 1_672_617_600_000;

fn session(tenant: &str, id: &str, day: i64, texts: &[&str]) -> Session {
    user_session_at(tenant, id, T0 + day * DAY, texts)
}

fn open(dir: &Path, structures: bool) -> (StoreWriter, AppendPipeline) {
    let enc = HashEncoder::new(DIM);
    let mut w = StoreWriter::open_or_create_with(
        dir,
        enc.info(),
        Granularity::Turn,
        None,
        &ExtractOptions::default().extraction(),
    )
    .unwrap();
    if structures {
        w.enable_structures(Some(default_thoughts()), Some(default_tree()))
            .unwrap();
    }
    let p = AppendPipeline::new(
        Store::open(dir).unwrap(),
        ItemizeOptions::new(Granularity::Turn),
        false,
    )
    .unwrap();
    (w, p)
}

/// Appends each group of sessions as one commit.
fn append(dir: &Path, groups: &[Vec<Session>]) {
    let (mut w, mut p) = open(dir, false);
    let enc = HashEncoder::new(DIM);
    let mut embed =
        |t: &[&str]| -> Result<_, PipelineError> { Ok(enc.embed(t, TextKind::Passage)?) };
    for g in groups {
        p.admit(g).unwrap();
        p.commit(&mut w, &mut embed).unwrap();
    }
}

fn sister_story() -> Vec<Session> {
    vec![
        session(
            "alice",
            "s1",
            0,
            &["My sister lives in Porto.", "I like green tea."],
        ),
        session("alice", "s2", 30, &["I adopted a dog named Max."]),
        session("alice", "s3", 60, &["She moved to Lisbon last month."]),
        session("bob", "s1", 0, &["My sister lives in Porto too."]),
    ]
}

fn searcher(dir: &Path) -> memdex_memory::Reader {
    common::reader(dir, DIM)
}

fn with_thoughts() -> RankOptions {
    RankOptions {
        thoughts: Some(ThoughtStage::default()),
        ..RankOptions::default()
    }
}

#[test]
fn knowledge_update_surfaces_the_newer_statement_first() {
    let tmp = tempfile::tempdir().unwrap();
    open(tmp.path(), true);
    // one commit per session: the pronoun in s3 is resolved from the stored thoughts
    append(
        tmp.path(),
        &sister_story()
            .into_iter()
            .map(|s| vec![s])
            .collect::<Vec<_>>(),
    );
    let s = searcher(tmp.path());
    let q = "Where does my sister live?";
    let plain = s
        .ranked("alice", q, None, 3, &RankOptions::default())
        .unwrap();
    assert_eq!(
        plain[0].value, "My sister lives in Porto.",
        "without the stage the old statement wins on words"
    );
    let hits = s.ranked("alice", q, None, 3, &with_thoughts()).unwrap();
    assert_eq!(hits[0].value, "She moved to Lisbon last month.");
    assert_eq!(
        hits[1].value, "My sister lives in Porto.",
        "the old one is kept, second"
    );
    // the memory itself: Porto forgotten, contradicted by the Lisbon thought
    let store = Store::open(tmp.path()).unwrap();
    let live = report::live_thoughts(&store, "alice").unwrap();
    let sister: Vec<&str> = live
        .iter()
        .filter(|t| t.subject == "User's sister")
        .map(|t| t.object.as_str())
        .collect();
    assert_eq!(sister, ["Lisbon"]);
    let log = report::history(&store, "alice").unwrap();
    let forget = log.iter().find(|l| l.op == "forget").unwrap();
    assert!(forget.sentence.contains("Porto"), "{forget:?}");
    assert!(forget.reason.starts_with("contradicted by"), "{forget:?}");
    // bob's sister is untouched by alice's news
    let bob = report::live_thoughts(&store, "bob").unwrap();
    assert_eq!(bob.len(), 1);
    assert_eq!(bob[0].object, "Porto");
}

#[test]
fn negation_and_forget_that_forget_thoughts() {
    let tmp = tempfile::tempdir().unwrap();
    open(tmp.path(), true);
    append(
        tmp.path(),
        &[vec![
            session("ann", "s1", 0, &["I work at Google.", "I have a cat."]),
            session("ann", "s2", 5, &["I no longer work at Google."]),
            session("ann", "s3", 9, &["Please forget that I have a cat."]),
        ]],
    );
    let store = Store::open(tmp.path()).unwrap();
    assert!(report::live_thoughts(&store, "ann").unwrap().is_empty());
    let reasons: Vec<String> = report::history(&store, "ann")
        .unwrap()
        .into_iter()
        .filter(|l| l.op == "forget")
        .map(|l| l.reason)
        .collect();
    assert!(reasons[0].starts_with("negated in item"), "{reasons:?}");
    assert!(reasons[1].starts_with("asked to forget"), "{reasons:?}");
}

fn states(dir: &Path, tenant: &str) -> (ThoughtMemory, MemTree) {
    let store = Store::open(dir).unwrap();
    let aux = Structures::open(&store).unwrap().unwrap();
    (
        ThoughtMemory::replay(tenant, &aux.thought_rows(tenant)),
        MemTree::replay(tenant, &aux.tree_rows(tenant)),
    )
}

fn story() -> Vec<Session> {
    let texts = [
        "I play the guitar every evening.",
        "My brother plays the drums in a band.",
        "I bought a new guitar amplifier.",
        "My sister lives in Porto.",
        "I went hiking in the Alps with my brother.",
        "She moved to Lisbon.",
        "The band played a concert in Lisbon.",
        "I like green tea and black coffee.",
    ];
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| session("t", &format!("s{i}"), i as i64, &[t, "I love the guitar."]))
        .collect()
}

#[test]
fn incremental_appends_give_the_tree_and_thoughts_of_one_rebuild() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    open(a.path(), true);
    open(b.path(), true);
    append(
        a.path(),
        &story().into_iter().map(|s| vec![s]).collect::<Vec<_>>(),
    );
    append(b.path(), &[story()]);
    let (ta, ra) = states(a.path(), "t");
    let (tb, rb) = states(b.path(), "t");
    assert_eq!(ta.thoughts, tb.thoughts);
    let na: Vec<_> = ra.nodes().cloned().collect();
    let nb: Vec<_> = rb.nodes().cloned().collect();
    assert_eq!(na, nb);
    assert!(
        ra.stats().leaves == 16 && ra.stats().max_depth >= 2,
        "{:?}",
        ra.stats()
    );
    assert!(na.iter().any(|n| n.item.is_none() && !n.content.is_empty()));
}

#[test]
fn structures_persist_and_a_store_without_them_catches_up_when_enabled() {
    let tmp = tempfile::tempdir().unwrap();
    open(tmp.path(), false);
    append(tmp.path(), &[story()]);
    assert!(Store::open(tmp.path())
        .unwrap()
        .manifest()
        .structures
        .is_none());
    let s = searcher(tmp.path());
    let e = s
        .ranked("t", "guitar", None, 3, &with_thoughts())
        .unwrap_err()
        .to_string();
    assert!(e.contains("memdex index --thoughts"), "{e}");
    let store = Store::open(tmp.path()).unwrap();
    let e = report::tree(&store, "t", 1).unwrap_err().to_string();
    assert!(
        e.contains("keeps no tree") && e.contains("memdex index --tree"),
        "{e}"
    );
    // enabling later: the next commit (even an empty one) processes every stored item
    open(tmp.path(), true);
    append(tmp.path(), &[vec![]]);
    let (t, r) = states(tmp.path(), "t");
    assert!(!t.thoughts.is_empty());
    assert_eq!(r.stats().leaves, 16);
    // a second pipeline (a restart) neither redoes nor loses anything
    append(tmp.path(), &[vec![]]);
    let (t2, r2) = states(tmp.path(), "t");
    assert_eq!(t.thoughts, t2.thoughts);
    assert_eq!(r.nodes().count(), r2.nodes().count());
    // the reports name a tenant the store does not hold
    let store = Store::open(tmp.path()).unwrap();
    for e in [
        report::tree(&store, "nobody", 1).map(|_| ()),
        report::live_thoughts(&store, "nobody").map(|_| ()),
        report::history(&store, "nobody").map(|_| ()),
    ] {
        let e = e.unwrap_err().to_string();
        assert!(e.contains("tenant \"nobody\" has no memory"), "{e}");
    }
    // and the structures rank
    let tree = RankOptions {
        retriever: Retriever::Tree,
        tree: Some(TreeStage::default()),
        ..RankOptions::dense()
    };
    let hits = searcher(tmp.path())
        .ranked("t", "guitar amplifier", None, 3, &tree)
        .unwrap();
    assert!(
        hits.iter().any(|h| h.value.contains("amplifier")),
        "{hits:?}"
    );
}

#[test]
fn deleted_items_take_their_thoughts_and_leaves_with_them() {
    let tmp = tempfile::tempdir().unwrap();
    open(tmp.path(), true);
    append(tmp.path(), &[story()]);
    let store = Store::open(tmp.path()).unwrap();
    let porto: Vec<u64> = store
        .tenant_slices("t")
        .iter()
        .flat_map(|s| (0..s.rows).map(move |r| s.item(r)))
        .filter(|it| it.value == "My sister lives in Porto." || it.value == "She moved to Lisbon.")
        .map(|it| it.item_id)
        .collect();
    assert_eq!(porto.len(), 2);
    let (mut w, mut p) = open(tmp.path(), false);
    w.delete_items(&porto).unwrap();
    // readers skip them before the writer records anything
    let s = searcher(tmp.path());
    let hits = s
        .ranked(
            "t",
            "Where does my sister live?",
            None,
            20,
            &with_thoughts(),
        )
        .unwrap();
    assert!(hits.iter().all(|h| !porto.contains(&h.item_id)));
    let mid = report::live_thoughts(&Store::open(tmp.path()).unwrap(), "t").unwrap();
    assert!(mid.iter().all(|t| t.subject != "User's sister"), "{mid:?}");
    // the writer's sync records it: forgotten, leaves removed, words hidden in the log
    p.forget("t", None).unwrap();
    let enc = HashEncoder::new(DIM);
    let mut embed =
        |t: &[&str]| -> Result<_, PipelineError> { Ok(enc.embed(t, TextKind::Passage)?) };
    let r = p
        .sync_structures(&mut w, &mut embed, &["t"])
        .unwrap()
        .unwrap();
    assert_eq!(r.leaves_removed, 2);
    assert!(r.thoughts_forgotten >= 1, "{r:?}");
    let (m, tree) = states(tmp.path(), "t");
    assert!(m
        .live()
        .all(|t| t.sources.iter().all(|s| !porto.contains(s))));
    assert!(porto.iter().all(|&i| tree.leaf_of(i).is_none()));
    assert_eq!(tree.stats().leaves, 14);
    let log = report::history(&Store::open(tmp.path()).unwrap(), "t").unwrap();
    assert!(log.iter().any(|l| l.sentence == "[deleted]"));
    assert!(log.iter().all(|l| !l.sentence.contains("Porto")), "{log:?}");
}

struct Sessions(std::vec::IntoIter<Session>);

impl Iterator for Sessions {
    type Item = Result<Session, memdex_ingest::IngestError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(Ok)
    }
}

impl memdex_ingest::SessionSource for Sessions {
    fn skipped(&self) -> &[memdex_ingest::IngestError] {
        &[]
    }
}

#[test]
fn batch_index_builds_the_structures_of_the_append_path() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    open(a.path(), true);
    append(a.path(), &[story()]);
    let (mut w, _) = open(b.path(), true);
    let opts = memdex_pipeline::IndexOptions {
        itemize: ItemizeOptions::new(Granularity::Turn),
        on_error: memdex_core::OnError::Abort,
        flush_items: 5,
        accel: None,
    };
    let enc = HashEncoder::new(DIM);
    let r =
        memdex_pipeline::index_sessions(Sessions(story().into_iter()), &mut w, &enc, &opts, &())
            .unwrap();
    let synced = r.structures.expect("the store keeps structures");
    assert_eq!(synced.items, 16);
    assert!(
        synced.thoughts_inserted > 0 && synced.tree_nodes_written >= 16,
        "{synced:?}"
    );
    let ((ta, ra), (tb, rb)) = (states(a.path(), "t"), states(b.path(), "t"));
    assert_eq!(ta.thoughts, tb.thoughts);
    assert_eq!(
        ra.nodes().cloned().collect::<Vec<_>>(),
        rb.nodes().cloned().collect::<Vec<_>>()
    );
    // a re-run finds nothing new: nothing thought or written again
    let again =
        memdex_pipeline::index_sessions(Sessions(story().into_iter()), &mut w, &enc, &opts, &())
            .unwrap();
    assert_eq!(again.structures.map(|s| s.items), Some(0));
}
