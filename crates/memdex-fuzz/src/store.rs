//! The store harnesses: a store folder someone copied, restored or damaged, opened and read
//! whole. A small store of each layout is written once (three tenants, derived terms, events
//! and facts, a deleted item); the input replaces its `manifest.json` or its first segment.
//! A replaced manifest is sealed again (its checksum would refuse nearly every input first).
//! Properties: no panic and no huge allocation; an error names a file of the folder; an
//! opened store reads back every live row with a vector of its dimension; `verify` reads
//! every file without a panic.

use std::path::{Path, PathBuf};

use memdex_core::Granularity;
use memdex_extract::HeuristicFacts;
use memdex_pipeline::derive_item;
use memdex_store::{Layout, Store, StoreSpec, StoreWriter};
use memdex_testkit::{item, model, vectors};

use crate::harness::{check_message, scratch, scratch_folder, Sig};

const DIM: usize = 4;

/// A written store's files: path in the folder, bytes.
type Files = Vec<(PathBuf, Vec<u8>)>;

/// The small store of `layout`, written once and held in memory.
fn template(layout: Layout) -> &'static Files {
    static INLINE: std::sync::OnceLock<Files> = std::sync::OnceLock::new();
    static SHARED: std::sync::OnceLock<Files> = std::sync::OnceLock::new();
    let cell = match layout {
        Layout::Inline => &INLINE,
        Layout::Shared => &SHARED,
    };
    cell.get_or_init(|| write_template(layout))
}

fn write_template(layout: Layout) -> Files {
    let dir = scratch(&format!("store-template-{layout:?}"));
    let _ = std::fs::remove_dir_all(&dir);
    let spec = StoreSpec {
        layout: Some(layout),
        ..StoreSpec::new(Granularity::Turn)
    };
    let mut w = StoreWriter::open_or_create_spec(&dir, &model(DIM, "fuzz"), &spec)
        .expect("create the template store");
    let facts = HeuristicFacts::default();
    let texts = [
        ("ann", "s1", "I adopted a dog named Luna last Friday."),
        ("bob", "s1", "We moved to Lisbon on 3 May 2023."),
        ("ann", "s2", "Luna loves the beach next week."),
        ("cy", "s1", "日本語 😀 tomorrow"),
    ];
    for (batch, chunk) in texts.chunks(2).enumerate() {
        let mut items: Vec<_> = chunk
            .iter()
            .enumerate()
            .map(|(i, (t, s, x))| item(t, s, i as u32, x))
            .collect();
        let derived: Vec<_> = items
            .iter_mut()
            .map(|it| derive_item(it, true, Some(&facts)))
            .collect();
        let v = vectors(items.len() * DIM, batch as u64);
        w.append_derived(&items, &v, &derived)
            .expect("append to the template store");
    }
    w.delete_items(&[1]).expect("delete an item");
    drop(w);
    let mut files = Vec::new();
    collect(&dir, &dir, &mut files);
    let _ = std::fs::remove_dir_all(&dir);
    files
}

fn collect(root: &Path, dir: &Path, out: &mut Files) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read the template store")
        .map(|e| e.expect("an entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(root, &p, out);
        } else if p.file_name().is_some_and(|n| n != "LOCK" && n != "lock") {
            let rel = p
                .strip_prefix(root)
                .expect("inside the store")
                .to_path_buf();
            out.push((rel, std::fs::read(&p).expect("read a store file")));
        }
    }
}

/// The template of `layout` written to a scratch folder with `input` in place of the file
/// at `replaced`; opened and read whole.
fn open_with(layout: Layout, replaced: &Path, input: &[u8], sig: &mut Sig) {
    let files = template(layout).iter().map(|(rel, bytes)| {
        let bytes = if rel == replaced { input } else { bytes };
        (rel.as_path(), bytes)
    });
    let dir = scratch_folder("store", files);
    if replaced == Path::new("manifest.json") {
        // sealed again (when it is JSON), so the input reaches the checks past the checksum
        let _ = memdex_store::Manifest::reseal(&dir);
    }
    match Store::open(&dir) {
        Ok(store) => read_all(&store, sig),
        Err(e) => check_message(&e.to_string(), &dir, sig),
    }
    // a full verification reads every file, damaged ones included, and never panics
    match memdex_store::verify(&dir) {
        Ok(r) => sig.add(("verified", r.damaged)),
        Err(e) => check_message(&e.to_string(), &dir, sig),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every tenant's rows, every column a ranking reads.
fn read_all(store: &Store, sig: &mut Sig) {
    let dim = store.dim();
    let mut rows = 0usize;
    for tenant in store.tenants().keys() {
        for slice in store.tenant_slices(tenant) {
            for i in 0..slice.rows {
                assert_eq!(slice.embedding(i).len(), dim, "row {i} of {tenant}");
                let it = slice.item(i);
                sig.add((it.key.len().min(8), it.position.min(8)));
                let _ = (slice.value(i), slice.session_id(i), slice.facts(i));
                sig.add(slice.terms(i).count() + slice.events(i).count());
                sig.add(slice.neighbors(i).count());
                rows += 1;
            }
            let _ = (slice.positions(), slice.timestamps(), slice.vector_runs());
        }
    }
    assert!(
        rows as u64 <= store.stored_rows(),
        "{rows} rows of {}",
        store.stored_rows()
    );
    sig.add(("opened", rows));
}

/// A store's `manifest.json` (the layout it names picks the template's other files).
pub fn manifest(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    let text = String::from_utf8_lossy(data);
    let layout = if text.contains("\"inline\"") {
        Layout::Inline
    } else {
        Layout::Shared
    };
    open_with(layout, Path::new("manifest.json"), data, &mut sig);
    sig.done()
}

/// A store's first segment file, in a store of each layout.
pub fn segment(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    for layout in [Layout::Inline, Layout::Shared] {
        open_with(layout, first_segment(layout), data, &mut sig);
    }
    sig.done()
}

fn first_segment(layout: Layout) -> &'static Path {
    template(layout)
        .iter()
        .map(|(p, _)| p.as_path())
        .find(|p| p.starts_with("segments") && p.extension().is_some_and(|e| e == "arrow"))
        .expect("the template store has a segment")
}

/// The templates' manifests.
pub fn manifest_seeds() -> Vec<Vec<u8>> {
    [Layout::Inline, Layout::Shared]
        .into_iter()
        .filter_map(|l| {
            let files = template(l);
            files
                .iter()
                .find(|(p, _)| p == Path::new("manifest.json"))
                .map(|(_, b)| b.clone())
        })
        .collect()
}

/// The templates' first segments.
pub fn segment_seeds() -> Vec<Vec<u8>> {
    [Layout::Inline, Layout::Shared]
        .into_iter()
        .filter_map(|l| {
            let first = first_segment(l);
            template(l)
                .iter()
                .find(|(p, _)| p == first)
                .map(|(_, b)| b.clone())
        })
        .collect()
}
