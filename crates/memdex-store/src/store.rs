use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use memdex_core::ModelInfo;

use std::sync::{Arc, OnceLock};

use crate::contents::{Contents, SharedContents};
use crate::error::StoreError;
use crate::integrity::{Checks, Verdict};
use crate::live::Alive;
use crate::manifest::{Layout, Manifest, SEGMENTS_DIR};
use crate::meta::aux_file;
use crate::segment::{ItemRef, Segment, VectorRun};
use crate::words::WordTable;

/// A read-only view of one committed manifest version, all segments memory-mapped.
///
/// Cheap to open (mmap + footer decode per segment); never blocks or is blocked by a writer.
/// Deletion is the store's business: the manifest's tombstones become per-segment alive
/// bitmaps here, and every reader API below sees live rows only.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    manifest: Manifest,
    segments: Vec<Segment>,
    /// The shared layout's content files (empty for an inline store).
    contents: SharedContents,
    alive: Alive,
    /// The word table (query expansion's term vectors).
    words: Arc<CheckedWords>,
    /// What this process knows of the files' soundness, shared by its views (`integrity`).
    checks: Arc<Checks>,
}

/// The word table as mapped, and (once asked for) without its damaged files.
#[derive(Debug)]
struct CheckedWords {
    all: Arc<WordTable>,
    usable: OnceLock<Arc<WordTable>>,
}

impl CheckedWords {
    fn new(all: WordTable) -> Arc<CheckedWords> {
        Arc::new(CheckedWords {
            all: Arc::new(all),
            usable: OnceLock::new(),
        })
    }
}

/// Whether a tenant range's rows may be read: all of them, those whose content file is
/// sound, or none (its segment file is damaged).
enum Usable {
    All,
    SomeRows,
    None,
}

/// A run of one tenant's live rows inside one segment (a delete splits a tenant's range
/// into several runs).
#[derive(Debug, Clone, Copy)]
pub struct TenantSlice<'a> {
    pub segment: &'a Segment,
    /// Index of `segment` in [`Store::segments`].
    pub index: usize,
    pub start: usize,
    pub rows: usize,
}

impl<'a> TenantSlice<'a> {
    /// The vectors of these rows as runs of consecutive rows of stored vector blocks, in
    /// row order (one run for an inline store), borrowed from the mapping.
    pub fn vector_runs(&self) -> Vec<VectorRun<'a>> {
        self.segment.vector_runs(self.start, self.rows)
    }

    /// The vector of the row at `i`.
    pub fn embedding(&self, i: usize) -> &'a [f32] {
        self.segment.embedding(self.start + i)
    }

    /// The returned text of the row at `i`.
    pub fn value(&self, i: usize) -> &'a str {
        self.segment.value(self.start + i)
    }

    /// The item at `i` (0-based within this slice).
    pub fn item(&self, i: usize) -> ItemRef<'a> {
        self.segment.item(self.start + i)
    }

    /// Positions in the tenant's history of these rows.
    pub fn positions(&self) -> &'a [u64] {
        &self.segment.positions()[self.start..self.start + self.rows]
    }

    /// Session timestamps (ms) of these rows.
    pub fn timestamps(&self) -> &'a [i64] {
        &self.segment.timestamps()[self.start..self.start + self.rows]
    }

    pub fn session_id(&self, i: usize) -> &'a str {
        self.segment.session_id(self.start + i)
    }

    pub fn key(&self, i: usize) -> &'a str {
        self.segment.key(self.start + i)
    }

    pub fn terms(&self, i: usize) -> impl Iterator<Item = &'a str> + 'a {
        self.segment.terms(self.start + i)
    }

    /// Event dates `(start_ms, end_ms)` of the item at `i`.
    pub fn events(&self, i: usize) -> impl Iterator<Item = (i64, i64)> + 'a {
        self.segment.events(self.start + i)
    }

    pub fn facts(&self, i: usize) -> &'a str {
        self.segment.facts(self.start + i)
    }

    /// FragRel semantic neighbours of the item at `i`: (tenant position, weight).
    pub fn neighbors(&self, i: usize) -> impl Iterator<Item = (u64, f32)> + 'a {
        self.segment.neighbors(self.start + i)
    }

    /// LSH bucket ids of these rows (`rows × tables`, with the table count), if stored.
    pub fn lsh_buckets(&self) -> Option<(&'a [u16], usize)> {
        self.segment
            .lsh_buckets()
            .map(|(ids, t)| (&ids[self.start * t..(self.start + self.rows) * t], t))
    }
}

