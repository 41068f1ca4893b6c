//! The shared layout: each distinct content (key, value, terms, vector) stored once in content
//! files, rows referencing it; deletion and compaction drop what no row references; inline
//! stores keep working as they are.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use memdex_core::{Granularity, MemoryItem};
use memdex_store::{CompactOptions, Layout, Manifest, Store, StoreSpec, StoreWriter};
use memdex_testkit::{contains, item, model, segment_bytes, vectors};

fn writer(dir: &Path, layout: Option<Layout>) -> StoreWriter {
    let spec = StoreSpec {
        layout,
        ..StoreSpec::new(Granularity::Round)
    };
    StoreWriter::open_or_create_spec(dir, &model(4, "aaaa"), &spec).unwrap()
}

/// `tenant`'s copy of a shared session: the same texts as every other tenant's.
fn session(tenant: &str, session: &str, texts: &[&str]) -> Vec<MemoryItem> {
    (texts.iter().enumerate())
        .map(|(t, text)| item(tenant, session, t as u32, text))
        .collect()
}

/// Each text's vector: a function of the text, as an encoder's would be.
fn embed(items: &[MemoryItem]) -> Vec<f32> {
    (items.iter())
        .flat_map(|it| vectors(4, memdex_core::content_hash(it.key.as_bytes())))
        .collect()
}

fn append(w: &mut StoreWriter, items: &[MemoryItem]) {
    w.append(items, &embed(items)).unwrap();
}

const SHARED: [&str; 4] = [
    "the lake house",
    "a red bicycle",
    "piano lessons",
    "tea at five",
];

#[test]
fn tenants_sharing_sessions_share_content_bytes() {
    let (shared, inline) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (dir, layout) in [
        (shared.path(), Layout::Shared),
        (inline.path(), Layout::Inline),
    ] {
        let mut w = writer(dir, Some(layout));
        for t in ["ann", "bo", "cy"] {
            append(&mut w, &session(t, "pool-7", &SHARED));
        }
        let m = w.manifest();
        assert_eq!(m.format_version, layout.format_version());
        if layout == Layout::Shared {
            assert_eq!(m.contents.len(), 1, "the later appends stored no content");
            assert_eq!(m.contents[0].rows, 4);
        }
    }
    let s = Store::open(shared.path()).unwrap();
    assert_eq!((s.rows(), s.contents().len()), (12, 4));
    for t in ["ann", "bo", "cy"] {
        let slices = s.tenant_slices(t);
        let expect = session(t, "pool-7", &SHARED);
        let want = embed(&expect);
        for (i, it) in expect.iter().enumerate() {
            let got = slices[0].item(i);
            assert_eq!((got.key, got.value, got.tenant), (&*it.key, &*it.value, t));
            assert_eq!(got.content_hash, it.content_hash);
            assert_eq!(got.embedding, &want[i * 4..(i + 1) * 4]);
        }
        // a tenant's four rows are one run of the one content file
        let runs = slices[0].vector_runs();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].data(4), &want[..]);
    }
    let size = |d: &Path| Manifest::load(d).unwrap().bytes();
    assert!(
        size(shared.path()) < size(inline.path()),
        "shared {} vs inline {}",
        size(shared.path()),
        size(inline.path())
    );
}

#[test]
fn the_same_value_under_another_key_is_another_content() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = writer(tmp.path(), None);
    let plain = item("ann", "s", 0, "I moved to Oslo");
    // the same turn, its key expanded by extracted facts (as on another date)
    let mut expanded = item("bo", "s", 0, "I moved to Oslo");
    expanded.key = format!("bo lives in Oslo. {}", plain.key);
    append(&mut w, &[plain.clone(), expanded.clone()]);
    let s = Store::open(tmp.path()).unwrap();
    assert_eq!(s.contents().len(), 2);
    assert_eq!(s.tenant_slices("bo")[0].key(0), expanded.key);
    assert_eq!(s.tenant_slices("ann")[0].key(0), plain.key);
}

#[test]
fn runs_follow_the_content_files_and_match_the_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = writer(tmp.path(), None);
    append(&mut w, &session("ann", "a", &SHARED[..3]));
    // bo: a session ann stored, then one of his own, in one append
    let mut bo = session("bo", "a", &SHARED[..3]);
    bo.extend(session("bo", "b", &["his own", "words"]));
    append(&mut w, &bo);
    let s = Store::open(tmp.path()).unwrap();
    let slices = s.tenant_slices("bo");
    let runs = slices[0].vector_runs();
    let shape: Vec<(usize, usize)> = runs.iter().map(|r| (r.start, r.rows)).collect();
    assert_eq!(shape, [(0, 3), (0, 2)], "ann's file, then the new one");
    assert_ne!(runs[0].block.id, runs[1].block.id);
    let flat: Vec<f32> = runs.iter().flat_map(|r| r.data(4).to_vec()).collect();
    let rows: Vec<f32> = (0..5)
        .flat_map(|i| slices[0].embedding(i).to_vec())
        .collect();
    assert_eq!(flat, rows);
    assert_eq!(flat, embed(&bo));
    let mut ids = s.vector_block_ids();
    ids.sort_unstable();
    let mut want = vec![runs[0].block.id, runs[1].block.id];
    want.sort_unstable();
    assert_eq!(ids, want, "device blocks are the content files");
}

