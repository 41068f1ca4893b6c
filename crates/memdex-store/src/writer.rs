use std::collections::HashMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memdex_core::{Granularity, MemoryItem, ModelInfo};

use crate::checksum::Checksum;
use crate::contents::{same_content, write_batch_file, write_contents, Contents, NewContent};
use crate::error::{io, StoreError};
use crate::integrity::Checks;
use crate::lsh_column::LshMeta;
use crate::manifest::{Extraction, Layout, Manifest, SEGMENTS_DIR};
use crate::meta::{segment_file, SegmentMeta, WordsMeta};
use crate::segment::{write_segment, Derived, Row};
use crate::store::Store;
use crate::words::words_batch;

/// The single writer of a store. Holds `DIR/LOCK` for its lifetime.
///
/// Each [`append`](Self::append) writes one new immutable segment and commits a new manifest
/// version; previously committed segments are never rewritten.
#[derive(Debug)]
pub struct StoreWriter {
    pub(crate) dir: PathBuf,
    pub(crate) manifest: Manifest,
    pub(crate) next_positions: HashMap<String, u64>,
    /// The shared layout's committed contents: what an append references instead of writing.
    pub(crate) contents: Contents,
    /// A read view of the store, opened with the writer and moved forward (new segments
    /// mapped, kept ones reused) when asked for after commits: a build opens its store once.
    /// None after a compaction (its mappings would keep the rewritten files' blocks on disk).
    pub(crate) view: Option<Store>,
    /// What this process knows of the files' soundness, shared with every view the writer
    /// opens (files it writes start out intact).
    pub(crate) checks: Arc<Checks>,
    _lock: File,
}

/// What a store is created with. Opening an existing store checks it: another granularity,
/// extraction or (when given) layout is refused; the model source is only a hint.
#[derive(Debug, Clone)]
pub struct StoreSpec {
    pub granularity: Granularity,
    pub model_source: Option<String>,
    pub extraction: Extraction,
    /// `None`: the existing store's layout, or [`Layout::default`] for a new store.
    pub layout: Option<Layout>,
}

impl StoreSpec {
    pub fn new(granularity: Granularity) -> StoreSpec {
        StoreSpec {
            granularity,
            model_source: None,
            extraction: Extraction::default(),
            layout: None,
        }
    }
}

/// What one append committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentAppend {
    pub segment: SegmentMeta,
    pub manifest_version: u64,
}

impl StoreWriter {
    /// Opens the store in `dir` for writing, creating it for `model` if it does not exist.
    /// An existing store built with another model or dimension is refused.
    pub fn open_or_create(
        dir: &Path,
        model: &ModelInfo,
        granularity: Granularity,
        model_source: Option<String>,
    ) -> Result<StoreWriter, StoreError> {
        Self::open_or_create_with(
            dir,
            model,
            granularity,
            model_source,
            &Extraction::default(),
        )
    }

    /// [`Self::open_or_create`] recording (on creation) or checking (on open) the store's
    /// index-time extraction settings: one store holds one kind of key.
    pub fn open_or_create_with(
        dir: &Path,
        model: &ModelInfo,
        granularity: Granularity,
        model_source: Option<String>,
        extraction: &Extraction,
    ) -> Result<StoreWriter, StoreError> {
        let spec = StoreSpec {
            granularity,
            model_source,
            extraction: extraction.clone(),
            layout: None,
        };
        Self::open_or_create_spec(dir, model, &spec)
    }

