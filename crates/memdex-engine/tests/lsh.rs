//! Bucketed dense top-k over stored bucket ids: exact where ids are missing (segments written
//! before hashing was enabled), exact when every bucket is probed, a subset otherwise.

#![allow(clippy::unwrap_used)]

use memdex_core::{Granularity, MemoryItem, ModelInfo, Role};
use memdex_engine::lsh::{bucket_ids, lsh_top_k, projections};
use memdex_index::top_k;
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
    let rows_of = |r: &memdex_engine::lsh::LshSearch| -> Vec<u32> {
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
