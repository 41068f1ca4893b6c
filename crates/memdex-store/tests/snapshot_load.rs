//! Snapshots taken while a writer appends, deletes and compacts as fast as it can: every copy
//! is exactly one committed version (its manifest and every row of it, vectors bit for bit),
//! opens, checks out against its checksums, and shares the immutable files by hard link.
//!
//! `cargo test --release -p memdex-store --test snapshot_load -- --nocapture` prints the
//! figures (docs/serving.md quotes them).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memdex_core::Granularity;
use memdex_store::{CompactOptions, Manifest, SnapshotOptions, Store, StoreWriter};
use memdex_testkit::{item, model, vectors, SplitMix64};

const DIM: usize = 16;

/// Every live row: tenant → (item id, key, vector bits), in timeline order.
type State = BTreeMap<String, Vec<(u64, String, Vec<u32>)>>;

fn state(store: &Store) -> State {
    let mut out = State::new();
    for tenant in store.tenants().keys() {
        let rows = out.entry(tenant.to_string()).or_default();
        for s in store.tenant_slices(tenant) {
            for r in 0..s.rows {
                let it = s.item(r);
                let v = it.embedding.iter().map(|x| x.to_bits()).collect();
                rows.push((it.item_id, it.key.to_string(), v));
            }
        }
    }
    out
}

/// What the writer did, and the version each commit made.
#[derive(Default)]
struct Log {
    versions: HashMap<u64, (Manifest, State)>,
    appends: u64,
    deletes: u64,
    compactions: u64,
}

fn record(w: &mut StoreWriter, log: &Mutex<Log>) {
    let m = w.manifest().clone();
    let s = state(w.view().unwrap());
    log.lock().unwrap().versions.insert(m.version, (m, s));
}

/// Appends (1–3 rows), deletes (a random live row, every third step) and compactions (every
/// 20th) until `stop`.
fn write_until(mut w: StoreWriter, log: Arc<Mutex<Log>>, stop: Arc<AtomicBool>) {
    let mut rng = SplitMix64::new(7);
    let mut i = 0u32;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let n = 1 + rng.below(3);
        let items: Vec<_> = (0..n)
            .map(|k| {
                item(
                    &format!("t{}", i % 5),
                    &format!("s{i}"),
                    k as u32,
                    &format!("text {i} {k}"),
                )
            })
            .collect();
        w.append(&items, &vectors(n * DIM, u64::from(i))).unwrap();
        log.lock().unwrap().appends += 1;
        record(&mut w, &log);
        if i.is_multiple_of(3) {
            let live: Vec<u64> = (state(w.view().unwrap()).values().flatten())
                .map(|r| r.0)
                .collect();
            let id = live[rng.below(live.len())];
            w.delete_items(&[id]).unwrap();
            log.lock().unwrap().deletes += 1;
            record(&mut w, &log);
        }
        if i.is_multiple_of(20) {
            w.compact(&CompactOptions::default()).unwrap();
            log.lock().unwrap().compactions += 1;
            record(&mut w, &log);
        }
    }
}

/// Snapshots of `dir` taken back to back for 4 s (at least 20): each copy's version,
/// manifest and rows, and what the snapshots did.
#[derive(Default)]
struct Copies {
    copies: Vec<(u64, Manifest, State)>,
    took: Vec<Duration>,
    linked: usize,
    copied: usize,
    restarts: usize,
}

fn snapshot_for_a_while(dir: &Path, tmp: &Path) -> Copies {
    let mut c = Copies::default();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(4) || c.copies.len() < 20 {
        let out = tmp.join(format!("copy{}", c.copies.len()));
        let t = Instant::now();
        let r = memdex_store::snapshot(dir, &out, &SnapshotOptions::default()).unwrap();
        c.took.push(t.elapsed());
        (c.linked, c.copied, c.restarts) = (
            c.linked + r.linked,
            c.copied + r.copied,
            c.restarts + r.restarts,
        );
        assert_eq!(
            r.verified, r.files,
            "every file of the copy checked against its checksum"
        );
        let s = Store::open(&out).unwrap();
        assert!(memdex_store::verify(&out).unwrap().is_sound());
        c.copies
            .push((r.manifest_version, Manifest::load(&out).unwrap(), state(&s)));
    }
    c
}

