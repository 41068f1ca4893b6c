//! Deletion tombstones and compaction: deleted text leaves the disk, ids stay unique, every
//! column and the tenants' timeline order survive, old manifests stay readable.

#![allow(clippy::unwrap_used)]

use memdex_core::Granularity;
use memdex_store::{CompactOptions, Layout, Manifest, Store, StoreSpec, StoreWriter};
use memdex_testkit::{contains, item, model, segment_bytes};

#[test]
fn compaction_removes_deleted_text_from_disk_and_merges_segments() {
    for layout in [Layout::Inline, Layout::Shared] {
        compaction_removes_deleted_text(layout);
    }
}

fn compaction_removes_deleted_text(layout: Layout) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let spec = StoreSpec {
        layout: Some(layout),
        ..StoreSpec::new(Granularity::Round)
    };
    let mut w = StoreWriter::open_or_create_spec(dir, &model(4, "aaaa"), &spec).unwrap();
    let terms = |n: usize| vec![vec!["term".to_string()]; n];
    w.append_with_terms(
        &[
            item("bob", "s1", 0, "bob likes jazz"),
            item("alice", "s1", 0, "alice secret-zebra"),
        ],
        &[0.5; 8],
        &terms(2),
    )
    .unwrap();
    w.append_with_terms(
        &[item("alice", "s2", 0, "alice keeps this")],
        &[0.25; 4],
        &terms(1),
    )
    .unwrap();
    w.append_with_terms(
        &[item("bob", "s2", 0, "bob second")],
        &[0.125; 4],
        &terms(1),
    )
    .unwrap();
    let store = Store::open(dir).unwrap();
    let secret = store
        .segments()
        .iter()
        .flat_map(|s| (0..s.rows()).map(move |r| s.item(r)))
        .find(|it| it.key.contains("secret-zebra"))
        .unwrap()
        .item_id;
    let max_id = store.manifest().next_item_id() - 1;
    drop(store);

    let v = w.delete_items(&[secret, max_id]).unwrap();
    assert_eq!(Manifest::load(dir).unwrap().deleted, vec![secret, max_id]);
    assert_eq!(
        w.delete_items(&[secret]).unwrap(),
        v,
        "no-op delete commits nothing"
    );
    assert!(
        contains(&segment_bytes(dir), "secret-zebra"),
        "tombstone only"
    );

    let report = w.compact(&CompactOptions::default()).unwrap();
    assert_eq!(report.segments_before, 3);
    assert_eq!(report.segments_after, 1, "small segments merged");
    assert_eq!(report.rows_removed, 2);
    let bytes = segment_bytes(dir);
    assert!(
        !contains(&bytes, "secret-zebra"),
        "deleted text still on disk"
    );
    assert!(!contains(&bytes, "bob second"));
    assert!(contains(&bytes, "alice keeps this"));
    // one segment, and in the shared layout its one (merged) content file
    let files = std::fs::read_dir(dir.join("segments")).unwrap().count();
    assert_eq!(files, 1 + usize::from(layout == Layout::Shared));
    if layout == Layout::Shared {
        assert_eq!(report.contents_removed, 2, "the deleted rows' contents");
    }

    let store = Store::open(dir).unwrap();
    assert!(store.manifest().deleted.is_empty());
    assert_eq!(store.rows(), 2);
    let alice = store.tenant_slices("alice");
    assert_eq!(alice.len(), 1);
    assert_eq!(alice[0].key(0), "alice keeps this");
    assert_eq!(
        alice[0].terms(0).collect::<Vec<_>>(),
        vec!["term"],
        "columns carried"
    );
    assert_eq!(alice[0].embedding(0), &[0.25; 4]);
    let bob = store.tenant_slices("bob");
    assert_eq!(bob[0].key(0), "bob likes jazz");
    // ids are never reused, even though the newest row was removed
    drop(store);
    w.append(&[item("bob", "s3", 0, "bob third")], &[1.0; 4])
        .unwrap();
    let store = Store::open(dir).unwrap();
    let last = store.segments().last().unwrap();
    assert!(last.item_ids()[0] > max_id);
    assert!(last.positions()[0] > 1, "positions keep growing");
}

#[test]
fn compaction_keeps_timeline_order_and_skips_large_clean_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut w =
        StoreWriter::open_or_create(dir, &model(4, "aaaa"), Granularity::Round, None).unwrap();
    for i in 0..4u32 {
        w.append(
            &[item("t", &format!("s{i}"), 0, &format!("text {i}"))],
            &[i as f32; 4],
        )
        .unwrap();
    }
    let opts = CompactOptions {
        small_rows: 2,
        max_rows: 2,
    };
    let r = w.compact(&opts).unwrap();
    assert_eq!((r.segments_before, r.segments_after), (4, 2));
    let store = Store::open(dir).unwrap();
    let keys: Vec<String> = store
        .tenant_slices("t")
        .iter()
        .flat_map(|s| (0..s.rows).map(move |r| s.key(r).to_string()))
        .collect();
    assert_eq!(keys, ["text 0", "text 1", "text 2", "text 3"]);
    let r = w
        .compact(&CompactOptions {
            small_rows: 1,
            max_rows: 8,
        })
        .unwrap();
    assert_eq!(r.segments_rewritten, 0, "nothing small or deleted");
}

