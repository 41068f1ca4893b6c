//! Checksums are recorded when files are sealed; stores written before them still open and
//! get them at their first compaction; `restore` puts a store back from a snapshot, whole or
//! only its damaged files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use memdex_core::Granularity;
use memdex_store::{
    CompactOptions, FileStatus, Manifest, RestoreOptions, Store, StoreWriter, Verdict,
};
use memdex_testkit::{flip_byte, item, model, vectors, SplitMix64};

fn writer(dir: &Path) -> StoreWriter {
    StoreWriter::open_or_create(dir, &model(4, "aaaa"), Granularity::Round, None).unwrap()
}

fn fill(dir: &Path) {
    let mut w = writer(dir);
    w.append(
        &[item("a", "s1", 0, "one"), item("b", "s1", 0, "two")],
        &vectors(8, 1),
    )
    .unwrap();
    w.append(&[item("a", "s2", 0, "three")], &vectors(4, 2))
        .unwrap();
    w.append_words(&[("one".into(), "one".into())], &vectors(4, 3))
        .unwrap();
}

/// The manifest as a store written before checksums has it: no checksum anywhere.
fn strip_checksums(dir: &Path) {
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                o.remove("checksum");
                o.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut m);
    std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

#[test]
fn every_file_gets_a_checksum_when_sealed() {
    let tmp = tempfile::tempdir().unwrap();
    fill(tmp.path());
    let m = Manifest::load(tmp.path()).unwrap();
    let files = m.all_files();
    assert!(
        files.len() >= 4 && files.iter().all(|(_, _, c)| c.is_some()),
        "{files:?}"
    );
    let text = std::fs::read_to_string(tmp.path().join("manifest.json")).unwrap();
    assert!(text.trim_end().ends_with('}') && text.contains("\n  \"checksum\": \"xxh3:"));
    let r = memdex_store::verify(tmp.path()).unwrap();
    assert!(r.is_sound() && r.unrecorded == 0, "{r:#?}");
    assert_eq!(r.verified, files.len() + 1, "every file and the manifest");
    let s = Store::open(tmp.path()).unwrap();
    assert!(s.verify_files().iter().all(|(_, v)| *v == Verdict::Intact));
}

#[test]
fn a_store_written_before_checksums_opens_and_gets_them_at_compaction() {
    let tmp = tempfile::tempdir().unwrap();
    fill(tmp.path());
    strip_checksums(tmp.path());
    let s = Store::open(tmp.path()).unwrap();
    assert_eq!(s.rows(), 3);
    assert!(s
        .verify_files()
        .iter()
        .all(|(_, v)| *v == Verdict::Unrecorded));
    let r = memdex_store::verify(tmp.path()).unwrap();
    assert!(r.is_sound(), "no checksum recorded is not damage: {r:#?}");
    assert!(
        r.files.iter().all(|f| f.status == FileStatus::NoChecksum),
        "{r:#?}"
    );
    // nothing small to merge: the files stay and get their checksums in a new manifest
    let mut w = writer(tmp.path());
    let opts = CompactOptions {
        small_rows: 0,
        ..CompactOptions::default()
    };
    let report = w.compact(&opts).unwrap();
    assert!(report.checksums_recorded >= 3, "{report:?}");
    assert_eq!(report.segments_rewritten, 0, "{report:?}");
    drop(w);
    let r = memdex_store::verify(tmp.path()).unwrap();
    assert!(r.is_sound() && r.unrecorded == 0, "{r:#?}");
    // and a compaction with nothing to do and nothing to record commits nothing
    let v = Manifest::load(tmp.path()).unwrap().version;
    writer(tmp.path()).compact(&opts).unwrap();
    assert_eq!(Manifest::load(tmp.path()).unwrap().version, v);
}

#[test]
fn a_damaged_manifest_seal_is_not_taken_for_an_old_store() {
    let tmp = tempfile::tempdir().unwrap();
    fill(tmp.path());
    let path = tmp.path().join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\n  \"checksum\"", "\n  \"checksun\"")).unwrap();
    let e = Store::open(tmp.path()).unwrap_err().to_string();
    assert!(
        e.contains("manifest.json") && e.contains("not its own"),
        "{e}"
    );
    let r = memdex_store::verify(tmp.path()).unwrap();
    assert_eq!(r.damaged, 1);
    assert_eq!(r.files[0].file, "manifest.json");
}

#[test]
fn restore_replaces_the_store_or_repairs_only_its_damaged_files() {
    let tmp = tempfile::tempdir().unwrap();
    let live = tmp.path().join("live");
    fill(&live);
    let snap = tmp.path().join("snap");
    memdex_store::snapshot(&live, &snap, &memdex_store::SnapshotOptions { copy: true }).unwrap();
    let mut w = writer(&live);
    w.append(&[item("c", "s9", 0, "after the snapshot")], &vectors(4, 9))
        .unwrap();
    drop(w);
    // damage a file the snapshot holds too
    let m = Manifest::load(&live).unwrap();
    let first = m.all_files()[0].0.clone();
    flip_byte(&live.join(&first), &mut SplitMix64::new(3));
    assert!(!memdex_store::verify(&live).unwrap().is_sound());

    let repaired = memdex_store::restore(&snap, &live, &RestoreOptions { repair: true }).unwrap();
    assert_eq!(repaired.copied, std::slice::from_ref(&first));
    assert!(memdex_store::verify(&live).unwrap().is_sound());
    let s = Store::open(&live).unwrap();
    assert_eq!(s.rows(), 4, "nothing written after the snapshot was lost");
    assert_eq!(s.manifest().version, m.version);

    let replaced = memdex_store::restore(&snap, &live, &RestoreOptions::default()).unwrap();
    let s = Store::open(&live).unwrap();
    assert_eq!(s.rows(), 3, "the snapshot's version");
    assert!(
        replaced.manifest_version > m.version,
        "versions only move forward"
    );
    assert!(
        replaced.removed >= 1,
        "the file written after the snapshot went"
    );
    assert!(s.manifest().next_segment_id() > m.next_segment_id() - 1);
    // a damaged snapshot is refused before anything is touched
    flip_byte(&snap.join(&first), &mut SplitMix64::new(4));
    let e = memdex_store::restore(&snap, &live, &RestoreOptions::default()).unwrap_err();
    assert!(e.to_string().contains("snapshot"), "{e}");
    assert!(memdex_store::verify(&live).unwrap().is_sound());
}
