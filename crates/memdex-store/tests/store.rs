//! Store round trips, model checks, crash leftovers, damage detection and pyarrow interop.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use memdex_core::Granularity;
use memdex_store::{Derived, Extraction, Layout, Store, StoreError, StoreSpec, StoreWriter};
use memdex_testkit::{item, model};

fn emb(n: usize, dim: usize, seed: f32) -> Vec<f32> {
    (0..n * dim).map(|i| seed + i as f32 / 100.0).collect()
}

fn writer(dir: &Path, dim: usize) -> Result<StoreWriter, StoreError> {
    StoreWriter::open_or_create(dir, &model(dim, "aaaa"), Granularity::Round, None)
}

#[test]
fn append_then_read_zero_copy_in_tenant_order() {
    for layout in [Layout::Inline, Layout::Shared] {
        append_then_read(layout);
    }
}

fn append_then_read(layout: Layout) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let spec = StoreSpec {
        layout: Some(layout),
        ..StoreSpec::new(Granularity::Round)
    };
    let mut w = StoreWriter::open_or_create_spec(dir, &model(4, "aaaa"), &spec).unwrap();
    let items = vec![
        item("bob", "s1", 0, "b0"),
        item("alice", "s1", 0, "a0"),
        item("bob", "s1", 1, "b1"),
    ];
    let e1 = emb(3, 4, 0.0);
    let r = w.append(&items, &e1).unwrap();
    assert_eq!(r.manifest_version, 2, "creation is version 1");
    let items2 = vec![item("alice", "s2", 0, "a1 ünïcode 東京")];
    w.append(&items2, &emb(1, 4, 9.0)).unwrap();
    drop(w);

    let s = Store::open(dir).unwrap();
    assert_eq!(s.rows(), 4);
    assert_eq!(s.segments().len(), 2);
    let tenants = s.tenants();
    assert_eq!(tenants.get("alice"), Some(&2));
    assert_eq!(tenants.get("bob"), Some(&2));

    let alice = s.tenant_slices("alice");
    assert_eq!(alice.len(), 2);
    let first = alice[0].item(0);
    assert_eq!((first.item_id, first.position, first.key), (1, 0, "a0"));
    assert_eq!(alice[0].embedding(0), &e1[4..8], "rows follow their items");
    assert_eq!(alice[0].value(0), "user: a0");
    let second = alice[1].item(0);
    assert_eq!((second.item_id, second.position), (3, 1));
    assert_eq!(second.key, "a1 ünïcode 東京");
    assert_eq!(second.timestamp_ms, 1_700_000_000_000);

    let bob = s.tenant_slices("bob");
    assert_eq!(bob.len(), 1);
    assert_eq!(bob[0].rows, 2);
    assert_eq!(bob[0].item(1).key, "b1");
    assert_eq!(bob[0].item(1).position, 1);
    // zero-copy: the embedding slice points into the mapping, 64-byte aligned
    assert_eq!(s.segments()[0].embedding(0).as_ptr() as usize % 64, 0);
    assert_eq!(s.layout(), layout);

    let hashes = s.session_hashes();
    assert_eq!(hashes.len(), 3);
}

#[test]
fn refuses_other_model_or_dimension_and_second_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut w = writer(dir, 4).unwrap();
    w.append(&[item("a", "s", 0, "x")], &emb(1, 4, 0.0))
        .unwrap();
    let e = writer(dir, 4).unwrap_err();
    assert!(matches!(e, StoreError::Locked { .. }), "{e}");
    drop(w);

    let e = writer(dir, 8).unwrap_err().to_string();
    assert!(
        e.contains("dimension 4 vs 8") && e.contains(&dir.display().to_string()),
        "{e}"
    );
    let e = StoreWriter::open_or_create(dir, &model(4, "bbbb"), Granularity::Round, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("refusing"), "{e}");
    let e = Store::open_for_model(dir, &model(4, "bbbb")).unwrap_err();
    assert!(matches!(e, StoreError::ModelMismatch { .. }));
    let e = StoreWriter::open_or_create(dir, &model(4, "aaaa"), Granularity::Turn, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("round items"), "{e}");
    // nothing was lost by the refused opens
    assert_eq!(Store::open(dir).unwrap().rows(), 1);
}

#[test]
fn rejects_bad_appends_without_committing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = writer(tmp.path(), 4).unwrap();
    assert!(w
        .append(&[item("a", "s", 0, "x")], &emb(2, 4, 0.0))
        .is_err());
    let mut bad = emb(1, 4, 0.0);
    bad[2] = f32::NAN;
    assert!(w.append(&[item("a", "s", 0, "x")], &bad).is_err());
    assert!(w.append(&[], &[]).is_err());
    drop(w);
    let s = Store::open(tmp.path()).unwrap();
    assert_eq!((s.rows(), s.manifest().version), (0, 1));
}