#[test]
fn snapshot_while_writing_and_compacting_always_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("live");
    let mut w =
        StoreWriter::open_or_create(&dir, &model(4, "aaaa"), Granularity::Round, None).unwrap();
    w.append(&[item("t", "s0", 0, "first")], &[0.5; 4]).unwrap();
    let d2 = dir.clone();
    let writer = std::thread::spawn(move || {
        for i in 1..60u32 {
            w.append(
                &[item("t", &format!("s{i}"), 0, &format!("text {i}"))],
                &[0.5; 4],
            )
            .unwrap();
            if i % 5 == 0 {
                let id = Store::open(&d2).unwrap().manifest().next_item_id() - 1;
                w.delete_items(&[id]).unwrap();
                w.compact(&CompactOptions::default()).unwrap();
            }
        }
    });
    let mut copies = 0;
    while !writer.is_finished() || copies < 3 {
        let out = tmp.path().join(format!("copy{copies}"));
        let v = memdex_store::snapshot(&dir, &out, &Default::default())
            .unwrap()
            .manifest_version;
        let s = Store::open(&out).unwrap();
        assert_eq!(s.manifest().version, v);
        assert!(s.rows() >= 1);
        copies += 1;
    }
    writer.join().unwrap();
    assert!(
        memdex_store::snapshot(&dir, &tmp.path().join("copy0"), &Default::default()).is_err(),
        "no overwrite"
    );
}

#[test]
fn segments_before_and_after_lsh_are_compacted_separately() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut w =
        StoreWriter::open_or_create(dir, &model(4, "aaaa"), Granularity::Round, None).unwrap();
    w.append(&[item("a", "s1", 0, "one")], &[0.5; 4]).unwrap();
    w.append(&[item("a", "s2", 1, "two")], &[0.5; 4]).unwrap();
    w.enable_lsh(memdex_store::LshMeta {
        seed: 7,
        buckets: 4,
        tables: 1,
        dim: 4,
    })
    .unwrap();
    w.append_with_lsh(&[item("a", "s3", 2, "three")], &[0.5; 4], &[vec![]], &[1])
        .unwrap();
    w.append_with_lsh(&[item("a", "s4", 3, "four")], &[0.5; 4], &[vec![]], &[2])
        .unwrap();
    let report = w.compact(&CompactOptions::default()).unwrap();
    assert_eq!((report.segments_before, report.segments_after), (4, 2));
    drop(w);
    let s = Store::open(dir).unwrap();
    let with: Vec<bool> = s
        .segments()
        .iter()
        .map(|g| g.lsh_buckets().is_some())
        .collect();
    assert_eq!(with, [false, true]);
    assert_eq!(s.segments()[1].lsh_buckets().unwrap().0, [1, 2]);
}

/// A compaction that would not fit on the disk is refused before it writes anything: a
/// `NoSpace` error naming the store, the store as it was. Needs a small tmpfs (root).
#[test]
fn compaction_without_room_for_twice_its_rewrite_is_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        if std::env::var("MEMDEX_REQUIRE_TMPFS").as_deref() == Ok("1") {
            panic!("MEMDEX_REQUIRE_TMPFS=1 but tmpfs cannot be mounted here");
        }
        eprintln!("skipping the free-space test: cannot mount a tmpfs");
        return;
    }
    struct Unmount<'a>(&'a std::path::Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _guard = Unmount(&mnt);
    let dir = mnt.join("store");
    let mut w =
        StoreWriter::open_or_create(&dir, &model(4, "aaaa"), Granularity::Round, None).unwrap();
    for i in 0..8u32 {
        let text = format!("text {i} {}", "x".repeat(2000));
        w.append(&[item("t", &format!("s{i}"), 0, &text)], &[i as f32; 4])
            .unwrap();
    }
    let reads = w.manifest().bytes();
    // fill the disk, then free a little less than twice what the merge of all 8 reads
    let filler = mnt.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0u8; 4096];
    while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
    let len = f.metadata().unwrap().len();
    f.set_len(len - reads - reads / 2).unwrap();
    drop(f);
    let files = |d: &std::path::Path| std::fs::read_dir(d.join("segments")).unwrap().count();
    let before = (files(&dir), w.manifest().version);

    let e = w.compact(&CompactOptions::default()).unwrap_err();
    assert!(e.is_disk_full(), "{e}");
    let msg = e.to_string();
    assert!(msg.contains(&dir.display().to_string()), "{msg}");
    assert!(msg.contains(&format!("{reads} bytes it rewrites")), "{msg}");
    assert_eq!((files(&dir), w.manifest().version), before);
    assert_eq!(Store::open(&dir).unwrap().rows(), 8);

    std::fs::remove_file(&filler).unwrap();
    let r = w.compact(&CompactOptions::default()).unwrap();
    assert_eq!((r.segments_before, r.segments_after), (8, 1));
}
