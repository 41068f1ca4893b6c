//! Deletion (tombstones in the manifest) and compaction (segments rewritten without deleted
//! rows, small segments merged).
//!
//! Compaction is generic over the segments' record batches: rows are filtered and reordered
//! with `arrow_select`, so every column a segment holds (including ones added later) is
//! carried through unchanged.

use std::collections::{BTreeSet, HashSet};
use std::fs;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{BooleanArray, RecordBatch, UInt32Array};
use arrow_select::concat::concat_batches;
use arrow_select::filter::filter_record_batch;
use arrow_select::take::take_record_batch;

use crate::contents::{write_batch_file, ContentFile};
use crate::error::StoreError;
use crate::manifest::{sync_dir, Layout, SEGMENTS_DIR};
use crate::meta::{ContentMeta, SegmentMeta, TenantRange};
use crate::schema::{columns, COL_ITEM_ID, COL_POSITION, COL_TENANT};
use crate::segment::Segment;
use crate::store::Store;
use crate::writer::StoreWriter;

/// When compaction rewrites segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactOptions {
    /// Segments with fewer rows are merged with their small neighbours.
    pub small_rows: u64,
    /// A merged segment holds at most this many rows (before deletions).
    pub max_rows: u64,
}

impl Default for CompactOptions {
    fn default() -> Self {
        Self {
            small_rows: 4096,
            max_rows: 262_144,
        }
    }
}

/// What one compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CompactReport {
    pub segments_before: usize,
    pub segments_after: usize,
    pub segments_rewritten: usize,
    pub rows_removed: u64,
    /// Shared layout: contents no remaining row references, removed with their files' rewrite.
    pub contents_removed: u64,
    /// Word-table terms no remaining row uses, removed with the table's rewrite.
    pub words_removed: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub manifest_version: u64,
}

impl StoreWriter {
    /// Marks items deleted (tombstones) and commits a new manifest version. Ids already
    /// tombstoned are ignored. Returns the committed manifest version.
    pub fn delete_items(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        let mut set: BTreeSet<u64> = self.manifest.deleted.iter().copied().collect();
        let before = set.len();
        set.extend(ids.iter().copied());
        if set.len() == before {
            return Ok(self.manifest.version);
        }
        let mut next = self.manifest.clone();
        next.version += 1;
        next.deleted = set.into_iter().collect();
        crate::failpoint::hit("before-tombstones")?;
        next.save(&self.dir)?;
        self.manifest = next;
        Ok(self.manifest.version)
    }