#[test]
fn a_lock_held_for_a_moment_is_waited_out() {
    // as a child process being started holds the lock's file until it execs
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    drop(writer(dir, 4).unwrap());
    let held = std::fs::File::options()
        .write(true)
        .open(dir.join("LOCK"))
        .unwrap();
    held.lock().unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(40));
        drop(held);
    });
    writer(dir, 4).unwrap();
    release.join().unwrap();
}

#[test]
fn orphan_segments_are_ignored_then_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut w = writer(dir, 4).unwrap();
    w.append(&[item("a", "s", 0, "x")], &emb(1, 4, 0.0))
        .unwrap();
    drop(w);
    // as if a writer crashed after writing a segment but before committing the manifest
    let orphan = dir.join("segments/seg-00000099.arrow");
    std::fs::write(&orphan, b"partial").unwrap();
    std::fs::write(dir.join("segments/seg-00000100.arrow.tmp"), b"partial").unwrap();
    assert_eq!(
        Store::open(dir).unwrap().rows(),
        1,
        "readers see the manifest only"
    );
    let w = writer(dir, 4).unwrap();
    assert!(!orphan.exists());
    let named = w.manifest().files().count();
    assert_eq!(
        std::fs::read_dir(dir.join("segments")).unwrap().count(),
        named
    );
    drop(w);
}

#[test]
fn damaged_segments_and_manifests_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut w = writer(dir, 4).unwrap();
    w.append(&[item("a", "s", 0, "x")], &emb(1, 4, 0.0))
        .unwrap();
    drop(w);
    let m = memdex_store::Manifest::load(dir).unwrap();
    // a damaged content file (shared layout) is named like a segment
    for c in &m.contents {
        let path = dir.join("segments").join(&c.file);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 20]).unwrap();
        let e = Store::open(dir).unwrap_err().to_string();
        assert!(e.contains(&c.file) && e.contains("truncated"), "{e}");
        std::fs::write(&path, &bytes).unwrap();
    }
    let name = &m.segments[0].file;
    let seg = dir.join("segments").join(name);
    let bytes = std::fs::read(&seg).unwrap();
    std::fs::write(&seg, &bytes[..bytes.len() - 20]).unwrap();
    let e = Store::open(dir).unwrap_err().to_string();
    assert!(e.contains(name.as_str()) && e.contains("truncated"), "{e}");
    // same length, garbage footer
    let mut garbled = bytes.clone();
    let n = garbled.len();
    garbled[n - 30..n - 10].fill(0xAB);
    std::fs::write(&seg, &garbled).unwrap();
    assert!(Store::open(dir).is_err());

    std::fs::write(dir.join("manifest.json"), b"{\"format_version\": 1, ").unwrap();
    let e = Store::open(dir).unwrap_err().to_string();
    assert!(e.contains("manifest.json") && e.contains("corrupt"), "{e}");
    std::fs::write(dir.join("manifest.json"), b"{\"format_version\": 7}").unwrap();
    let e = Store::open(dir).unwrap_err().to_string();
    assert!(e.contains("format version 7"), "{e}");
    let e = Store::open(&dir.join("nope")).unwrap_err().to_string();
    assert!(e.contains("no memdex store"), "{e}");
}

