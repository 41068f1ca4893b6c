//! Compaction's mechanism: the runs a plan names, rewritten as new files without their
//! dropped rows. Every file written is recorded in a [`NewFiles`], which removes them unless
//! the manifest naming them commits.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{BooleanArray, RecordBatch, UInt32Array};
use arrow_select::concat::concat_batches;
use arrow_select::filter::filter_record_batch;
use arrow_select::take::take_record_batch;

use super::plan::{runs, Candidate, CompactOptions, CompactPlan};
use crate::contents::{write_batch_file, ContentFile};
use crate::error::StoreError;
use crate::meta::{ContentMeta, SegmentMeta, TenantRange};
use crate::schema::{columns, COL_ITEM_ID, COL_POSITION, COL_TENANT};
use crate::segment::Segment;
use crate::store::Store;

/// Files a compaction wrote into one directory: removed when this is dropped before
/// [`Self::commit`] (the compaction failed before its manifest committed).
#[derive(Debug)]
pub(super) struct NewFiles {
    dir: PathBuf,
    files: Vec<String>,
}

impl NewFiles {
    pub fn new(dir: &Path) -> NewFiles {
        NewFiles {
            dir: dir.to_path_buf(),
            files: Vec::new(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn push(&mut self, file: String) {
        self.files.push(file);
    }

    /// The manifest naming the files is committed: they stay. Returns their names.
    pub fn commit(mut self) -> Vec<String> {
        std::mem::take(&mut self.files)
    }
}

impl Drop for NewFiles {
    fn drop(&mut self) {
        // nothing committed: the files this compaction wrote go
        remove_files(&self.dir, &self.files, "");
    }
}

/// Removes `files` from `dir`, logging (after `context`) the ones that cannot be removed.
pub(super) fn remove_files(dir: &Path, files: &[String], context: &str) {
    for f in files {
        let p = dir.join(f);
        if let Err(e) = fs::remove_file(&p) {
            tracing::warn!("{context}could not remove {}: {e}", p.display());
        }
    }
}

/// The segments of a new version: the plan's runs rewritten in place.
#[derive(Debug)]
pub(super) struct SegmentRewrite {
    pub segments: Vec<SegmentMeta>,
    /// Segment files the new version no longer names.
    pub retired: Vec<String>,
    pub rows_removed: u64,
}

/// Rewrites each run of `plan` as one segment file (ids from `next_id` on) without the
/// `deleted` rows; the new segment list keeps manifest order.
pub(super) fn segments(
    store: &Store,
    plan: &CompactPlan,
    deleted: &HashSet<u64>,
    files: &mut NewFiles,
    next_id: &mut u64,
) -> Result<SegmentRewrite, StoreError> {
    let old = &store.manifest().segments;
    // replacement for the first segment of each run; the run's other segments vanish
    let mut replace: Vec<Option<Option<SegmentMeta>>> = vec![None; old.len()];
    let mut out = SegmentRewrite {
        segments: Vec::new(),
        retired: Vec::new(),
        rows_removed: 0,
    };
    for run in &plan.runs {
        let (meta, removed) = rewrite_run(store, run, deleted, files.dir(), *next_id)?;
        if let Some(m) = &meta {
            files.push(m.file.clone());
            *next_id += 1;
        }
        out.rows_removed += removed;
        out.retired.extend(run.iter().map(|&i| old[i].file.clone()));
        run[1..].iter().for_each(|&i| replace[i] = Some(None));
        replace[run[0]] = Some(meta);
    }
    out.segments = (old.iter().zip(replace))
        .filter_map(|(old, r)| r.unwrap_or_else(|| Some(old.clone())))
        .collect();
    Ok(out)
}

/// One run of segments rewritten as one file without deleted rows (None: nothing left), and
/// the rows removed.
fn rewrite_run(
    store: &Store,
    run: &[usize],
    deleted: &HashSet<u64>,
    seg_dir: &Path,
    id: u64,
) -> Result<(Option<SegmentMeta>, u64), StoreError> {
    let mut batches = Vec::with_capacity(run.len());
    let mut removed = 0;
    for &i in run {
        let seg = &store.segments()[i];
        let keep: BooleanArray = (seg.item_ids().iter())
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
fn write_batch(dir: &Path, id: u64, batch: &RecordBatch) -> Result<SegmentMeta, StoreError> {
    let file = format!("seg-{id:08}.arrow");
    let (bytes, checksum) = write_batch_file(dir, &file, batch)?;
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
        checksum: Some(checksum),
        min_item_id: ids.values().iter().copied().min().unwrap_or(0),
        max_item_id: ids.values().iter().copied().max().unwrap_or(0),
        tenants,
    })
}

/// A shared store's content files as compaction rewrites them: those holding contents no
/// remaining row references (their bytes go) and small ones, in runs picked by the same
/// rule as segments, so the contents a session stored together stay consecutive.
#[derive(Debug)]
pub(super) struct ContentRewrite<'s> {
    files: &'s [ContentFile],
    /// `content_ref` of every row the new version keeps.
    remaining: HashSet<u64>,
    runs: Vec<Vec<usize>>,
}

/// What rewriting the content files did.
#[derive(Debug, Default)]
pub(super) struct ContentCompaction {
    /// The content files of the new version, in order.
    pub metas: Vec<ContentMeta>,
    /// Files the new version no longer names.
    pub retired: Vec<String>,
    pub removed: u64,
}

impl<'s> ContentRewrite<'s> {
    /// The content runs once `plan` has rewritten its segments without the `deleted` rows.
    pub fn plan(
        store: &'s Store,
        plan: &CompactPlan,
        deleted: &HashSet<u64>,
        opts: &CompactOptions,
    ) -> ContentRewrite<'s> {
        let rewritten: HashSet<usize> = plan.runs.iter().flatten().copied().collect();
        let remaining = remaining_refs(store, &rewritten, deleted);
        let files = store.contents().files();
        let candidates: Vec<Candidate> = (files.iter())
            .map(|f| Candidate {
                rows: f.rows() as u64,
                garbage: f.hashes().iter().any(|h| !remaining.contains(h)),
                class: 0,
            })
            .collect();
        let runs = runs(&candidates, opts);
        ContentRewrite {
            files,
            remaining,
            runs,
        }
    }

    /// Bytes of the content files the runs read: at most what their rewrite writes.
    pub fn bytes(&self) -> u64 {
        let files = self.runs.iter().flatten();
        files.map(|&i| self.files[i].meta().bytes).sum()
    }

    /// Writes each run as one content file of its referenced rows (ids from `next_id` on).
    pub fn write(
        &self,
        out: &mut NewFiles,
        next_id: &mut u64,
    ) -> Result<ContentCompaction, StoreError> {
        let mut done = ContentCompaction::default();
        let mut next = 0;
        for run in &self.runs {
            let before = &self.files[next..run[0]];
            done.metas.extend(before.iter().map(|f| f.meta().clone()));
            self.write_run(run, out, next_id, &mut done)?;
            next = run[run.len() - 1] + 1;
        }
        done.metas
            .extend(self.files[next..].iter().map(|f| f.meta().clone()));
        Ok(done)
    }

    fn write_run(
        &self,
        run: &[usize],
        out: &mut NewFiles,
        next_id: &mut u64,
        done: &mut ContentCompaction,
    ) -> Result<(), StoreError> {
        let err = |f: &ContentFile, source| StoreError::Arrow {
            path: f.path().to_path_buf(),
            source,
        };
        let mut batches = Vec::with_capacity(run.len());
        for f in run.iter().map(|&i| &self.files[i]) {
            let keep: BooleanArray = (f.hashes().iter())
                .map(|h| Some(self.remaining.contains(h)))
                .collect();
            done.removed += keep.false_count() as u64;
            batches.push(filter_record_batch(f.batch(), &keep).map_err(|e| err(f, e))?);
            done.retired.push(f.meta().file.clone());
        }
        let first = &self.files[run[0]];
        let merged =
            concat_batches(&first.batch().schema(), &batches).map_err(|e| err(first, e))?;
        if merged.num_rows() == 0 {
            return Ok(());
        }
        let file = format!("cnt-{:08}.arrow", *next_id);
        let (bytes, checksum) = write_batch_file(out.dir(), &file, &merged)?;
        out.push(file.clone());
        done.metas.push(ContentMeta {
            id: *next_id,
            file,
            rows: merged.num_rows() as u64,
            bytes,
            checksum: Some(checksum),
        });
        *next_id += 1;
        Ok(())
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