    /// Rewrites segments that hold deleted rows or are small, merging runs of neighbouring
    /// segments (manifest order is kept, so every tenant's rows stay in timeline order), then
    /// commits the new manifest and removes the old files. Deleted rows' bytes are gone from
    /// the store directory when this returns.
    pub fn compact(&mut self, opts: &CompactOptions) -> Result<CompactReport, StoreError> {
        let store = Store::open_manifest(&self.dir, self.manifest.clone())?;
        let deleted: HashSet<u64> = self.manifest.deleted.iter().copied().collect();
        let mut report = CompactReport {
            segments_before: store.segments().len(),
            bytes_before: self.manifest.bytes(),
            ..CompactReport::default()
        };
        let has_deleted = |seg: &Segment| {
            !deleted.is_empty() && seg.item_ids().iter().any(|id| deleted.contains(id))
        };
        // Runs of consecutive segments to rewrite as one.
        let mut runs: Vec<Vec<usize>> = Vec::new();
        let mut current: Vec<usize> = Vec::new();
        let mut current_rows = 0u64;
        for (i, seg) in store.segments().iter().enumerate() {
            let rows = seg.rows() as u64;
            let wanted = rows < opts.small_rows || has_deleted(seg);
            // segments written before and after LSH was enabled differ by a column: never
            // merged into one file
            let other_schema = current.first().is_some_and(|&f| {
                store.segments()[f].batch().schema().fields() != seg.batch().schema().fields()
            });
            if !wanted || other_schema || current_rows + rows > opts.max_rows {
                if !current.is_empty() {
                    runs.push(std::mem::take(&mut current));
                }
                current_rows = 0;
            }
            if wanted {
                current.push(i);
                current_rows += rows;
            }
        }
        if !current.is_empty() {
            runs.push(current);
        }
        runs.retain(|r| r.len() > 1 || has_deleted(&store.segments()[r[0]]));

        let seg_dir = self.dir.join(SEGMENTS_DIR);
        let mut next_seg_id = self.manifest.next_segment_id();
        // replacement for the first segment of each run; the run's other segments vanish
        let mut replace: Vec<Option<Option<SegmentMeta>>> = vec![None; store.segments().len()];
        let mut written: Vec<String> = Vec::new();
        for run in &runs {
            let rewritten = rewrite_run(&store, run, &deleted, &seg_dir, next_seg_id);
            let (meta, removed) = match rewritten {
                Ok(r) => r,
                Err(e) => {
                    // nothing committed: the files this compaction wrote go
                    remove_files(&seg_dir, &written);
                    return Err(e);
                }
            };
            if let Some(m) = &meta {
                written.push(m.file.clone());
                next_seg_id += 1;
            }
            report.rows_removed += removed;
            report.segments_rewritten += run.len();
            for &i in &run[1..] {
                replace[i] = Some(None);
            }
            replace[run[0]] = Some(meta);
        }
        if runs.is_empty() && self.manifest.deleted.is_empty() {
            report.segments_after = report.segments_before;
            report.bytes_after = report.bytes_before;
            report.manifest_version = self.manifest.version;
            return Ok(report);
        }
        let mut next = self.manifest.clone();
        next.version += 1;
        next.next_id_floor = self.manifest.next_item_id();
        next.next_segment_id = next_seg_id;
        next.segments = self
            .manifest
            .segments
            .iter()
            .zip(replace)
            .filter_map(|(old, r)| match r {
                None => Some(old.clone()),
                Some(new) => new,
            })
            .collect();
        // tombstones whose rows are gone now are dropped; those in untouched segments stay
        let rewritten: HashSet<usize> = runs.iter().flatten().copied().collect();
        let untouched: HashSet<u64> = store
            .segments()
            .iter()
            .enumerate()
            .filter(|(i, _)| !rewritten.contains(i))
            .flat_map(|(_, s)| s.item_ids().iter().copied())
            .filter(|id| deleted.contains(id))
            .collect();
        next.deleted = (self.manifest.deleted.iter().copied())
            .filter(|id| untouched.contains(id))
            .collect();
        let mut old_contents: Vec<String> = Vec::new();
        if next.layout == Layout::Shared {
            let remaining = remaining_refs(&store, &rewritten, &deleted);
            let mut ids = next_seg_id;
            match compact_contents(&store, &remaining, opts, &seg_dir, &mut ids) {
                Ok(c) => {
                    written.extend(c.written);
                    old_contents = c.retired;
                    report.contents_removed = c.removed;
                    next.contents = c.metas;
                    next.next_segment_id = ids;
                }
                Err(e) => {
                    remove_files(&seg_dir, &written);
                    return Err(e);
                }
            }
        }
        let mut ids = next.next_segment_id.max(next_seg_id);
        let used = store.live_terms();
        match crate::words::compact_words(store.words(), &used, &seg_dir, &mut ids) {
            Ok(Some(w)) => {
                written.extend(w.written);
                old_contents.extend(w.retired);
                report.words_removed = w.removed;
                next.words = w.metas;
                next.next_segment_id = ids;
            }
            Ok(None) => {}
            Err(e) => {
                remove_files(&seg_dir, &written);
                return Err(e);
            }
        }
        sync_dir(&seg_dir)?;
        let saved =
            crate::failpoint::hit("compact-before-manifest").and_then(|()| next.save(&self.dir));
        if let Err(e) = saved {
            // not committed: the rewritten files no manifest names go
            remove_files(&seg_dir, &written);
            return Err(e);
        }
        // committed: from here on nothing may fail the compaction, or the writer would keep a
        // manifest naming unlinked files
        self.manifest = next;
        report.segments_after = self.manifest.segments.len();
        report.bytes_after = self.manifest.bytes();
        report.manifest_version = self.manifest.version;
        if let Err(e) = crate::failpoint::hit("compact-before-cleanup") {
            tracing::warn!("compaction committed; {e}");
        }
        let old_files: Vec<String> = (runs.iter().flatten())
            .map(|&i| store.segments()[i].meta().file.clone())
            .chain(old_contents)
            .collect();
        drop(store);
        for f in old_files {
            let p = seg_dir.join(f);
            if let Err(e) = fs::remove_file(&p) {
                tracing::warn!(
                    "compaction committed; could not remove {}: {e}",
                    p.display()
                );
            }
        }
        if let Err(e) = sync_dir(&seg_dir) {
            tracing::warn!("compaction committed; {e}");
        }
        Ok(report)
    }
}