impl Store {
    /// Opens the store in `dir` at its latest committed version: every file mapped and its
    /// size and structure checked, the small ones hashed (see `integrity`).
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        Self::open_from(dir, Manifest::load(dir)?)
    }

    /// Opens `manifest` (a version of the store in `dir` read earlier). A segment that a
    /// concurrent compaction unlinked since makes it start over with the newest manifest.
    pub fn open_from(dir: &Path, manifest: Manifest) -> Result<Store, StoreError> {
        Self::open_checked(dir, manifest, &Arc::default())
    }

    /// [`Self::open_from`] sharing what `checks` knows of the files (a writer's views).
    pub(crate) fn open_checked(
        dir: &Path,
        mut manifest: Manifest,
        checks: &Arc<Checks>,
    ) -> Result<Store, StoreError> {
        for _ in 0..OPEN_ATTEMPTS {
            match Self::open_manifest(dir, manifest.clone(), checks) {
                Err(e) if e.is_missing_file() => {
                    let newer = Manifest::load(dir)?;
                    if newer.version == manifest.version {
                        return Err(e);
                    }
                    tracing::info!(
                        "{}: a segment was compacted away while opening; retrying",
                        dir.display()
                    );
                    manifest = newer;
                }
                other => return other,
            }
        }
        Self::open_manifest(dir, manifest, checks)
    }

    pub(crate) fn open_manifest(
        dir: &Path,
        manifest: Manifest,
        checks: &Arc<Checks>,
    ) -> Result<Store, StoreError> {
        let seg_dir = dir.join(SEGMENTS_DIR);
        let dim = manifest.model.dim;
        let contents = Arc::new(Contents::open(&seg_dir, &manifest.contents, dim, checks)?);
        let segments = manifest
            .segments
            .iter()
            .map(|m| Segment::open(&seg_dir, m, dim, manifest.layout, &contents, checks))
            .collect::<Result<Vec<_>, _>>()?;
        let alive = Alive::build(&segments, &manifest.deleted);
        let words = WordTable::open(&seg_dir, &manifest.words, dim, None, checks)?;
        Ok(Store {
            dir: dir.to_path_buf(),
            manifest,
            segments,
            contents,
            alive,
            words: CheckedWords::new(words),
            checks: checks.clone(),
        })
    }

    /// Moves to the latest committed manifest version, mapping only segments this view does
    /// not have yet (committed segments never change, so the others are kept as they are).
    pub fn refresh(&mut self) -> Result<(), StoreError> {
        let manifest = Manifest::load(&self.dir)?;
        let seg_dir = self.dir.join(SEGMENTS_DIR);
        let dim = manifest.model.dim;
        // appends only add content files: kept segments' locations stay valid (they hold the
        // contents they were resolved against). A compaction that rewrote content files moves
        // contents, so then every kept segment is resolved again against the new files.
        let contents_changed = manifest.contents != self.manifest.contents;
        let rewritten = !manifest.contents.starts_with(&self.manifest.contents);
        let checks = &self.checks;
        if contents_changed {
            let reopened = self
                .contents
                .reopen(&seg_dir, &manifest.contents, dim, checks)?;
            self.contents = Arc::new(reopened);
        }
        let mut old: std::collections::HashMap<u64, Segment> = self
            .segments
            .iter()
            .map(|s| (s.meta().id, s.clone()))
            .collect();
        let mut segments = Vec::with_capacity(manifest.segments.len());
        for m in &manifest.segments {
            segments.push(match old.remove(&m.id) {
                Some(s) if rewritten && s.layout() == Layout::Shared => {
                    s.resolved(&self.contents)?
                }
                Some(s) => s,
                None => Segment::open(&seg_dir, m, dim, manifest.layout, &self.contents, checks)?,
            });
        }
        self.alive = Alive::build(&segments, &manifest.deleted);
        if manifest.words != self.manifest.words {
            let prev = Some(&*self.words.all);
            let words = WordTable::open(&seg_dir, &manifest.words, dim, prev, checks)?;
            self.words = CheckedWords::new(words);
        }
        let named = manifest.all_files().into_iter().map(|(f, ..)| f);
        self.checks.retain(&named.collect());
        self.segments = segments;
        self.manifest = manifest;
        Ok(())
    }

    /// Opens the store and checks it was built with `model`.
    pub fn open_for_model(dir: &Path, model: &ModelInfo) -> Result<Store, StoreError> {
        let store = Self::open(dir)?;
        store.check_model(model)?;
        Ok(store)
    }

    pub fn check_model(&self, model: &ModelInfo) -> Result<(), StoreError> {
        match self.manifest.model.incompatibility(model) {
            None => Ok(()),
            Some(reason) => Err(StoreError::ModelMismatch {
                dir: self.dir.clone(),
                stored: format!(
                    "{} (dim {})",
                    self.manifest.model.name, self.manifest.model.dim
                ),
                requested: format!("{} (dim {})", model.name, model.dim),
                reason,
            }),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn model(&self) -> &ModelInfo {
        &self.manifest.model
    }

    pub fn dim(&self) -> usize {
        self.manifest.model.dim
    }

    /// Every mapped segment, live and deleted rows alike: for code that works on files
    /// (compaction, key reuse by hash, device residency). Readers of items use
    /// [`Self::tenant_slices`], [`Self::live_rows`] and [`Self::is_alive`].
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The word table: a vector per BM25 term of the stored keys, without the files found
    /// damaged (each file hashed the first time it is asked for).
    pub fn words(&self) -> &Arc<WordTable> {
        (self.words.usable).get_or_init(|| self.words.all.without_damaged())
    }

    /// What this process knows of the store's files (shared by its views).
    pub fn checks(&self) -> &Arc<Checks> {
        &self.checks
    }

    /// Every BM25 term some live row's key uses (what compaction keeps of the word table).
    pub(crate) fn live_terms(&self) -> HashSet<&str> {
        let mut used = HashSet::new();
        for tenant in self.tenants().keys() {
            for slice in self.tenant_slices(tenant) {
                for r in 0..slice.rows {
                    used.extend(slice.terms(r));
                }
            }
        }
        used
    }

    /// The shared layout's content files (none for an inline store).
    pub fn contents(&self) -> &Contents {
        &self.contents
    }

    pub fn layout(&self) -> Layout {
        self.manifest.layout
    }

    /// Ids of every vector block rows read (segments' own columns, content files): what a
    /// device may keep resident for this version.
    pub fn vector_block_ids(&self) -> Vec<u64> {
        match self.manifest.layout {
            Layout::Inline => self.segments.iter().map(|s| s.meta().id).collect(),
            Layout::Shared => self.manifest.contents.iter().map(|c| c.id).collect(),
        }
    }

    /// Whether row `row` of segment `index` is live: not deleted, and in no file known to be
    /// damaged (this hashes nothing; see [`Self::verified_row`]).
    pub fn is_alive(&self, index: usize, row: usize) -> bool {
        self.alive.is_alive(index, row)
            && (!self.checks.any_damage() || self.row_in_sound_files(index, row))
    }

    /// [`Self::is_alive`], hashing the row's files first if they were not yet: what a reader
    /// that copies a row's data (key reuse, the structures) asks before it does.
    pub fn verified_row(&self, index: usize, row: usize) -> bool {
        let seg = &self.segments[index];
        let sound = |v: Verdict| !matches!(v, Verdict::Damaged(_));
        self.alive.is_alive(index, row)
            && sound(seg.verify())
            && (seg.loc(row))
                .is_none_or(|l| seg.content_file(l.file).is_none_or(|f| sound(f.verify())))
    }

    /// The row's segment and content file are not known to be damaged.
    fn row_in_sound_files(&self, index: usize, row: usize) -> bool {
        let seg = &self.segments[index];
        !seg.check().known_damaged()
            && (seg.loc(row)).is_none_or(|l| {
                (seg.content_file(l.file)).is_none_or(|f| !f.check().known_damaged())
            })
    }

    /// Whether tenant range `range` of `seg` may be read, hashing its files the first time.
    fn usable(&self, seg: &Segment, range: usize) -> Usable {
        let damaged = |v: Verdict| matches!(v, Verdict::Damaged(_));
        if damaged(seg.verify()) {
            return Usable::None;
        }
        let files = seg.range_files(range).iter();
        let content = files.filter_map(|&f| seg.content_file(f));
        // every file is hashed (no short cut), so one search learns all its range's damage
        match content.fold(false, |bad, f| damaged(f.verify()) | bad) {
            true => Usable::SomeRows,
            false => Usable::All,
        }
    }

    /// Runs of live rows in `start..start + rows` of segment `index` whose content file is
    /// sound.
    fn sound_runs(&self, index: usize, start: usize, rows: usize) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        for r in (start..start + rows).filter(|&r| self.is_alive(index, r)) {
            match out.last_mut() {
                Some((s, n)) if *s + *n == r => *n += 1,
                _ => out.push((r, 1)),
            }
        }
        out
    }

    /// Hashes every file of this version not hashed yet (segments, content files, word
    /// files, structure files) and returns each file's verdict, in manifest order: a
    /// verification pass (`memdex serve` in the background or before it listens, compaction
    /// before it rewrites). A structure file that cannot be mapped is damaged too.
    pub fn verify_files(&self) -> Vec<(String, Verdict)> {
        let mut out: Vec<(String, Verdict)> = Vec::new();
        for seg in &self.segments {
            out.push((seg.check().name().to_string(), seg.verify()));
        }
        for f in self.contents.files() {
            out.push((f.check().name().to_string(), f.verify()));
        }
        for (check, bytes) in self.words.all.checks() {
            out.push((check.name().to_string(), check.verify(bytes)));
        }
        out.extend(self.verify_structure_files());
        out
    }

    /// Each structure file of this version hashed (once per process) and its verdict; one
    /// that cannot be read is damaged.
    fn verify_structure_files(&self) -> Vec<(String, Verdict)> {
        let Some(meta) = &self.manifest.structures else {
            return Vec::new();
        };
        let dir = self.dir.join(crate::meta::STRUCTURES_DIR);
        let verdict = |m: &crate::meta::AuxSegmentMeta| {
            let check = self.checks.get(&aux_file(&m.file), m.checksum);
            if let Some(v) = check.known() {
                return v;
            }
            match crate::mmap::map_file(&dir.join(&m.file)) {
                Ok(b) if b.len() as u64 == m.bytes => check.verify(b.as_slice()),
                Ok(b) => Verdict::Damaged(format!(
                    "file is {} bytes, manifest says {}",
                    b.len(),
                    m.bytes
                )),
                Err(e) => Verdict::Damaged(e.to_string()),
            }
        };
        (meta.segments.iter())
            .map(|m| (aux_file(&m.file), verdict(m)))
            .collect()
    }

    /// This version's files known to be damaged, with what was found (hashes nothing).
    pub fn damage(&self) -> Vec<(String, String)> {
        if !self.checks.any_damage() {
            return Vec::new();
        }
        let named: HashSet<String> = (self.manifest.all_files().into_iter())
            .map(|(f, ..)| f)
            .collect();
        let mut out = self.checks.damaged();
        out.retain(|(f, _)| named.contains(f));
        out
    }

    /// Live rows (committed and not deleted).
    pub fn rows(&self) -> u64 {
        (0..self.segments.len())
            .map(|i| self.alive.count(i, self.segments[i].rows()) as u64)
            .sum()
    }

    /// Rows in segment files, deleted ones included until compaction removes them.
    pub fn stored_rows(&self) -> u64 {
        self.manifest.rows()
    }

    /// The tenant's live rows as runs, oldest segment first; within a run rows are
    /// position-ascending, so the runs in order are the tenant's timeline. The files the
    /// rows live in are hashed the first time (see `integrity`); rows of a damaged file are
    /// left out: a search answers from the sound ones.
    pub fn tenant_slices(&self, tenant: &str) -> Vec<TenantSlice<'_>> {
        let mut out = Vec::new();
        for (index, segment) in self.segments.iter().enumerate() {
            let ranges = segment.meta().tenants.iter().enumerate();
            for (range, t) in ranges.filter(|(_, t)| t.tenant == tenant) {
                let (start, rows) = (t.start as usize, t.rows as usize);
                let slice = |(start, rows)| TenantSlice {
                    segment,
                    index,
                    start,
                    rows,
                };
                match (self.usable(segment, range), self.alive.of(index)) {
                    (Usable::None, _) => {}
                    (Usable::SomeRows, _) => {
                        out.extend(self.sound_runs(index, start, rows).into_iter().map(slice))
                    }
                    (Usable::All, None) => out.push(slice((start, rows))),
                    (Usable::All, Some(bits)) => {
                        out.extend(bits.runs(start, rows).into_iter().map(slice))
                    }
                }
            }
        }
        out
    }

    /// Whether `tenant` has live rows, hashing nothing (rows of files not checked yet count;
    /// [`Self::tenant_slices`] checks them): what a caller asks before queuing a search.
    pub fn has_live_rows(&self, tenant: &str) -> bool {
        (self.segments.iter().enumerate()).any(|(i, seg)| {
            (seg.meta().tenants.iter()).any(|t| {
                let (start, rows) = (t.start as usize, t.rows as usize);
                t.tenant == tenant
                    && (self.alive.of(i)).is_none_or(|b| !b.runs(start, rows).is_empty())
            })
        })
    }

    /// Live item count per tenant (tenants with at least one), sorted by tenant.
    pub fn tenants(&self) -> BTreeMap<&str, u64> {
        let mut out = BTreeMap::new();
        for (index, seg) in self.segments.iter().enumerate() {
            for t in &seg.meta().tenants {
                let live = match self.alive.of(index) {
                    None => t.rows,
                    Some(bits) => (t.start..t.start + t.rows)
                        .filter(|&r| bits.is_alive(r as usize))
                        .count() as u64,
                };
                if live > 0 {
                    *out.entry(t.tenant.as_str()).or_insert(0) += live;
                }
            }
        }
        out
    }

    /// Next free position in each tenant's history.
    pub fn next_positions(&self) -> HashMap<String, u64> {
        let mut out = HashMap::new();
        for seg in &self.segments {
            for t in &seg.meta().tenants {
                let next = out.entry(t.tenant.clone()).or_insert(0);
                *next = (*next).max(t.max_position + 1);
            }
        }
        out
    }

    /// Hash of each live session's items (in turn order), keyed by (tenant, session id):
    /// what idempotent appends compare against. See [`session_hash`]. A session whose items
    /// were all deleted is absent, as if never written.
    pub fn session_hashes(&self) -> HashMap<(String, String), u64> {
        let mut parts: HashMap<(String, String), Vec<(u32, u64)>> = HashMap::new();
        for (index, seg) in self.segments.iter().enumerate() {
            for row in (0..seg.rows()).filter(|&r| self.is_alive(index, r)) {
                let it = seg.item(row);
                parts
                    .entry((it.tenant.to_string(), it.session_id.to_string()))
                    .or_default()
                    .push((it.turn, it.content_hash));
            }
        }
        parts
            .into_iter()
            .map(|(k, mut v)| {
                v.sort_unstable();
                (k, session_hash(v.iter().map(|p| p.1)))
            })
            .collect()
    }
}

/// Manifest versions `Store::open` tries before giving up on a store that keeps compacting.
const OPEN_ATTEMPTS: usize = 100;

/// Combines the item hashes of one session, given in turn order.
pub fn session_hash(item_hashes: impl Iterator<Item = u64>) -> u64 {
    let bytes: Vec<u8> = item_hashes.flat_map(u64::to_le_bytes).collect();
    memdex_core::content_hash(&bytes)
}
