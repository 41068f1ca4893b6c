//! Deletion (tombstones in the manifest) and compaction (segments rewritten without deleted
//! rows, small segments merged).
//!
//! Compaction is a policy, then a mechanism: `plan` decides from the manifest which
//! segments to rewrite and merge; after a check that the disk has room for about twice what
//! the rewrite reads, `rewrite` writes the new files; the new manifest commits them and the
//! old files go. A failure before the commit removes the files written so far.
//!
//! Compaction is generic over the segments' record batches: rows are filtered and reordered
//! with `arrow_select`, so every column a segment holds (including ones added later) is
//! carried through unchanged.

mod plan;
mod rewrite;

use std::collections::{BTreeSet, HashSet};

use crate::checksum::Checksum;
use crate::error::StoreError;
use crate::integrity::Verdict;
use crate::manifest::{sync_dir, Layout, Manifest, SEGMENTS_DIR};
use crate::meta::segment_file;
use crate::store::Store;
use crate::writer::StoreWriter;
pub use plan::CompactOptions;
use plan::{plan, CompactPlan};
use rewrite::{remove_files, ContentRewrite, NewFiles};

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
    /// Files that had no checksum (written before checksums) and have one now.
    pub checksums_recorded: u64,
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
    /// the store directory when this returns. Refused ([`StoreError::NoSpace`]) before
    /// anything is written when the disk has less free space than twice what it would read.
    ///
    /// Every file of the version is checked against its checksum first (each hashed once per
    /// process): a damaged one refuses the compaction ([`StoreError::Damaged`]) before
    /// anything is written, so no damaged row reaches a new file. Files without a checksum
    /// (written before checksums) get one in the new manifest; with nothing to rewrite, a
    /// manifest recording them is committed alone.
    pub fn compact(&mut self, opts: &CompactOptions) -> Result<CompactReport, StoreError> {
        let store = self.view()?.clone();
        let mut report = CompactReport {
            segments_before: store.segments().len(),
            bytes_before: self.manifest.bytes(),
            ..CompactReport::default()
        };
        let plan = plan(&self.manifest, opts, &column_sets(&store));
        let unrecorded = (self.manifest.all_files().iter()).any(|(_, _, c)| c.is_none());
        if plan.is_some() || unrecorded {
            check_inputs(&self.dir, &store)?;
        }
        let Some(plan) = plan else {
            if unrecorded {
                self.record_checksums(&mut report)?;
            }
            report.segments_after = report.segments_before;
            report.bytes_after = report.bytes_before;
            report.manifest_version = self.manifest.version;
            return Ok(report);
        };
        let seg_dir = self.dir.join(SEGMENTS_DIR);
        let mut files = NewFiles::new(&seg_dir);
        let (mut next, retired) = self.rewrite(&store, &plan, opts, &mut files, &mut report)?;
        report.checksums_recorded = self.fill_checksums(&mut next);
        sync_dir(&seg_dir)?;
        crate::failpoint::hit("compact-before-manifest").and_then(|()| next.save(&self.dir))?;
        for f in files.commit() {
            let checksum = next
                .all_files()
                .into_iter()
                .find(|(n, ..)| *n == segment_file(&f));
            self.note_written(&f, checksum.and_then(|(_, _, c)| c));
        }
        // committed: from here on nothing may fail the compaction, or the writer would keep a
        // manifest naming unlinked files
        self.manifest = next;
        self.view = None;
        report.segments_after = self.manifest.segments.len();
        report.bytes_after = self.manifest.bytes();
        report.manifest_version = self.manifest.version;
        if let Err(e) = crate::failpoint::hit("compact-before-cleanup") {
            tracing::warn!("compaction committed; {e}");
        }
        drop(store);
        remove_files(&seg_dir, &retired, "compaction committed; ");
        if let Err(e) = sync_dir(&seg_dir) {
            tracing::warn!("compaction committed; {e}");
        }
        Ok(report)
    }

    /// Writes the files `plan` calls for (segments, then a shared store's content files, then
    /// the word table) after checking the disk has room; returns the manifest naming them
    /// and the files it no longer names.
    fn rewrite(
        &self,
        store: &Store,
        plan: &CompactPlan,
        opts: &CompactOptions,
        files: &mut NewFiles,
        report: &mut CompactReport,
    ) -> Result<(Manifest, Vec<String>), StoreError> {
        let deleted: HashSet<u64> = self.manifest.deleted.iter().copied().collect();
        let contents = (self.manifest.layout == Layout::Shared)
            .then(|| ContentRewrite::plan(store, plan, &deleted, opts));
        let used = store.live_terms();
        let reads = plan.bytes
            + contents.as_ref().map_or(0, |c| c.bytes())
            + crate::words::rewrite_bytes(store.words(), &used);
        let what = format!("compaction (about twice the {reads} bytes it rewrites)");
        crate::disk::check_space(&self.dir, reads.saturating_mul(2), what)?;

        let mut next = self.manifest.clone();
        next.version += 1;
        next.next_id_floor = self.manifest.next_item_id();
        next.deleted = plan.deleted.clone();
        let mut ids = self.manifest.next_segment_id();
        let segments = rewrite::segments(store, plan, &deleted, files, &mut ids)?;
        next.segments = segments.segments;
        let mut retired = segments.retired;
        report.rows_removed = segments.rows_removed;
        report.segments_rewritten = plan.runs.iter().map(Vec::len).sum();
        if let Some(contents) = contents {
            let c = contents.write(files, &mut ids)?;
            next.contents = c.metas;
            retired.extend(c.retired);
            report.contents_removed = c.removed;
        }
        let words = crate::words::compact_words(store.words(), &used, files.dir(), &mut ids)?;
        if let Some(w) = words {
            w.written.into_iter().for_each(|f| files.push(f));
            retired.extend(w.retired);
            report.words_removed = w.removed;
            next.words = w.metas;
        }
        next.next_segment_id = ids;
        Ok((next, retired))
    }
}