/// The segment files are plain Arrow IPC: pyarrow opens them. Skipped (with a notice) when
/// pyarrow is missing, unless MEMDEX_REQUIRE_PYARROW=1 (set by CI), which makes it a failure.
#[test]
fn pyarrow_opens_segments() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let has = std::process::Command::new(&python)
        .args(["-c", "import pyarrow"])
        .status()
        .is_ok_and(|s| s.success());
    if !has {
        assert!(
            std::env::var("MEMDEX_REQUIRE_PYARROW").is_err(),
            "pyarrow required (MEMDEX_REQUIRE_PYARROW set) but `{python} -c 'import pyarrow'` failed"
        );
        eprintln!("SKIPPED pyarrow_opens_segments: pyarrow is not installed for {python}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut w = writer(dir, 4).unwrap();
    w.append(
        &[
            item("bob", "s1", 0, "hello"),
            item("alice", "s9", 3, "Zürich"),
        ],
        &emb(2, 4, 0.5),
    )
    .unwrap();
    drop(w);
    // the default (shared) layout: rows in the segment, their content in the content file,
    // joined on content_ref as any Arrow reader would
    let script = r#"
import sys, json, pyarrow as pa, pyarrow.ipc as ipc
t = ipc.open_file(sys.argv[1]).read_all()
c = ipc.open_file(sys.argv[2]).read_all()
content = dict(zip(c.column("content_ref").to_pylist(), zip(c.column("key").to_pylist(), c.column("embedding").to_pylist())))
rows = [content[r] for r in t.column("content_ref").to_pylist()]
print(json.dumps({
  "rows": t.num_rows,
  "columns": t.column_names,
  "tenant": t.column("tenant").to_pylist(),
  "key": [k for k, _ in rows],
  "emb_type": str(c.schema.field("embedding").type),
  "emb0": rows[0][1],
  "ts_type": str(t.schema.field("timestamp").type),
  "meta": {k.decode(): v.decode() for k, v in (t.schema.metadata or {}).items()},
}))
"#;
    let m = memdex_store::Manifest::load(dir).unwrap();
    let out = std::process::Command::new(&python)
        .args(["-c", script])
        .arg(dir.join("segments").join(&m.segments[0].file))
        .arg(dir.join("segments").join(&m.contents[0].file))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"], 2);
    assert_eq!(v["tenant"], serde_json::json!(["alice", "bob"]));
    assert_eq!(v["key"], serde_json::json!(["Zürich", "hello"]));
    assert_eq!(v["emb_type"], "fixed_size_list<item: float not null>[4]");
    assert_eq!(v["ts_type"], "timestamp[ms, tz=UTC]");
    let e0: Vec<f64> = serde_json::from_value(v["emb0"].clone()).unwrap();
    assert!(
        (e0[0] - 0.54).abs() < 1e-6,
        "alice's row moved with her: {e0:?}"
    );
    assert!(v["meta"]["memdex.model"]
        .as_str()
        .unwrap()
        .contains("test-model"));
    // the inline schema's 17 columns less key, value, terms and embedding, plus content_ref
    assert_eq!(v["columns"].as_array().unwrap().len(), 14);
    assert_eq!(v["columns"][9], "events");
    assert_eq!(v["columns"][10], "facts");
    assert_eq!(v["columns"][13], "content_ref");
}

#[test]
fn readers_refresh_to_new_versions_without_remapping() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut w = writer(dir, 4).unwrap();
    w.append(&[item("a", "s", 0, "x")], &emb(1, 4, 0.0))
        .unwrap();
    let mut reader = Store::open(dir).unwrap();
    let first = reader.segments()[0].embedding(0).as_ptr();
    w.append(&[item("a", "s2", 0, "y")], &emb(1, 4, 1.0))
        .unwrap();
    assert_eq!(reader.rows(), 1, "a reader keeps its version");
    reader.refresh().unwrap();
    assert_eq!(reader.rows(), 2);
    assert_eq!(
        reader.segments()[0].embedding(0).as_ptr(),
        first,
        "old segment kept as mapped"
    );
    assert_eq!(reader.tenant_slices("a").len(), 2);
}

#[test]
fn terms_round_trip_and_must_match_items() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = writer(tmp.path(), 4).unwrap();
    let items = [item("b", "s", 0, "x"), item("a", "s", 0, "y")];
    let terms = vec![vec!["dog".to_string(), "run".into()], vec![]];
    w.append_with_terms(&items, &emb(2, 4, 0.0), &terms)
        .unwrap();
    assert!(w
        .append_with_terms(&items, &emb(2, 4, 0.0), &terms[..1])
        .is_err());
    drop(w);
    let s = Store::open(tmp.path()).unwrap();
    let seg = &s.segments()[0];
    // rows are tenant-sorted: "a" first, and its (empty) terms moved with it
    assert_eq!(seg.terms(0).count(), 0);
    assert_eq!(seg.terms(1).collect::<Vec<_>>(), ["dog", "run"]);
}

#[test]
fn derived_columns_round_trip_and_extraction_is_fixed_per_store() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let on = Extraction {
        events: true,
        facts: Some("heuristic-v1".into()),
        neighbors: 2,
        key_context: 1,
    };
    let mut w =
        StoreWriter::open_or_create_with(dir, &model(4, "aaaa"), Granularity::Round, None, &on)
            .unwrap();
    let items = [item("a", "s", 0, "x"), item("a", "s", 1, "y")];
    let derived = vec![
        Derived {
            terms: vec!["x".into()],
            events: vec![10, 20, 30, 40],
            facts: "fact one".into(),
            neighbors: vec![(1, 0.5)],
            lsh: Vec::new(),
        },
        Derived::default(),
    ];
    w.append_derived(&items, &emb(2, 4, 0.0), &derived).unwrap();
    let odd = vec![
        Derived {
            events: vec![1],
            ..Derived::default()
        };
        2
    ];
    let e = w.append_derived(&items, &emb(2, 4, 0.0), &odd).unwrap_err();
    assert!(e.to_string().contains("pairs"), "{e}");
    drop(w);

    let s = Store::open(dir).unwrap();
    assert_eq!(s.manifest().extraction, on);
    let slice = s.tenant_slices("a")[0];
    assert_eq!(slice.events(0).collect::<Vec<_>>(), [(10, 20), (30, 40)]);
    assert_eq!(slice.events(1).count(), 0);
    assert_eq!(slice.facts(0), "fact one");
    assert_eq!(slice.facts(1), "");
    assert_eq!(slice.neighbors(0).collect::<Vec<_>>(), [(1, 0.5)]);
    assert_eq!(slice.neighbors(1).count(), 0);
    assert_eq!(s.segments()[0].terms(0).collect::<Vec<_>>(), ["x"]);

    // reopening with other extraction settings is refused: one kind of key per store
    let e =
        StoreWriter::open_or_create(dir, &model(4, "aaaa"), Granularity::Round, None).unwrap_err();
    assert!(e.to_string().contains("extraction"), "{e}");
}
