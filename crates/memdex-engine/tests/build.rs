//! The overlapped build: batches in flight share their keys (each distinct key embedded once
//! across the run), a failure stops the run with the batches before it committed, and a
//! re-run resumes: committed sessions unchanged, committed keys reused, nothing embedded
//! twice.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use memdex_core::{Granularity, OnError, Role, Session, TextKind, Turn};
use memdex_embed::{EmbedError, Encoder};
use memdex_engine::{index_sessions, IndexOptions};
use memdex_ingest::{IngestError, ItemizeOptions, SessionSource};
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

struct Sessions(std::vec::IntoIter<Session>);

impl Iterator for Sessions {
    type Item = Result<Session, IngestError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(Ok)
    }
}

impl SessionSource for Sessions {
    fn skipped(&self) -> &[IngestError] {
        &[]
    }
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
) -> Result<memdex_engine::IndexReport, memdex_engine::EngineError> {
    let mut w = StoreWriter::open_or_create_with(
        dir,
        enc.info(),
        Granularity::Turn,
        None,
        &Extraction::default(),
    )
    .unwrap();
    let opts = IndexOptions {
        itemize: ItemizeOptions::new(Granularity::Turn),
        on_error: OnError::Abort,
        flush_items: 7,
        accel: None,
    };
    index_sessions(Sessions(history().0.into_iter()), &mut w, enc, &opts, &())
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
    assert_eq!(counts.keys.load(Ordering::SeqCst), distinct);
    assert_eq!(r.keys_reused, 120 - distinct as u64);
    assert!(r.stages.embed >= 0.0 && r.stages.wall >= r.stages.write);

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
    assert_eq!(
        first_keys + r2.keys_embedded as usize,
        distinct,
        "nothing embedded twice"
    );
}