/// `content_ref` of every row that stays in a segment file: all rows of segments compaction
/// leaves alone, the live rows of those it rewrites.
fn remaining_refs(
    store: &Store,
    rewritten: &HashSet<usize>,
    deleted: &HashSet<u64>,
) -> HashSet<u64> {
    let mut out = HashSet::new();
    for (i, seg) in store.segments().iter().enumerate() {
        let refs = seg.batch().column_by_name(columns::CONTENT_REF);
        let Some(refs) = refs.map(|c| c.as_primitive::<UInt64Type>().values()) else {
            continue;
        };
        let ids = seg.item_ids();
        let keep = |r: usize| !rewritten.contains(&i) || !deleted.contains(&ids[r]);
        out.extend((0..refs.len()).filter(|&r| keep(r)).map(|r| refs[r]));
    }
    out
}

/// What compacting the content files did.
struct ContentCompaction {
    /// The content files of the new version, in order.
    metas: Vec<ContentMeta>,
    /// Files written (removed again if the compaction does not commit).
    written: Vec<String>,
    /// Files the new version no longer names.
    retired: Vec<String>,
    removed: u64,
}

/// Rewrites content files holding contents no remaining row references (their bytes go)
/// and merges small ones, as segments are: runs of neighbouring files, order kept, so the
/// contents a session stored together stay consecutive.
fn compact_contents(
    store: &Store,
    remaining: &HashSet<u64>,
    opts: &CompactOptions,
    seg_dir: &std::path::Path,
    next_id: &mut u64,
) -> Result<ContentCompaction, StoreError> {
    let files = store.contents().files();
    let garbage = |f: &ContentFile| f.hashes().iter().any(|h| !remaining.contains(h));
    let mut out = ContentCompaction {
        metas: Vec::new(),
        written: Vec::new(),
        retired: Vec::new(),
        removed: 0,
    };
    let mut run: Vec<&ContentFile> = Vec::new();
    let mut run_rows = 0u64;
    let mut walk = || {
        for f in files {
            let rows = f.rows() as u64;
            let wanted = rows < opts.small_rows || garbage(f);
            if !wanted || run_rows + rows > opts.max_rows {
                flush_contents(&mut run, remaining, seg_dir, next_id, &mut out)?;
                run_rows = 0;
            }
            if wanted {
                run.push(f);
                run_rows += rows;
            } else {
                out.metas.push(f.meta().clone());
            }
        }
        flush_contents(&mut run, remaining, seg_dir, next_id, &mut out)
    };
    match walk() {
        Ok(()) => Ok(out),
        Err(e) => {
            // nothing committed: the content files written so far go
            remove_files(seg_dir, &out.written);
            Err(e)
        }
    }
}

/// Writes `run` (emptied) as one content file of its referenced rows; a single file with no
/// garbage is kept as it is.
fn flush_contents(
    run: &mut Vec<&ContentFile>,
    remaining: &HashSet<u64>,
    seg_dir: &std::path::Path,
    next_id: &mut u64,
    out: &mut ContentCompaction,
) -> Result<(), StoreError> {
    let files = std::mem::take(run);
    let clean = |f: &ContentFile| f.hashes().iter().all(|h| remaining.contains(h));
    match files.as_slice() {
        [] => return Ok(()),
        [only] if clean(only) => {
            out.metas.push(only.meta().clone());
            return Ok(());
        }
        _ => {}
    }
    let err = |f: &ContentFile, source| StoreError::Arrow {
        path: f.path().to_path_buf(),
        source,
    };
    let mut batches = Vec::with_capacity(files.len());
    for f in &files {
        let keep: BooleanArray = (f.hashes().iter())
            .map(|h| Some(remaining.contains(h)))
            .collect();
        out.removed += keep.false_count() as u64;
        batches.push(filter_record_batch(f.batch(), &keep).map_err(|e| err(f, e))?);
        out.retired.push(f.meta().file.clone());
    }
    let merged =
        concat_batches(&files[0].batch().schema(), &batches).map_err(|e| err(files[0], e))?;
    if merged.num_rows() > 0 {
        let file = format!("cnt-{:08}.arrow", *next_id);
        let bytes = write_batch_file(seg_dir, &file, &merged)?;
        out.written.push(file.clone());
        out.metas.push(ContentMeta {
            id: *next_id,
            file,
            rows: merged.num_rows() as u64,
            bytes,
        });
        *next_id += 1;
    }
    Ok(())
}

