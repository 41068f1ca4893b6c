//! Bit rot in every kind of store file, at seeded random offsets: `verify` names the file,
//! searches never see a row of it (and every row they see is exactly as written), the
//! structures and the word table refuse or leave out what is damaged, compaction refuses
//! before it writes anything, and nothing panics. Files above `SMALL_FILE_BYTES` are checked
//! lazily: opening does not notice, the first read of their rows does.
//!
//! `cargo test --release -p memdex-store --test damage -- --nocapture` prints what happened
//! per kind of file (docs/serving.md "Damage" quotes it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use memdex_core::Granularity;
use memdex_store::{
    CompactOptions, FileStatus, Layout, Store, StoreSpec, StoreWriter, Structures, ThoughtOp,
    ThoughtRow, TreeRow,
};
use memdex_testkit::{flip_byte, item, model, vectors, SplitMix64};

const DIM: usize = 64;
const SEEDS: u64 = 32;

/// One row as written: tenant, key, vector bits, the files holding it.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    tenant: String,
    key: String,
    vector: Vec<u32>,
    files: Vec<String>,
}

/// A store of both sizes of file and every kind, and what it holds.
struct Pristine {
    dir: PathBuf,
    rows: BTreeMap<u64, Row>,
    words: usize,
}

fn spec(layout: Layout) -> StoreSpec {
    StoreSpec {
        layout: Some(layout),
        ..StoreSpec::new(Granularity::Round)
    }
}

/// Three small tenants in one append, a large one (its files above `SMALL_FILE_BYTES`) in
/// another, a word file, thought and tree files, one deleted row.
fn build(dir: &Path, layout: Layout) -> Pristine {
    let m = model(DIM, "aaaa");
    let mut w = StoreWriter::open_or_create_spec(dir, &m, &spec(layout)).unwrap();
    let small: Vec<_> = ["ann", "bob", "cy"]
        .iter()
        .flat_map(|t| {
            (0..8u32).map(move |i| item(t, &format!("s{}", i / 3), i, &format!("{t} note {i}")))
        })
        .collect();
    w.append(&small, &vectors(small.len() * DIM, 1)).unwrap();
    let big: Vec<_> = (0..4500u32)
        .map(|i| {
            item(
                "dee",
                &format!("d{}", i / 10),
                i,
                &format!("dee fact number {i}"),
            )
        })
        .collect();
    w.append(&big, &vectors(big.len() * DIM, 2)).unwrap();
    let words: Vec<(String, String)> = (0..40)
        .map(|i| (format!("t{i}"), format!("word{i}")))
        .collect();
    w.append_words(&words, &vectors(words.len() * DIM, 3))
        .unwrap();
    w.enable_structures(
        Some(memdex_store::ThoughtsConfig {
            extractor: "rules-v1".into(),
            buckets: 4,
            tables: 1,
            seed: 1,
            merge_cosine: 0.9,
        }),
        Some(memdex_store::TreeConfig {
            theta0: 0.4,
            lambda: 0.5,
            content_chars: 200,
        }),
    )
    .unwrap();
    w.commit_structures(&[thought("ann")], &[tree("bob")], 10)
        .unwrap();
    w.delete_items(&[1]).unwrap();
    drop(w);
    Pristine {
        rows: rows_of(&Store::open(dir).unwrap()),
        dir: dir.to_path_buf(),
        words: words.len(),
    }
}

fn thought(tenant: &str) -> ThoughtRow {
    ThoughtRow {
        tenant: tenant.into(),
        op: ThoughtOp::Insert,
        thought: 1,
        other: None,
        item: Some(0),
        subject: "ann".into(),
        relation: "likes".into(),
        object: "tea".into(),
        sentence: "ann likes tea".into(),
        time_ms: 1,
        sources: vec![0],
        embedding: vec![0.5; DIM],
        buckets: vec![1],
        reason: "stated".into(),
    }
}

fn tree(tenant: &str) -> TreeRow {
    TreeRow {
        tenant: tenant.into(),
        node: 1,
        removed: false,
        parent: 0,
        depth: 1,
        item: Some(9),
        content: "bob note".into(),
        embedding: vec![0.25; DIM],
    }
}

/// Every row a search may see, by item id, with the files its data is in.
fn rows_of(store: &Store) -> BTreeMap<u64, Row> {
    let m = store.manifest();
    let block_file = |id: u64| {
        (m.contents
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.file.clone()))
        .or_else(|| {
            m.segments
                .iter()
                .find(|s| s.id == id)
                .map(|s| s.file.clone())
        })
        .unwrap()
    };
    let mut out = BTreeMap::new();
    for tenant in store.tenants().keys() {
        for s in store.tenant_slices(tenant) {
            for r in 0..s.rows {
                let it = s.item(r);
                let block = s.segment.vector_runs(s.start + r, 1)[0].block.id;
                let mut files = vec![format!("segments/{}", s.segment.meta().file)];
                files.push(format!("segments/{}", block_file(block)));
                files.dedup();
                out.insert(
                    it.item_id,
                    Row {
                        tenant: it.tenant.into(),
                        key: it.key.into(),
                        vector: it.embedding.iter().map(|x| x.to_bits()).collect(),
                        files,
                    },
                );
            }
        }
    }
    out
}

