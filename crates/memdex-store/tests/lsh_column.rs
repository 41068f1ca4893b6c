//! The optional LSH bucket-id column: recorded hashing in the manifest, ids kept per row through
//! the tenant-contiguous sort, absent in segments written before hashing was enabled.

#![allow(clippy::unwrap_used)]

use memdex_core::{Granularity, MemoryItem, Role};
use memdex_store::{LshMeta, Store, StoreError, StoreWriter};
use memdex_testkit::model;

fn item(tenant: &str, turn: u32) -> MemoryItem {
    let text = format!("{tenant} {turn}");
    MemoryItem {
        tenant: tenant.into(),
        session_id: "s".into(),
        turn,
        timestamp_ms: 1_700_000_000_000,
        role: Role::User,
        value: text.clone(),
        key: text.clone(),
        content_hash: MemoryItem::compute_hash(Role::User, &text, &text),
    }
}

#[test]
fn bucket_ids_follow_their_rows_and_old_segments_have_none() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut w =
        StoreWriter::open_or_create(dir, &model(4, "aaaa"), Granularity::Round, None).unwrap();
    let e = vec![0.5f32; 3 * 4];
    w.append(&[item("b", 0), item("a", 0), item("b", 1)], &e)
        .unwrap();
    let meta = LshMeta {
        seed: 42,
        buckets: 32,
        tables: 2,
        dim: 4,
    };
    w.enable_lsh(meta).unwrap();
    w.enable_lsh(meta).unwrap(); // same hashing again: no-op
    let other = LshMeta { seed: 7, ..meta };
    assert!(matches!(
        w.enable_lsh(other),
        Err(StoreError::InvalidAppend { .. })
    ));
    // without ids, or with ids out of range, a hashing store refuses the append
    let items = [item("b", 2), item("a", 1), item("b", 3)];
    assert!(w.append(&items, &e).is_err());
    let terms = vec![Vec::new(); 3];
    assert!(w
        .append_with_lsh(&items, &e, &terms, &[32, 0, 1, 1, 2, 2])
        .is_err());
    // item i gets ids (10 + i, 20 + i); the writer sorts rows by tenant (a first)
    w.append_with_lsh(&items, &e, &terms, &[10, 20, 11, 21, 12, 22])
        .unwrap();
    drop(w);

    let store = Store::open(dir).unwrap();
    assert_eq!(store.manifest().lsh, Some(meta));
    let segs = store.segments();
    assert!(segs[0].lsh_buckets().is_none(), "written before hashing");
    let (ids, tables) = segs[1].lsh_buckets().unwrap();
    assert_eq!(tables, 2);
    assert_eq!(ids, &[11, 21, 10, 20, 12, 22]);
    let b = store.tenant_slices("b");
    assert!(b[0].lsh_buckets().is_none());
    assert_eq!(b[1].lsh_buckets().unwrap(), (&[10u16, 20, 12, 22][..], 2));
}

#[test]
fn hashing_must_fit_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w =
        StoreWriter::open_or_create(tmp.path(), &model(4, "aaaa"), Granularity::Round, None)
            .unwrap();
    let bad = LshMeta {
        seed: 1,
        buckets: 16,
        tables: 2,
        dim: 8,
    };
    assert!(w.enable_lsh(bad).is_err());
    assert_eq!(w.manifest().lsh, None);
}
