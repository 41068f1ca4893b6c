//! The overlapped build: batches in flight share their keys (each distinct key embedded once
//! across the run), a failure stops the run with the batches before it committed, and a
//! re-run resumes: committed sessions unchanged, committed keys reused, nothing embedded
//! twice.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use memdex_core::{Granularity, OnError, Role, Session, TextKind, Turn};
use memdex_embed::{EmbedError, Encoder};
use memdex_ingest::{ItemizeOptions, SessionList};
use memdex_pipeline::{
    index_sessions, AppendPipeline, ExtractOptions, IndexOptions, PipelineError,
};
use memdex_store::{Extraction, Store, StoreWriter};
use memdex_testkit::HookedEncoder;

/// What the counting encoder saw.
#[derive(Debug, Default)]
struct Counts {
    calls: AtomicUsize,
    keys: AtomicUsize,
}

/// Counts embedded keys; fails every call from the `fail_from`-th on.
fn counting(fail_from: usize) -> (impl Encoder, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let seen = counts.clone();
    let enc = HookedEncoder::new(16, "counting", move |texts: &[&str], _kind: TextKind| {
        if seen.calls.fetch_add(1, Ordering::SeqCst) + 1 >= fail_from {
            return Err(EmbedError::Tokenize {
                index: 0,
                message: "the encoder stopped".into(),
            });
        }
        seen.keys.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(())
    });
    (enc, counts)
}

/// 40 sessions over 4 tenants; session i's turns repeat the texts of session i − 10 (shared
/// keys across batches, as a shared pool's sessions are).
fn history() -> (Vec<Session>, usize) {
    let mut distinct = std::collections::HashSet::new();
    let sessions = (0..40)
        .map(|i| {
            let turns: Vec<Turn> = (0..3)
                .map(|t| {
                    let text = format!("note {} part {t}", i % 10);
                    distinct.insert(text.clone());
                    Turn {
                        role: Role::User,
                        content: text,
                    }
                })
                .collect();
            Session {
                tenant: format!("t{}", i % 4),
                session_id: format!("s{i}"),
                timestamp_ms: 1_683_540_000_000 + i as i64,
                turns,
            }
        })
        .collect();
    (sessions, distinct.len())
}

fn run(
    dir: &std::path::Path,
    enc: &dyn Encoder,
) -> Result<memdex_pipeline::IndexReport, memdex_pipeline::PipelineError> {
    run_with(dir, enc, &Extraction::default(), history().0)
}

fn run_with(
    dir: &std::path::Path,
    enc: &dyn Encoder,
    extraction: &Extraction,
    sessions: Vec<Session>,
) -> Result<memdex_pipeline::IndexReport, memdex_pipeline::PipelineError> {
    let mut w =
        StoreWriter::open_or_create_with(dir, enc.info(), Granularity::Turn, None, extraction)
            .unwrap();
    let opts = IndexOptions {
        itemize: ItemizeOptions::new(Granularity::Turn),
        on_error: OnError::Abort,
        flush_items: 7,
        accel: None,
    };
    index_sessions(SessionList::new(sessions), &mut w, enc, &opts, &())
}

/// Sessions whose turns hold dates, relative times and statements (both extractors find
/// something), over two tenants.
fn dated_history() -> Vec<Session> {
    let texts = [
        "I moved to Lisbon on 3 March 2023 with my sister.",
        "Yesterday I started a new job at the bakery.",
        "My car broke down last week, so I bought a bike.",
        "The rent went up to 1,200 euros in May.",
        "We talked about the trip to Porto two days ago.",
        "I no longer eat meat since January.",
    ];
    (0..12)
        .map(|i| Session {
            tenant: format!("t{}", i % 2),
            session_id: format!("d{i}"),
            timestamp_ms: 1_683_540_000_000 + i as i64 * 86_400_000,
            turns: (0..3)
                .map(|t| Turn {
                    role: Role::User,
                    content: texts[(i + t) % texts.len()].to_string(),
                })
                .collect(),
        })
        .collect()
}

/// Every live row of `dir`: tenant, session, value, key, facts and events, in store order.
type Row = (String, String, String, String, String, Vec<(i64, i64)>);
fn rows(dir: &std::path::Path) -> Vec<Row> {
    let store = Store::open(dir).unwrap();
    let mut out = Vec::new();
    for tenant in store.tenants().keys() {
        for slice in store.tenant_slices(tenant) {
            for i in 0..slice.rows {
                out.push((
                    tenant.to_string(),
                    slice.session_id(i).to_string(),
                    slice.value(i).to_string(),
                    slice.key(i).to_string(),
                    slice.facts(i).to_string(),
                    slice.events(i).collect(),
                ));
            }
        }
    }
    out
}