fn copy_store(from: &Path, to: &Path) {
    for sub in ["segments", "structures"] {
        std::fs::create_dir_all(to.join(sub)).unwrap();
        for e in std::fs::read_dir(from.join(sub)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(sub).join(e.file_name())).unwrap();
        }
    }
    std::fs::copy(from.join("manifest.json"), to.join("manifest.json")).unwrap();
}

/// Files of the pristine store by kind: (label, path inside the store).
fn files_by_kind(p: &Pristine) -> Vec<(String, String)> {
    let m = memdex_store::Manifest::load(&p.dir).unwrap();
    let size = |f: &str| std::fs::metadata(p.dir.join(f)).unwrap().len();
    let small = memdex_store::SMALL_FILE_BYTES;
    let mut out = vec![("manifest".to_string(), "manifest.json".to_string())];
    for (f, ..) in m.all_files() {
        let kind = match &f {
            f if f.contains("/seg-") => "segment",
            f if f.contains("/cnt-") => "content",
            f if f.contains("/wrd-") => "words",
            _ => "structure",
        };
        let s = if size(&f) > small { "large" } else { "small" };
        out.push((format!("{kind} ({s})"), f));
    }
    out
}

/// What memdex did about one damaged file.
#[derive(Debug, Default, Clone)]
struct Tally {
    trials: u64,
    named_by_verify: u64,
    refused_at_open: u64,
    /// Searches answered from the other rows.
    left_out: u64,
    rows_left_out: u64,
    /// The word table or the structures left the file out (or refused it by name).
    derived_left_out: u64,
    not_noticed_at_open: u64,
    compaction_refused: u64,
}

#[test]
fn a_flipped_byte_in_any_file_is_named_and_never_read() {
    let mut table: BTreeMap<String, Tally> = BTreeMap::new();
    for layout in [Layout::Shared, Layout::Inline] {
        let tmp = tempfile::tempdir().unwrap();
        let p = build(&tmp.path().join("pristine"), layout);
        for (kind, file) in files_by_kind(&p) {
            let t = table.entry(format!("{layout} {kind}")).or_default();
            for seed in 0..SEEDS {
                let dir = tmp
                    .path()
                    .join(format!("w{seed}-{}", file.replace('/', "_")));
                copy_store(&p.dir, &dir);
                let at = flip_byte(&dir.join(&file), &mut SplitMix64::new(seed));
                let what = format!("{layout} {file} byte {at} (seed {seed})");
                t.trials += 1;
                check_verify(&dir, &file, &what, t);
                check_reads(&p, &dir, &file, &what, t);
                check_compaction(&dir, &file, &what, t);
            }
        }
    }
    eprintln!(
        "| layout, file damaged | flips | `verify` named it | open refused, file named | \
         searches answered without its rows (rows left out) | word table / structures left \
         it out | not noticed at open (checked on first read) | compaction refused |"
    );
    for (kind, t) in &table {
        eprintln!(
            "| {kind} | {} | {} | {} | {} ({}) | {} | {} | {} |",
            t.trials,
            t.named_by_verify,
            t.refused_at_open,
            t.left_out,
            t.rows_left_out,
            t.derived_left_out,
            t.not_noticed_at_open,
            t.compaction_refused
        );
    }
}

/// `verify` names the file, and only it.
fn check_verify(dir: &Path, file: &str, what: &str, t: &mut Tally) {
    let report = memdex_store::verify(dir).unwrap();
    let damaged: Vec<&str> = report.damaged_files().map(|f| f.file.as_str()).collect();
    assert_eq!(damaged, [file], "{what}: {report:#?}");
    let f = report.files.iter().find(|f| f.file == file).unwrap();
    assert_eq!(f.status, FileStatus::Damaged, "{what}");
    assert!(f.holds.is_some() && f.problem.is_some(), "{what}: {f:?}");
    t.named_by_verify += 1;
}

