//! The word table: committed word files read back (first file wins for a term), seen by a
//! refreshed view, carried by compaction and snapshots, refused when the manifest lies.

use memdex_core::Granularity;
use memdex_store::{snapshot, CompactOptions, Store, StoreError, StoreWriter};
use memdex_testkit::{item, model};

fn words(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(t, w)| (t.to_string(), w.to_string()))
        .collect()
}

#[test]
fn word_vectors_are_committed_read_back_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open_or_create(dir.path(), &model(2, "aaaa"), Granularity::Turn, None)
        .unwrap();
    let mut view = Store::open(dir.path()).unwrap();
    assert!(view.words().is_empty());

    w.append_words(
        &words(&[("hike", "hiking"), ("lake", "lake")]),
        &[1.0, 0.0, 0.0, 1.0],
    )
    .unwrap();
    // a term again in a later file: the first vector stays
    w.append_words(
        &words(&[("surf", "surfing"), ("hike", "hikes")]),
        &[0.6, 0.8, -1.0, 0.0],
    )
    .unwrap();
    let rows = [
        item("t", "s1", 0, "we went hiking"),
        item("t", "s2", 0, "a lake"),
    ];
    let terms = vec![
        vec!["went".to_string(), "hike".to_string()],
        vec!["lake".to_string()],
    ];
    w.append_with_terms(&rows, &[1.0, 0.0, 0.0, 1.0], &terms)
        .unwrap();
    // nothing to add: no new version
    let version = w.manifest().version;
    w.append_words(&[], &[]).unwrap();
    assert_eq!(w.manifest().version, version);
    // vectors that do not match the words are refused, naming the counts
    let e = w.append_words(&words(&[("x", "x")]), &[1.0]).unwrap_err();
    assert!(
        e.to_string().contains("1 word vectors' values for 1 words"),
        "{e}"
    );

    view.refresh().unwrap();
    for store in [view, Store::open(dir.path()).unwrap()] {
        let t = store.words();
        assert_eq!(t.len(), 3);
        assert_eq!(t.get("hike"), Some(("hiking", &[1.0f32, 0.0][..])));
        assert_eq!(t.get("surf"), Some(("surfing", &[0.6f32, 0.8][..])));
        assert!(t.get("nothing").is_none());
        assert_eq!(t.vector_at(t.locate("lake").unwrap()), &[0.0, 1.0]);
    }

    // a snapshot copies the word files
    let out = tempfile::tempdir().unwrap();
    let copy = out.path().join("copy");
    snapshot(dir.path(), &copy, &Default::default()).unwrap();
    assert_eq!(Store::open(&copy).unwrap().words().len(), 3);

    // forgetting the hiking row and compacting takes the terms no row uses off the disk
    w.delete_items(&[0]).unwrap();
    let report = w.compact(&CompactOptions::default()).unwrap();
    assert_eq!(report.words_removed, 2, "{report:?}");
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.words().len(), 1);
    assert_eq!(store.words().get("lake").unwrap().1, &[0.0, 1.0]);
    let on_disk = memdex_testkit::segment_bytes(dir.path());
    assert!(
        !memdex_testkit::contains(&on_disk, "hiking"),
        "a forgotten word is on disk"
    );
    assert!(!memdex_testkit::contains(&on_disk, "surfing"));
    assert!(memdex_testkit::contains(&on_disk, "lake"));
    // the last row forgotten: no word file at all
    w.delete_items(&[1]).unwrap();
    w.compact(&CompactOptions::default()).unwrap();
    assert!(Store::open(dir.path()).unwrap().words().is_empty());
    assert!(w.manifest().words.is_empty());
}

#[test]
fn a_manifest_naming_a_bad_word_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open_or_create(dir.path(), &model(2, "aaaa"), Granularity::Turn, None)
        .unwrap();
    w.append_words(&words(&[("hike", "hiking")]), &[1.0, 0.0])
        .unwrap();
    drop(w);
    let path = dir.path().join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("wrd-", "../wrd-")).unwrap();
    memdex_store::Manifest::reseal(dir.path()).unwrap();
    let e = Store::open(dir.path()).unwrap_err();
    assert!(matches!(e, StoreError::Manifest { .. }), "{e}");
    assert!(e.to_string().contains("wrd-<digits>.arrow"), "{e}");
}