/// One run of segments rewritten as one file without deleted rows (None: nothing left), and
/// the rows removed.
fn rewrite_run(
    store: &Store,
    run: &[usize],
    deleted: &HashSet<u64>,
    seg_dir: &std::path::Path,
    id: u64,
) -> Result<(Option<SegmentMeta>, u64), StoreError> {
    let mut batches = Vec::with_capacity(run.len());
    let mut removed = 0;
    for &i in run {
        let seg = &store.segments()[i];
        let keep: BooleanArray = seg
            .item_ids()
            .iter()
            .map(|id| Some(!deleted.contains(id)))
            .collect();
        removed += keep.false_count() as u64;
        batches.push(filter_record_batch(seg.batch(), &keep).map_err(|e| arrow(seg, e))?);
    }
    let first = &store.segments()[run[0]];
    let merged = concat_batches(&first.batch().schema(), &batches).map_err(|e| arrow(first, e))?;
    if merged.num_rows() == 0 {
        return Ok((None, removed));
    }
    let sorted = tenant_order(&merged).map_err(|e| arrow(first, e))?;
    Ok((Some(write_batch(seg_dir, id, &sorted)?), removed))
}

fn remove_files(dir: &std::path::Path, files: &[String]) {
    for f in files {
        let p = dir.join(f);
        if let Err(e) = fs::remove_file(&p) {
            tracing::warn!("could not remove {}: {e}", p.display());
        }
    }
}

fn arrow(seg: &Segment, source: arrow_schema::ArrowError) -> StoreError {
    StoreError::Arrow {
        path: seg.path().to_path_buf(),
        source,
    }
}

/// Rows grouped by tenant (first appearance order kept), position-ascending inside a tenant.
fn tenant_order(batch: &RecordBatch) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let tenants = batch.column(COL_TENANT).as_string::<i32>();
    let positions = batch.column(COL_POSITION).as_primitive::<UInt64Type>();
    let mut idx: Vec<u32> = (0..batch.num_rows() as u32).collect();
    idx.sort_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        tenants
            .value(a)
            .cmp(tenants.value(b))
            .then(positions.value(a).cmp(&positions.value(b)))
    });
    take_record_batch(batch, &UInt32Array::from(idx))
}

/// Writes one record batch as a segment file (64-byte aligned, temp + fsync + rename).
fn write_batch(
    dir: &std::path::Path,
    id: u64,
    batch: &RecordBatch,
) -> Result<SegmentMeta, StoreError> {
    let file = format!("seg-{id:08}.arrow");
    let bytes = write_batch_file(dir, &file, batch)?;
    let tenants_col = batch.column(COL_TENANT).as_string::<i32>();
    let positions = batch.column(COL_POSITION).as_primitive::<UInt64Type>();
    let ids = batch.column(COL_ITEM_ID).as_primitive::<UInt64Type>();
    let mut tenants: Vec<TenantRange> = Vec::new();
    for i in 0..batch.num_rows() {
        let (t, p) = (tenants_col.value(i), positions.value(i));
        match tenants.last_mut() {
            Some(r) if r.tenant == t => {
                r.rows += 1;
                r.max_position = r.max_position.max(p);
            }
            _ => tenants.push(TenantRange {
                tenant: t.to_string(),
                start: i as u64,
                rows: 1,
                max_position: p,
            }),
        }
    }
    Ok(SegmentMeta {
        id,
        file,
        rows: batch.num_rows() as u64,
        bytes,
        min_item_id: ids.values().iter().copied().min().unwrap_or(0),
        max_item_id: ids.values().iter().copied().max().unwrap_or(0),
        tenants,
    })
}