/// Opening refuses with the file named, or every search sees exactly the rows written
/// minus those whose data is in the damaged file.
fn check_reads(p: &Pristine, dir: &Path, file: &str, what: &str, t: &mut Tally) {
    let store = match Store::open(dir) {
        Err(e) => {
            let name = Path::new(file).file_name().unwrap().to_string_lossy();
            assert!(e.to_string().contains(name.as_ref()), "{what}: {e}");
            t.refused_at_open += 1;
            return;
        }
        Ok(s) => s,
    };
    let large = std::fs::metadata(dir.join(file)).unwrap().len() > memdex_store::SMALL_FILE_BYTES;
    if large && store.damage().is_empty() {
        t.not_noticed_at_open += 1;
    }
    let seen = rows_of(&store);
    let expected: BTreeMap<u64, Row> = (p.rows.iter())
        .filter(|(_, r)| !r.files.iter().any(|f| f == file))
        .map(|(id, r)| (*id, r.clone()))
        .collect();
    assert_eq!(
        seen.keys().collect::<BTreeSet<_>>(),
        expected.keys().collect(),
        "{what}"
    );
    assert!(
        seen == expected,
        "{what}: a row differs from what was written"
    );
    let left_out = p.rows.len() - seen.len();
    if left_out > 0 {
        assert!(
            store.damage().iter().any(|(f, _)| f == file),
            "{what}: {:?}",
            store.damage()
        );
        t.left_out += 1;
        t.rows_left_out += left_out as u64;
    }
    check_words_and_structures(p, &store, file, what, t, left_out);
}

fn check_words_and_structures(
    p: &Pristine,
    store: &Store,
    file: &str,
    what: &str,
    t: &mut Tally,
    left_out: usize,
) {
    let words = store.words().len();
    let structures = Structures::open(store);
    if file.contains("/wrd-") {
        assert_eq!(words, 0, "{what}: the damaged word file is left out");
        assert!(store.damage().iter().any(|(f, _)| f == file), "{what}");
        t.derived_left_out += 1;
    } else {
        assert_eq!(words, p.words, "{what}");
    }
    if file.starts_with("structures/") {
        let e = structures.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            e.contains(Path::new(file).file_name().unwrap().to_str().unwrap()),
            "{what}: {e}"
        );
        t.derived_left_out += 1;
    } else {
        assert!(structures.is_ok(), "{what}");
    }
    let derived = file.contains("/wrd-") || file.starts_with("structures/");
    assert!(
        derived || left_out > 0,
        "{what}: a damaged row file that every search still reads"
    );
}

/// Compaction (a deleted row makes it rewrite) refuses before it writes anything.
fn check_compaction(dir: &Path, file: &str, what: &str, t: &mut Tally) {
    let listing = |d: &Path| {
        let mut names: Vec<String> = ["segments", "structures"]
            .iter()
            .flat_map(|s| std::fs::read_dir(d.join(s)).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        (names, std::fs::read(d.join("manifest.json")).unwrap())
    };
    let before = listing(dir);
    let opened = StoreWriter::open_or_create(dir, &model(DIM, "aaaa"), Granularity::Round, None);
    let e = match opened {
        Err(e) => e,
        Ok(mut w) => w.compact(&CompactOptions::default()).expect_err(what),
    };
    let name = Path::new(file).file_name().unwrap().to_string_lossy();
    assert!(e.to_string().contains(name.as_ref()), "{what}: {e}");
    assert!(
        listing(dir) == before,
        "{what}: compaction wrote or removed a file"
    );
    t.compaction_refused += 1;
}

#[test]
fn large_files_are_checked_when_first_read_not_at_open() {
    let tmp = tempfile::tempdir().unwrap();
    let p = build(&tmp.path().join("pristine"), Layout::Shared);
    let big = files_by_kind(&p)
        .into_iter()
        .find(|(k, _)| k == "content (large)")
        .map(|(_, f)| f)
        .unwrap();
    // the large content file's first row (the vector column starts the file's body)
    let dir = tmp.path().join("w");
    copy_store(&p.dir, &dir);
    let path = dir.join(&big);
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let store = Store::open(&dir).unwrap();
    assert!(store.damage().is_empty(), "opening reads no large file");
    assert!(
        !store.tenant_slices("ann").is_empty(),
        "other tenants' files are sound"
    );
    assert!(
        store.damage().is_empty(),
        "ann's rows are not in the large file"
    );
    assert!(
        store.tenant_slices("dee").is_empty(),
        "dee's rows are all in it"
    );
    assert_eq!(store.damage().len(), 1);
    assert!(
        store.damage()[0].1.contains("checksum mismatch"),
        "{:?}",
        store.damage()
    );
    // a verification pass finds it too, and a clone of the view shares what was learned
    let again = Store::open(&dir).unwrap();
    let found: Vec<_> = (again.verify_files().into_iter())
        .filter(|(_, v)| matches!(v, memdex_store::Verdict::Damaged(_)))
        .collect();
    assert_eq!(found.len(), 1);
    assert!(again.clone().tenant_slices("dee").is_empty());
}