#[test]
fn deletion_keeps_content_others_reference_and_removes_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut w = writer(dir, None);
    let mut ann = session("ann", "pool", &SHARED);
    ann.extend(session("ann", "mine", &["ann secret-walrus"]));
    append(&mut w, &ann);
    append(&mut w, &session("bo", "pool", &SHARED));
    let mut reader = Store::open(dir).unwrap();
    let ids: Vec<u64> = (0..5)
        .map(|i| reader.tenant_slices("ann")[0].item(i).item_id)
        .collect();
    w.delete_items(&ids).unwrap();
    let r = w.compact(&CompactOptions::default()).unwrap();
    assert_eq!((r.rows_removed, r.contents_removed), (5, 1));
    let bytes = segment_bytes(dir);
    assert!(!contains(&bytes, "secret-walrus"), "deleted text on disk");
    assert!(contains(&bytes, "piano lessons"), "bo still references it");
    // a reader of the old version moves to the compacted one
    reader.refresh().unwrap();
    assert!(reader.tenant_slices("ann").is_empty());
    let bo = reader.tenant_slices("bo");
    let want = embed(&session("bo", "pool", &SHARED));
    assert_eq!(bo[0].item(2).key, "piano lessons");
    assert_eq!(bo[0].embedding(3), &want[12..16]);
    // the last reference gone, the content goes too
    let bo_ids: Vec<u64> = (0..4).map(|i| bo[0].item(i).item_id).collect();
    drop(reader);
    w.delete_items(&bo_ids).unwrap();
    let r = w.compact(&CompactOptions::default()).unwrap();
    assert_eq!(r.contents_removed, 4);
    assert!(w.manifest().contents.is_empty() && w.manifest().segments.is_empty());
    assert_eq!(std::fs::read_dir(dir.join("segments")).unwrap().count(), 0);
    // and new appends store their content again
    append(&mut w, &session("cy", "pool", &SHARED));
    let s = Store::open(dir).unwrap();
    assert_eq!(s.tenant_slices("cy")[0].item(0).key, SHARED[0]);
}

#[test]
fn small_content_files_merge_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = writer(tmp.path(), None);
    for (i, text) in SHARED.iter().enumerate() {
        append(&mut w, &session("ann", &format!("s{i}"), &[text]));
    }
    assert_eq!(w.manifest().contents.len(), 4);
    w.compact(&CompactOptions::default()).unwrap();
    assert_eq!(w.manifest().contents.len(), 1);
    let s = Store::open(tmp.path()).unwrap();
    let slices = s.tenant_slices("ann");
    assert_eq!(slices[0].vector_runs().len(), 1, "one run after the merge");
    let keys: Vec<&str> = (0..4).map(|i| slices[0].key(i)).collect();
    assert_eq!(keys, SHARED);
}

#[test]
fn a_row_whose_content_is_missing_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = writer(tmp.path(), None);
    append(&mut w, &session("ann", "a", &SHARED[..1]));
    append(&mut w, &session("ann", "b", &SHARED[1..2]));
    drop(w);
    let path = tmp.path().join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    m["contents"].as_array_mut().unwrap().pop();
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    memdex_store::Manifest::reseal(tmp.path()).unwrap();
    let e = Store::open(tmp.path()).unwrap_err().to_string();
    assert!(
        e.contains("seg-") && e.contains("row 0") && e.contains("no content file holds"),
        "{e}"
    );
    // and a content file may not be listed as a segment's id twice
    m["contents"] = serde_json::json!([{ "id": 1, "file": "../x.arrow", "rows": 1, "bytes": 1 }]);
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    let e = Store::open(tmp.path()).unwrap_err().to_string();
    assert!(e.contains("cnt-<digits>.arrow"), "{e}");
}

#[test]
fn an_inline_store_stays_inline() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    append(
        &mut writer(dir, Some(Layout::Inline)),
        &session("ann", "a", &SHARED),
    );
    // reopened with no layout asked for: appends follow the store's own
    let mut w = writer(dir, None);
    append(&mut w, &session("bo", "a", &SHARED));
    assert_eq!(w.manifest().layout, Layout::Inline);
    assert_eq!(w.manifest().format_version, memdex_store::FORMAT_VERSION);
    assert!(w.manifest().contents.is_empty());
    drop(w);
    let spec = StoreSpec {
        layout: Some(Layout::Shared),
        ..StoreSpec::new(Granularity::Round)
    };
    let e = StoreWriter::open_or_create_spec(dir, &model(4, "aaaa"), &spec).unwrap_err();
    assert!(e.to_string().contains("inline layout"), "{e}");
    let s = Store::open(dir).unwrap();
    assert_eq!(s.tenant_slices("bo")[0].item(3).key, SHARED[3]);
    // a manifest written before layouts existed reads as inline
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    m.as_object_mut().unwrap().remove("layout");
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    memdex_store::Manifest::reseal(dir).unwrap();
    assert_eq!(Store::open(dir).unwrap().layout(), Layout::Inline);
}

#[test]
fn snapshots_carry_the_content_files() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = writer(tmp.path(), None);
    append(&mut w, &session("ann", "a", &SHARED));
    let out = tmp.path().join("copy");
    memdex_store::snapshot(tmp.path(), &out, &Default::default()).unwrap();
    let s = Store::open(&out).unwrap();
    assert_eq!(s.tenant_slices("ann")[0].item(1).key, SHARED[1]);
}
