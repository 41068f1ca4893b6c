//! Bucketed dense top-k over stored bucket ids: exact where ids are missing (segments written
//! before hashing was enabled), exact when every bucket is probed, a subset otherwise.

#![allow(clippy::unwrap_used)]

use memdex_core::{Granularity, MemoryItem, ModelInfo, Role};
use memdex_pipeline::lsh::{bucket_ids, lsh_top_k, projections};
use memdex_score::top_k;
use memdex_store::{LshMeta, Store, StoreWriter};

const DIM: usize = 16;

fn model() -> ModelInfo {
    memdex_testkit::model(DIM, "f")
}

fn items(n: usize, from: usize) -> Vec<MemoryItem> {
    (from..from + n)
        .map(|i| {
            let text = format!("item {i}");
            MemoryItem {
                tenant: "t".into(),
                session_id: format!("s{i}"),
                turn: 0,
                timestamp_ms: 0,
                role: Role::User,
                value: text.clone(),
                key: text.clone(),
                content_hash: MemoryItem::compute_hash(Role::User, &text, &text),
            }
        })
        .collect()
}

fn vectors(n: usize, seed: u64) -> Vec<f32> {
    let mut v = memdex_testkit::vectors(n * DIM, seed);
    for r in v.chunks_exact_mut(DIM) {
        let n = r.iter().map(|x| x * x).sum::<f32>().sqrt();
        r.iter_mut().for_each(|x| *x /= n);
    }
    v
}

#[test]
fn missing_ids_are_scanned_exactly_and_full_probing_is_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open_or_create(tmp.path(), &model(), Granularity::Turn, None).unwrap();
    let (old, new) = (vectors(300, 1), vectors(500, 2));
    w.append(&items(300, 0), &old).unwrap(); // before hashing: no ids
    let meta = LshMeta {
        seed: 42,
        buckets: 16,
        tables: 2,
        dim: DIM as u32,
    };
    w.enable_lsh(meta).unwrap();
    let lsh = projections(&meta);
    let ids = bucket_ids(&lsh, &new);
    let terms = vec![Vec::new(); 500];
    w.append_with_lsh(&items(500, 300), &new, &terms, &ids)
        .unwrap();
    drop(w);

    let store = Store::open(tmp.path()).unwrap();
    let all: Vec<f32> = old.iter().chain(&new).copied().collect();
    let q = &vectors(1, 3)[..];
    let exact: Vec<u32> = top_k(q, &[&all], DIM, 10).iter().map(|h| h.row).collect();
    let offsets = [0u32, 300];
    let rows_of = |r: &memdex_pipeline::lsh::LshSearch| -> Vec<u32> {
        r.hits
            .iter()
            .map(|h| offsets[h.block as usize] + h.row)
            .collect()
    };

    let one = lsh_top_k(&store, &lsh, "t", q, 10, 1).unwrap();
    assert_eq!(one.rows, 800);
    assert!(one.scanned >= 300 && one.scanned < 800, "{}", one.scanned);
    // every hit of the unhashed segment that belongs in the exact top 10 is found
    for r in exact.iter().filter(|&&r| r < 300) {
        assert!(
            rows_of(&one).contains(r),
            "row {r} of the old segment missed"
        );
    }
    // probing all 16 buckets of each table scans everything: the exact answer
    let full = lsh_top_k(&store, &lsh, "t", q, 10, 16).unwrap();
    assert_eq!(full.scanned, 800);
    assert_eq!(rows_of(&full), exact);
}

struct Sessions(std::vec::IntoIter<memdex_core::Session>);

impl Iterator for Sessions {
    type Item = Result<memdex_core::Session, memdex_ingest::IngestError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(Ok)
    }
}

impl memdex_ingest::SessionSource for Sessions {
    fn skipped(&self) -> &[memdex_ingest::IngestError] {
        &[]
    }
}

/// Bucket ids of a hashing store's rows, as `memdex index` writes them with `accel`.
fn indexed_ids(accel: Option<memdex_pipeline::KernelHandle>) -> Vec<u16> {
    use memdex_embed::Encoder;
    let tmp = tempfile::tempdir().unwrap();
    let enc = memdex_testkit::HashEncoder::new(32);
    let mut w =
        StoreWriter::open_or_create(tmp.path(), enc.info(), Granularity::Turn, None).unwrap();
    w.enable_lsh(LshMeta {
        seed: 7,
        buckets: 64,
        tables: 4,
        dim: 32,
    })
    .unwrap();
    let sessions: Vec<memdex_core::Session> = (0..40)
        .map(|s| memdex_core::Session {
            tenant: format!("t{}", s % 3),
            session_id: format!("s{s}"),
            timestamp_ms: 0,
            turns: (0..5)
                .map(|i| memdex_core::Turn {
                    role: Role::User,
                    content: format!("turn {i} of session {s} about topic {}", (s * 7 + i) % 13),
                })
                .collect(),
        })
        .collect();
    let opts = memdex_pipeline::IndexOptions {
        itemize: memdex_ingest::ItemizeOptions::new(Granularity::Turn),
        on_error: memdex_core::OnError::Abort,
        flush_items: 60,
        accel,
    };
    memdex_pipeline::index_sessions(Sessions(sessions.into_iter()), &mut w, &enc, &opts, &())
        .unwrap();
    drop(w);
    let store = Store::open(tmp.path()).unwrap();
    let mut ids = Vec::new();
    for t in ["t0", "t1", "t2"] {
        for s in store.tenant_slices(t) {
            ids.extend_from_slice(s.lsh_buckets().unwrap().0);
        }
    }
    ids
}

#[test]
fn bucket_ids_from_the_kernels_agree_with_the_cpus() {
    let cpu = indexed_ids(None);
    let spy = std::sync::Arc::new(memdex_testkit::SpyKernels::default());
    let dev = indexed_ids(Some(memdex_pipeline::KernelHandle(spy.clone())));
    assert_eq!(cpu.len(), 200 * 4);
    let hashed = spy.hashed_rows();
    assert_eq!(hashed, 200, "every row hashed by the kernels");
    let same = cpu.iter().zip(&dev).filter(|(a, b)| a == b).count();
    // the same argmax up to summation order: near-equal projections may pick another bucket
    assert!(
        same as f64 >= 0.99 * cpu.len() as f64,
        "{same} of {} ids agree",
        cpu.len()
    );
}