    /// Opens the store in `dir` for writing, creating it as `spec` says if it does not exist.
    pub fn open_or_create_spec(
        dir: &Path,
        model: &ModelInfo,
        spec: &StoreSpec,
    ) -> Result<StoreWriter, StoreError> {
        let (granularity, extraction) = (spec.granularity, &spec.extraction);
        fs::create_dir_all(dir.join(SEGMENTS_DIR)).map_err(io(dir))?;
        let lock = lock_store(dir)?;
        let manifest = match Manifest::load(dir) {
            Ok(m) => m,
            Err(StoreError::NotAStore { .. }) => {
                let layout = spec.layout.unwrap_or_default();
                let m = Manifest {
                    format_version: layout.format_version(),
                    version: 1,
                    model: model.clone(),
                    granularity,
                    model_source: spec.model_source.clone(),
                    extraction: extraction.clone(),
                    segments: Vec::new(),
                    layout,
                    contents: Vec::new(),
                    deleted: Vec::new(),
                    next_id_floor: 0,
                    next_segment_id: 0,
                    lsh: None,
                    structures: None,
                    words: Vec::new(),
                };
                m.save(dir)?;
                m
            }
            Err(e) => return Err(e),
        };
        let checks = Arc::new(Checks::default());
        let store = Store::open_manifest(dir, manifest, &checks)?;
        store.check_model(model)?;
        if store.manifest().granularity != granularity {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "{} holds {} items; cannot append {} items (use another store)",
                    dir.display(),
                    store.manifest().granularity,
                    granularity
                ),
            });
        }
        let have = &store.manifest().extraction;
        if have != extraction {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "{} was built with extraction {have:?}; cannot append with {extraction:?} \
                     (use the same --extract/--facts/--key-context options, or another store)",
                    dir.display(),
                ),
            });
        }
        if let Some(layout) = spec.layout.filter(|&l| l != store.layout()) {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "{} has the {} layout; cannot append with --layout {layout} (use another store)",
                    dir.display(),
                    store.layout()
                ),
            });
        }
        let mut writer = StoreWriter {
            dir: dir.to_path_buf(),
            next_positions: store.next_positions(),
            manifest: store.manifest().clone(),
            contents: store.contents().clone(),
            view: Some(store),
            checks,
            _lock: lock,
        };
        writer.remove_orphans()?;
        Ok(writer)
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// A read view of the store at the writer's last commit (the one opened with the writer,
    /// refreshed when commits came since).
    pub fn view(&mut self) -> Result<&Store, StoreError> {
        let view = match self.view.take() {
            Some(mut v) => {
                if v.manifest().version != self.manifest.version {
                    v.refresh()?;
                }
                v
            }
            None => Store::open_checked(&self.dir, self.manifest.clone(), &self.checks)?,
        };
        Ok(self.view.insert(view))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The position each tenant's next item takes.
    pub fn next_positions(&self) -> &HashMap<String, u64> {
        &self.next_positions
    }

    /// Deletes segment files no manifest names: leftovers of a crash before commit.
    fn remove_orphans(&mut self) -> Result<(), StoreError> {
        let seg_dir = self.dir.join(SEGMENTS_DIR);
        let named: std::collections::HashSet<&str> = self.manifest.files().collect();
        for entry in fs::read_dir(&seg_dir).map_err(io(&seg_dir))? {
            let entry = entry.map_err(io(&seg_dir))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !named.contains(name.as_ref()) {
                tracing::warn!(
                    "removing uncommitted segment file {}",
                    entry.path().display()
                );
                fs::remove_file(entry.path()).map_err(io(entry.path()))?;
            }
        }
        Ok(())
    }

    /// Appends items with their embeddings (row-major, `items.len() × dim`) as one new segment
    /// and commits it. Items get consecutive ids in input order and the next positions of their
    /// tenants' histories. Stored without BM25 terms; see [`Self::append_with_terms`].
    pub fn append(
        &mut self,
        items: &[MemoryItem],
        embeddings: &[f32],
    ) -> Result<SegmentAppend, StoreError> {
        self.append_derived(items, embeddings, &vec![Derived::default(); items.len()])
    }

    /// Turns on TiM LSH for the segments appended from now on (recorded in a new manifest
    /// version); earlier segments keep no bucket column and are scanned exactly. Enabling the
    /// same hashing again is a no-op; different hashing is refused.
    pub fn enable_lsh(&mut self, lsh: LshMeta) -> Result<(), StoreError> {
        match self.manifest.lsh {
            Some(m) if m == lsh => return Ok(()),
            Some(m) => {
                return Err(StoreError::InvalidAppend {
                    message: format!("store already hashes with {m:?}; asked for {lsh:?}"),
                })
            }
            None => {}
        }
        if lsh.dim as usize != self.manifest.model.dim
            || lsh.tables == 0
            || lsh.buckets < 2
            || !lsh.buckets.is_multiple_of(2)
            || lsh.buckets > 1 << 16
        {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "LSH {lsh:?} does not fit a store of dimension {}",
                    self.manifest.model.dim
                ),
            });
        }
        let mut next = self.manifest.clone();
        next.version += 1;
        next.lsh = Some(lsh);
        next.save(&self.dir)?;
        self.manifest = next;
        Ok(())
    }

    /// [`Self::append`] with each item's analysed key terms (one list per item). A store with
    /// LSH enabled needs [`Self::append_with_lsh`].
    pub fn append_with_terms(
        &mut self,
        items: &[MemoryItem],
        embeddings: &[f32],
        terms: &[Vec<String>],
    ) -> Result<SegmentAppend, StoreError> {
        self.append_with_lsh(items, embeddings, terms, &[])
    }

    /// [`Self::append_with_terms`] plus each item's LSH bucket ids (`items × tables`, in item
    /// order; empty when the store does not hash).
    pub fn append_with_lsh(
        &mut self,
        items: &[MemoryItem],
        embeddings: &[f32],
        terms: &[Vec<String>],
        lsh: &[u16],
    ) -> Result<SegmentAppend, StoreError> {
        let tables = self.manifest.lsh.map_or(0, |m| m.tables as usize);
        if terms.len() != items.len() || lsh.len() != items.len() * tables {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "{} term lists and {} LSH bucket ids for {} items; the store hashes with {:?}",
                    terms.len(),
                    lsh.len(),
                    items.len(),
                    self.manifest.lsh
                ),
            });
        }
        let derived: Vec<Derived> = terms
            .iter()
            .enumerate()
            .map(|(i, t)| Derived {
                terms: t.clone(),
                lsh: lsh[i * tables..(i + 1) * tables].to_vec(),
                ..Derived::default()
            })
            .collect();
        self.append_derived(items, embeddings, &derived)
    }

    /// [`Self::append`] with what the engine derived from each item (terms, events, facts,
    /// neighbours, LSH bucket ids).
    pub fn append_derived(
        &mut self,
        items: &[MemoryItem],
        embeddings: &[f32],
        derived: &[Derived],
    ) -> Result<SegmentAppend, StoreError> {
        let tables = self.manifest.lsh.map_or(0, |m| m.tables as usize);
        let buckets = self.manifest.lsh.map_or(0, |m| m.buckets as usize);
        if let Some(i) = derived
            .iter()
            .position(|d| d.lsh.len() != tables || d.lsh.iter().any(|&b| b as usize >= buckets))
        {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "item {i}: {} LSH bucket ids; the store hashes with {:?}",
                    derived[i].lsh.len(),
                    self.manifest.lsh
                ),
            });
        }
        if derived.len() != items.len() {
            return Err(StoreError::InvalidAppend {
                message: format!("{} derived rows for {} items", derived.len(), items.len()),
            });
        }
        if let Some(i) = derived
            .iter()
            .position(|d| d.neighbors.iter().any(|n| !n.1.is_finite()))
        {
            return Err(StoreError::InvalidAppend {
                message: format!("neighbour weight of item {i} is not finite"),
            });
        }
        if let Some(i) = derived.iter().position(|d| d.events.len() % 2 != 0) {
            return Err(StoreError::InvalidAppend {
                message: format!("events of item {i} are not (start, end) pairs"),
            });
        }
        let dim = self.manifest.model.dim;
        if items.is_empty() {
            return Err(StoreError::InvalidAppend {
                message: "no items".into(),
            });
        }
        if embeddings.len() != items.len() * dim {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "{} embedding values for {} items of dimension {dim}",
                    embeddings.len(),
                    items.len()
                ),
            });
        }
        if let Some(i) = embeddings.iter().position(|x| !x.is_finite()) {
            return Err(StoreError::InvalidAppend {
                message: format!("embedding of item {} is not finite", i / dim),
            });
        }
        let first_id = self.manifest.next_item_id();
        let mut positions = self.next_positions.clone();
        let mut rows: Vec<Row<'_>> = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let next = positions.entry(item.tenant.clone()).or_insert(0);
                let position = *next;
                *next += 1;
                Row {
                    item_id: first_id + i as u64,
                    position,
                    item,
                    embedding: &embeddings[i * dim..(i + 1) * dim],
                    derived: &derived[i],
                    lsh: &derived[i].lsh,
                }
            })
            .collect();
        // Tenant-contiguous layout; stable, so positions stay ascending within a tenant.
        rows.sort_by(|a, b| a.item.tenant.cmp(&b.item.tenant));

        let layout = self.manifest.layout;
        let metadata = HashMap::from([
            (
                "memdex.format_version".to_string(),
                layout.format_version().to_string(),
            ),
            (
                "memdex.model".to_string(),
                serde_json::to_string(&self.manifest.model).unwrap_or_default(),
            ),
        ]);
        let seg_dir = self.dir.join(SEGMENTS_DIR);
        let mut next = self.manifest.clone();
        let mut written: Vec<String> = Vec::new();
        let mut id = self.manifest.next_segment_id();
        if layout == Layout::Shared {
            self.fresh_contents()?;
        }
        let new = match layout {
            Layout::Inline => Vec::new(),
            Layout::Shared => self.new_contents(&rows)?,
        };
        let committed = (|| {
            if !new.is_empty() {
                let c = write_contents(&seg_dir, id, dim, &new, metadata.clone())?;
                written.push(c.file.clone());
                next.contents.push(c);
                id += 1;
            }
            let meta = write_segment(&seg_dir, id, dim, layout, &rows, metadata)?;
            written.push(meta.file.clone());
            next.version += 1;
            next.next_segment_id = id + 1;
            next.segments.push(meta.clone());
            crate::failpoint::hit("before-manifest").and_then(|()| next.save(&self.dir))?;
            Ok(meta)
        })();
        let meta = match committed {
            Ok(meta) => meta,
            Err(e) => {
                // not committed: files no manifest names go (the next writer would remove them)
                for f in &written {
                    let _ = std::fs::remove_file(seg_dir.join(f));
                }
                return Err(e);
            }
        };
        self.note_written(&meta.file, meta.checksum);
        if let Some(c) = next.contents.last().filter(|_| !new.is_empty()) {
            self.note_written(&c.file, c.checksum);
            // committed: a failure to map the new file is not this append's; the next append
            // finds its contents out of step with the manifest and maps them again
            if let Err(e) = self.contents.push_new(&seg_dir, c, dim, &self.checks) {
                tracing::warn!("{e}; the next append maps the content files again");
            }
        }
        self.manifest = next;
        self.next_positions = positions;
        Ok(SegmentAppend {
            segment: meta,
            manifest_version: self.manifest.version,
        })
    }

    /// Maps the manifest's content files again when the writer's view of them is out of step
    /// (a compaction rewrote them, or mapping a new one failed).
    fn fresh_contents(&mut self) -> Result<(), StoreError> {
        let have = self.contents.files().iter().map(|f| f.meta());
        if have.eq(self.manifest.contents.iter()) {
            return Ok(());
        }
        let seg_dir = self.dir.join(SEGMENTS_DIR);
        let dim = self.manifest.model.dim;
        self.contents =
            (self.contents).reopen(&seg_dir, &self.manifest.contents, dim, &self.checks)?;
        Ok(())
    }

    /// A file of `segments/` this writer wrote: intact without hashing it again.
    pub(crate) fn note_written(&self, file: &str, checksum: Option<Checksum>) {
        if let Some(c) = checksum {
            self.checks.written(&segment_file(file), c);
        }
    }

    /// Whether some file has no recorded checksum and this process has hashed every such
    /// file already (a verification pass): a compaction then records them without reading.
    pub fn checksums_ready(&self) -> bool {
        let files = self.manifest.all_files();
        let mut missing = files.iter().filter(|(_, _, c)| c.is_none()).peekable();
        missing.peek().is_some()
            && missing.all(|(f, ..)| self.checks.computed_unrecorded(f).is_some())
    }

    /// What this process knows of the store's files (shared with the writer's views).
    pub fn checks(&self) -> &Arc<Checks> {
        &self.checks
    }

    /// The contents of `rows` not stored yet, each once. A stored content whose text differs
    /// from the row's under the same reference (a 64-bit collision) is refused.
    fn new_contents<'r>(&self, rows: &'r [Row<'_>]) -> Result<Vec<NewContent<'r>>, StoreError> {
        let mut new: Vec<NewContent<'r>> = Vec::new();
        let mut seen: HashMap<u64, usize> = HashMap::new();
        for r in rows {
            let (key, value) = (r.item.key.as_str(), r.item.value.as_str());
            let hash = crate::schema::content_ref(key, value);
            let same = match (self.contents.get(hash), seen.get(&hash)) {
                (Some(loc), _) => {
                    same_content(self.contents.file(loc), loc.row as usize, key, value)
                }
                (None, Some(&i)) => new[i].key == key && new[i].value == value,
                (None, None) => {
                    seen.insert(hash, new.len());
                    new.push(NewContent {
                        hash,
                        key,
                        value,
                        terms: &r.derived.terms,
                        embedding: r.embedding,
                    });
                    true
                }
            };
            if !same {
                return Err(StoreError::InvalidAppend {
                    message: format!(
                        "item {} (tenant {:?}, session {:?}): content reference {hash:016x} is \
                         already stored for a different text",
                        r.item_id, r.item.tenant, r.item.session_id
                    ),
                });
            }
        }
        Ok(new)
    }
}