#[test]
fn every_snapshot_under_load_is_exactly_one_version() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("live");
    let mut w =
        StoreWriter::open_or_create(&dir, &model(DIM, "aaaa"), Granularity::Round, None).unwrap();
    w.append(&[item("t0", "s0", 0, "first")], &vectors(DIM, 0))
        .unwrap();
    let log = Arc::new(Mutex::new(Log::default()));
    record(&mut w, &log);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (log, stop) = (log.clone(), stop.clone());
        std::thread::spawn(move || write_until(w, log, stop))
    };
    let start = Instant::now();
    let mut c = snapshot_for_a_while(&dir, tmp.path());
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let log = log.lock().unwrap();
    let mut distinct = std::collections::BTreeSet::new();
    for (v, manifest, st) in &c.copies {
        let (want_m, want_s) = log
            .versions
            .get(v)
            .expect("the copy's version was committed");
        assert_eq!(
            manifest, want_m,
            "version {v}: the copy's manifest is the version's"
        );
        assert!(
            st == want_s,
            "version {v}: the copy's rows are the version's"
        );
        distinct.insert(*v);
    }
    assert!(c.linked > 0, "immutable files are shared by hard link");
    c.took.sort();
    eprintln!(
        "snapshot under load: {} snapshots ({} distinct versions of the {} committed: {} \
         appends, {} deletes, {} compactions) in {:.1} s, each equal to its version (manifest \
         and every row, vectors bit for bit) and verified; files linked {}, copied {}; \
         restarts after a compaction {}; time per snapshot p50 {:?}, max {:?}",
        c.copies.len(),
        distinct.len(),
        log.versions.len(),
        log.appends,
        log.deletes,
        log.compactions,
        start.elapsed().as_secs_f64(),
        c.linked,
        c.copied,
        c.restarts,
        c.took[c.took.len() / 2],
        c.took[c.took.len() - 1],
    );
    assert!(distinct.len() > 1, "the copies span several versions");
}

#[test]
fn a_snapshot_needs_an_empty_directory_and_copy_mode_links_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("live");
    let mut w =
        StoreWriter::open_or_create(&dir, &model(DIM, "aaaa"), Granularity::Round, None).unwrap();
    w.append(&[item("a", "s", 0, "x")], &vectors(DIM, 1))
        .unwrap();
    let out = tmp.path().join("copy");
    let copy = SnapshotOptions { copy: true };
    let r = memdex_store::snapshot(&dir, &out, &copy).unwrap();
    assert_eq!((r.linked, r.copied), (0, r.files));
    assert_eq!(r.bytes_copied, r.bytes);
    let e = memdex_store::snapshot(&dir, &out, &copy).unwrap_err();
    assert!(matches!(e, memdex_store::StoreError::Exists { .. }), "{e}");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(memdex_store::snapshot(&dir, &empty, &SnapshotOptions::default()).is_ok());
    assert_eq!(Store::open(&empty).unwrap().rows(), 1);
    // hard links: the same file, no bytes copied
    let r = memdex_store::snapshot(&dir, &tmp.path().join("l"), &Default::default()).unwrap();
    assert_eq!((r.linked, r.bytes_copied), (r.files, 0));
    same_inode(&dir, &tmp.path().join("l"), &Manifest::load(&dir).unwrap());
}

#[cfg(unix)]
fn same_inode(a: &Path, b: &Path, m: &Manifest) {
    use std::os::unix::fs::MetadataExt;
    for (f, ..) in m.all_files() {
        let ino = |d: &Path| std::fs::metadata(d.join(&f)).unwrap().ino();
        assert_eq!(ino(a), ino(b), "{f}");
    }
}

#[cfg(not(unix))]
fn same_inode(_: &Path, _: &Path, _: &Manifest) {}
