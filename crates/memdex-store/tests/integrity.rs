//! The store owns deletion and refuses to be lied to: every reader API sees live rows only;
//! segment ids are never reused; compaction's commit is the writer's state at once; a manifest
//! whose entries disagree with the files (or with themselves) is refused by name; a reader
//! opening while compaction unlinks files retries.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use memdex_core::Granularity;
use memdex_store::{CompactOptions, Manifest, Store, StoreWriter};
use memdex_testkit::{item, model, vectors};

fn writer(dir: &Path) -> StoreWriter {
    StoreWriter::open_or_create(dir, &model(4, "aaaa"), Granularity::Round, None).unwrap()
}

#[test]
fn every_reader_api_sees_live_rows_only() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = writer(tmp.path());
    let items = [
        item("a", "s1", 0, "one"),
        item("a", "s1", 1, "two"),
        item("a", "s2", 0, "three"),
        item("b", "s1", 0, "four"),
    ];
    w.append(&items, &vectors(16, 1)).unwrap();
    w.append(&[item("b", "s2", 0, "five")], &vectors(4, 2))
        .unwrap();
    let ids: Vec<u64> = (0..5).collect();
    // delete the middle row of tenant a and the whole of tenant b's second segment
    w.delete_items(&[ids[1], ids[4]]).unwrap();
    let s = Store::open(tmp.path()).unwrap();
    assert_eq!((s.rows(), s.stored_rows()), (3, 5));
    let a = s.tenant_slices("a");
    assert_eq!(
        a.iter()
            .map(|x| (x.index, x.start, x.rows))
            .collect::<Vec<_>>(),
        [(0, 0, 1), (0, 2, 1)],
        "a's range split around the deleted row"
    );
    let keys: Vec<&str> = a.iter().map(|x| x.key(0)).collect();
    assert_eq!(keys, ["one", "three"]);
    assert_eq!(s.tenants().get("a"), Some(&2));
    assert_eq!(s.tenants().get("b"), Some(&1));
    assert!(!s.is_alive(0, 1) && s.is_alive(0, 0) && !s.is_alive(1, 0));
    let hashes = s.session_hashes();
    assert!(
        hashes.contains_key(&("a".into(), "s1".into())),
        "s1 keeps one live item"
    );
    assert!(
        !hashes.contains_key(&("b".into(), "s2".into())),
        "a wholly deleted session is absent"
    );
    // a tenant whose rows are all deleted is no tenant at all
    w.delete_items(&[ids[3]]).unwrap();
    let s = Store::open(tmp.path()).unwrap();
    assert!(s.tenant_slices("b").is_empty() && !s.tenants().contains_key("b"));
}

#[test]
fn segment_ids_are_never_reused_and_compaction_state_is_committed_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = writer(tmp.path());
    w.append(&[item("a", "s", 0, "keep")], &vectors(4, 1))
        .unwrap();
    let tail = w
        .append(&[item("b", "s", 0, "gone")], &vectors(4, 2))
        .unwrap();
    // every id issued so far (segments, and content files in the shared layout)
    let issued = max_id(w.manifest());
    assert!(tail.segment.id <= issued);
    w.delete_items(&[1]).unwrap();
    // the tail segment loses its only row: it leaves the manifest without a replacement
    let opts = CompactOptions {
        small_rows: 0,
        max_rows: 1 << 20,
    };
    let r = w.compact(&opts).unwrap();
    assert_eq!(r.rows_removed, 1);
    assert_eq!(
        w.manifest(),
        &Manifest::load(tmp.path()).unwrap(),
        "in memory = on disk"
    );
    let next = w
        .append(&[item("c", "s", 0, "new")], &vectors(4, 3))
        .unwrap();
    assert!(
        next.segment.id > issued,
        "retired ids are never taken again"
    );
    let before_restart = max_id(w.manifest()).max(next.segment.id);
    drop(w);
    let mut w = writer(tmp.path());
    let after_reopen = w
        .append(&[item("c", "s", 1, "later")], &vectors(4, 4))
        .unwrap();
    assert!(
        after_reopen.segment.id > before_restart,
        "the counter survives a restart"
    );
}

/// The highest segment or content file id a manifest names.
fn max_id(m: &Manifest) -> u64 {
    (m.segments.iter().map(|s| s.id))
        .chain(m.contents.iter().map(|c| c.id))
        .max()
        .unwrap_or(0)
}

/// Rewrites the manifest with `edit` applied to its JSON.
fn lie(dir: &Path, edit: impl Fn(&mut serde_json::Value)) {
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut m);
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    Manifest::reseal(dir).unwrap();
}

#[test]
fn a_lying_manifest_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = writer(tmp.path());
    let items = [
        item("a", "s", 0, "x"),
        item("a", "s", 1, "y"),
        item("b", "s", 0, "z"),
    ];
    w.append(&items, &vectors(12, 1)).unwrap();
    drop(w);
    let good = std::fs::read(tmp.path().join("manifest.json")).unwrap();
    type Edit = fn(&mut serde_json::Value);
    let cases: [(Edit, &str); 7] = [
        (
            |m| m["segments"][0]["file"] = "../../etc/passwd".into(),
            "seg-<digits>.arrow",
        ),
        (
            |m| m["segments"][0]["tenants"][0]["rows"] = 3.into(),
            "tile the rows",
        ),
        (
            |m| m["segments"][0]["tenants"][1]["start"] = 1.into(),
            "tile the rows",
        ),
        (
            |m| m["segments"][0]["tenants"][0]["tenant"] = "b".into(),
            "belongs to tenant",
        ),
        (|m| m["segments"][0]["max_item_id"] = 7.into(), "item ids"),
        (
            |m| m["segments"][0]["tenants"][0]["max_position"] = 5.into(),
            "positions",
        ),
        (
            |m| m["deleted"] = serde_json::json!([2, 1]),
            "not ascending",
        ),
    ];
    for (edit, want) in cases {
        std::fs::write(tmp.path().join("manifest.json"), &good).unwrap();
        lie(tmp.path(), edit);
        let e = Store::open(tmp.path()).unwrap_err().to_string();
        assert!(e.contains(want), "{want}: {e}");
    }
    std::fs::write(tmp.path().join("manifest.json"), &good).unwrap();
    assert_eq!(Store::open(tmp.path()).unwrap().rows(), 3);
}

#[test]
fn open_retries_when_compaction_unlinks_a_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = writer(tmp.path());
    for i in 0..3 {
        w.append(&[item("a", "s", i, "t")], &vectors(4, u64::from(i)))
            .unwrap();
    }
    let stale = Manifest::load(tmp.path()).unwrap();
    let opts = CompactOptions {
        small_rows: 10,
        max_rows: 1 << 20,
    };
    w.compact(&opts).unwrap();
    // a reader that read the old manifest finds its files gone: it starts over
    let s = Store::open_from(tmp.path(), stale).unwrap();
    assert_eq!(s.rows(), 3);
    assert_eq!(s.segments().len(), 1, "the compacted version");
}