#[test]
fn a_build_extracts_what_one_request_at_a_time_does() {
    // the build extracts each batch at once; a server extracts each request as it comes
    let x = ExtractOptions::default().extraction();
    let (enc, _) = counting(usize::MAX);
    let built = tempfile::tempdir().unwrap();
    let r = run_with(built.path(), &enc, &x, dated_history()).unwrap();
    assert!(r.items_with_events > 0, "{r:?}");
    let served = tempfile::tempdir().unwrap();
    let mut w =
        StoreWriter::open_or_create_with(served.path(), enc.info(), Granularity::Turn, None, &x)
            .unwrap();
    let store = Store::open(served.path()).unwrap();
    let mut p = AppendPipeline::new(store, ItemizeOptions::new(Granularity::Turn), false).unwrap();
    let mut embed =
        |t: &[&str]| -> Result<_, PipelineError> { Ok(enc.embed(t, TextKind::Passage)?) };
    for s in dated_history() {
        p.admit(std::slice::from_ref(&s)).unwrap();
        p.commit(&mut w, &mut embed).unwrap();
    }
    let (a, b) = (rows(built.path()), rows(served.path()));
    assert_eq!(a.len(), 36);
    assert!(a.iter().any(|r| !r.4.is_empty()) && a.iter().any(|r| !r.5.is_empty()));
    assert_eq!(a, b);
}

#[test]
fn batches_in_flight_share_keys_and_a_rerun_resumes() {
    let (_, distinct) = history();
    // one run: batches cut at the first session boundary past 7 items (9 items each), 30
    // distinct keys among 120 items
    let tmp = tempfile::tempdir().unwrap();
    let (enc, counts) = counting(usize::MAX);
    let r = run(tmp.path(), &enc).unwrap();
    assert_eq!(r.items_written, 120);
    assert_eq!(r.segments_written, 14, "{r:?}");
    assert_eq!(
        r.keys_embedded as usize, distinct,
        "each distinct key once: {r:?}"
    );
    // the word table's terms ("note", "part"), each once although batches in flight share
    // them, embedded with the keys
    assert_eq!(r.words_embedded, 2, "{r:?}");
    assert_eq!(counts.keys.load(Ordering::SeqCst), distinct + 2);
    assert_eq!(r.keys_reused, 120 - distinct as u64);
    // the stages' busy seconds: each within the wall time, the prepare parts within prepare,
    // the rates and busy fractions consistent with them
    let (st, p) = (r.stages, r.stages.prepare_parts);
    assert!(
        st.wall > 0.0 && st.wall >= st.write && st.wall >= st.embed,
        "{st:?}"
    );
    let parts = p.read + p.itemize + p.extract + p.plan;
    assert!(parts > 0.0 && parts <= st.prepare + 1e-3, "{st:?}");
    let t = r.throughput();
    assert!((t.rows_per_s * st.wall - 120.0).abs() < 1e-6, "{t:?}");
    assert!((t.embed_busy * st.wall - st.embed).abs() < 1e-9, "{t:?}");
    assert!(
        t.prepare_busy > 0.0 && t.prepare_busy <= 1.0 + 1e-9,
        "{t:?}"
    );

    // interrupted: the encoder stops at its 3rd batch; the batches before it are committed
    let tmp = tempfile::tempdir().unwrap();
    let (enc, counts) = counting(3);
    let e = run(tmp.path(), &enc).unwrap_err();
    assert!(e.to_string().contains("the encoder stopped"), "{e}");
    let store = Store::open(tmp.path()).unwrap();
    let committed_rows = store.rows();
    assert!(
        committed_rows > 0 && committed_rows < 120,
        "{committed_rows}"
    );
    let first_keys = counts.keys.load(Ordering::SeqCst);
    // a re-run: the committed sessions are unchanged, their keys reused; all keys embedded once
    let (enc2, _) = counting(usize::MAX);
    let r2 = run(tmp.path(), &enc2).unwrap();
    assert!(r2.sessions_unchanged > 0, "{r2:?}");
    assert_eq!(Store::open(tmp.path()).unwrap().rows(), 120);
    // (the first run's texts include the two terms; the re-run finds them in the table)
    assert_eq!(r2.words_embedded, 0, "{r2:?}");
    assert_eq!(
        first_keys + r2.keys_embedded as usize,
        distinct + 2,
        "nothing embedded twice"
    );
}