impl StoreWriter {
    /// Commits `words` (term, the word embedded for it) with their `vectors` (row-major,
    /// `words.len() × dim`) as one word file in a new manifest version. Terms the table has
    /// already are stored again but never read (the first file wins); nothing to add: no-op.
    pub fn append_words(
        &mut self,
        words: &[(String, String)],
        vectors: &[f32],
    ) -> Result<(), StoreError> {
        if words.is_empty() {
            return Ok(());
        }
        let dim = self.manifest.model.dim;
        if vectors.len() != words.len() * dim {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "{} word vectors' values for {} words of dimension {dim}",
                    vectors.len(),
                    words.len()
                ),
            });
        }
        let batch = words_batch(words, vectors, dim);
        let seg_dir = self.dir.join(SEGMENTS_DIR);
        let id = self.manifest.next_segment_id();
        let file = format!("wrd-{id:08}.arrow");
        let (bytes, checksum) = write_batch_file(&seg_dir, &file, &batch)?;
        let mut next = self.manifest.clone();
        next.version += 1;
        next.next_segment_id = id + 1;
        next.words.push(WordsMeta {
            id,
            file: file.clone(),
            rows: words.len() as u64,
            bytes,
            checksum: Some(checksum),
        });
        if let Err(e) = next.save(&self.dir) {
            let _ = std::fs::remove_file(seg_dir.join(&file));
            return Err(e);
        }
        self.note_written(&file, Some(checksum));
        self.manifest = next;
        Ok(())
    }
}

/// How long a writer waits for a lock that is held only for a moment: a child process
/// that this process is starting holds a copy of every open file, the lock's among them,
/// until it execs (microseconds), so a writer reopened just after another closed could see
/// the lock taken. A writer that holds it longer is reported as [`StoreError::Locked`].
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(250);
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(5);

/// Takes `DIR/LOCK`, the one writer's lock, held while the returned file is open.
pub(crate) fn lock_store(dir: &Path) -> Result<File, StoreError> {
    let lock_path = dir.join("LOCK");
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io(&lock_path))?;
    let start = std::time::Instant::now();
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(lock),
            Err(fs::TryLockError::WouldBlock) if start.elapsed() < LOCK_WAIT => {
                std::thread::sleep(LOCK_RETRY)
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    dir: dir.to_path_buf(),
                    lock: lock_path,
                })
            }
            Err(fs::TryLockError::Error(e)) => return Err(io(&lock_path)(e)),
        }
    }
}