impl StoreWriter {
    /// Commits the current version with the checksums its files lacked (computed by the
    /// check before: every file was hashed).
    fn record_checksums(&mut self, report: &mut CompactReport) -> Result<(), StoreError> {
        let mut next = self.manifest.clone();
        report.checksums_recorded = self.fill_checksums(&mut next);
        if report.checksums_recorded == 0 {
            return Ok(());
        }
        next.version += 1;
        next.save(&self.dir)?;
        self.manifest = next;
        Ok(())
    }

    /// Gives every entry of `next` without a checksum the one its bytes gave when hashed;
    /// returns how many it filled.
    fn fill_checksums(&self, next: &mut Manifest) -> u64 {
        let computed = |name: String| {
            let c = self.checks.get(&name, None).computed();
            if let Some(c) = c {
                self.checks.written(&name, c);
            }
            c
        };
        let mut filled = 0;
        let mut fill = |slot: &mut Option<Checksum>, name: String| {
            if slot.is_none() {
                *slot = computed(name);
                filled += u64::from(slot.is_some());
            }
        };
        for s in &mut next.segments {
            fill(&mut s.checksum, segment_file(&s.file));
        }
        for c in &mut next.contents {
            fill(&mut c.checksum, segment_file(&c.file));
        }
        for w in &mut next.words {
            fill(&mut w.checksum, segment_file(&w.file));
        }
        for a in next.structures.iter_mut().flat_map(|s| &mut s.segments) {
            fill(&mut a.checksum, crate::meta::aux_file(&a.file));
        }
        filled
    }
}

/// Hashes every file of `store`'s version not hashed yet; a damaged one refuses the
/// compaction before it writes anything.
fn check_inputs(dir: &std::path::Path, store: &Store) -> Result<(), StoreError> {
    let damaged: Vec<(String, String)> = (store.verify_files().into_iter())
        .filter_map(|(f, v)| match v {
            Verdict::Damaged(p) => Some((f, p)),
            _ => None,
        })
        .collect();
    let Some((first, problem)) = damaged.first() else {
        return Ok(());
    };
    let names: Vec<&str> = damaged.iter().map(|(f, _)| f.as_str()).collect();
    Err(StoreError::Damaged {
        path: dir.join(first),
        message: format!(
            "{problem}; compaction refused before writing anything ({} damaged file(s): {})",
            damaged.len(),
            names.join(", ")
        ),
    })
}

/// Each segment's column set, as an index shared by the segments with the same fields
/// (segments written before and after LSH was enabled differ by a column).
fn column_sets(store: &Store) -> Vec<usize> {
    let segments = store.segments();
    let fields = |i: usize| segments[i].batch().schema().fields().clone();
    (0..segments.len())
        .map(|i| (0..=i).find(|&j| fields(j) == fields(i)).unwrap_or(i))
        .collect()
}
