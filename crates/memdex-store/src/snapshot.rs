//! Consistent copies of a store that is being written (served) at the same time, and restoring
//! one.
//!
//! Committed files never change, and a manifest names only committed files. So: read the
//! manifest, give the copy every file it names — a hard link where the file system allows
//! (the copy shares the immutable bytes, costs no space and survives the source unlinking its
//! name), else a copy from an open handle (which keeps the bytes even if compaction unlinks
//! the name meanwhile) — then write the manifest. If compaction removed a named file before
//! it could be linked or opened, start over with the newer manifest (files already given to
//! the copy are kept when the newer version still names them). No lock is taken; the writer
//! is never blocked. The copy is then opened and every file checked against its checksum.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::path::Path;

use serde::Serialize;

use crate::error::{io as io_err, StoreError};
use crate::integrity::Verdict;
use crate::manifest::{sync_dir, Manifest, MANIFEST, SEGMENTS_DIR};
use crate::meta::STRUCTURES_DIR;
use crate::store::Store;

/// How to take a snapshot.
#[derive(Debug, Clone, Copy, Default)]
pub struct SnapshotOptions {
    /// Copy every byte, never hard-link: the copy then shares no disk blocks with the store
    /// (a backup to move elsewhere; a hard link is the same bytes on the same disk).
    pub copy: bool,
}

/// What a snapshot did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SnapshotReport {
    /// The manifest version copied: the copy is exactly that version.
    pub manifest_version: u64,
    /// Files the version names (its manifest besides).
    pub files: usize,
    /// Files shared with the store by hard link.
    pub linked: usize,
    /// Files copied byte for byte (hard links refused, or `copy` asked).
    pub copied: usize,
    pub bytes_copied: u64,
    /// Bytes of every file of the version.
    pub bytes: u64,
    /// Times a concurrent compaction made it start over with a newer manifest.
    pub restarts: usize,
    /// Files of the copy checked against a recorded checksum (the others were written before
    /// checksums: size and structure only).
    pub verified: usize,
    pub unrecorded: usize,
}

/// Copies the latest committed version of the store in `dir` to `out` (created; must not
/// hold a store yet), then opens the copy and checks every file of it. A copy whose files
/// do not all check out is an error naming them (and the copy is removed again).
pub fn snapshot(
    dir: &Path,
    out: &Path,
    opts: &SnapshotOptions,
) -> Result<SnapshotReport, StoreError> {
    let empty = fs::read_dir(out).map_or(true, |mut d| d.next().is_none());
    if !empty {
        return Err(StoreError::Exists {
            dir: out.to_path_buf(),
        });
    }
    let taken = take(dir, out, opts).and_then(|r| check_copy(out, r));
    if taken.is_err() {
        // what this call put there (the directory was new or empty)
        for sub in [SEGMENTS_DIR, STRUCTURES_DIR] {
            let _ = fs::remove_dir_all(out.join(sub));
        }
        let _ = fs::remove_file(out.join(MANIFEST));
    }
    taken
}

fn take(dir: &Path, out: &Path, opts: &SnapshotOptions) -> Result<SnapshotReport, StoreError> {
    fs::create_dir_all(out.join(SEGMENTS_DIR)).map_err(io_err(out.join(SEGMENTS_DIR)))?;
    let mut report = SnapshotReport::default();
    let mut have: HashSet<String> = HashSet::new();
    for attempt in 0.. {
        let manifest = Manifest::load(dir)?;
        let files = manifest.all_files();
        match give_files(dir, out, &files, &mut have, opts, &mut report) {
            Err(e) if e.is_missing_file() && attempt < 100 => {
                tracing::info!("a file was compacted away while snapshotting; retrying");
                report.restarts += 1;
                continue;
            }
            other => other?,
        }
        // files an earlier attempt gave that this version does not name
        let named: HashSet<&str> = files.iter().map(|(f, ..)| f.as_str()).collect();
        for stale in have.iter().filter(|f| !named.contains(f.as_str())) {
            fs::remove_file(out.join(stale)).map_err(io_err(out.join(stale)))?;
        }
        for sub in [SEGMENTS_DIR, STRUCTURES_DIR].map(|s| out.join(s)) {
            if sub.exists() {
                sync_dir(&sub)?;
            }
        }
        manifest.save(out)?;
        report.manifest_version = manifest.version;
        report.files = files.len();
        report.bytes = files.iter().map(|(_, b, _)| b).sum();
        return Ok(report);
    }
    unreachable!("the loop returns")
}

/// Gives `out` each of `files` it does not have yet: a hard link, else a copy.
fn give_files(
    dir: &Path,
    out: &Path,
    files: &[(String, u64, Option<crate::Checksum>)],
    have: &mut HashSet<String>,
    opts: &SnapshotOptions,
    report: &mut SnapshotReport,
) -> Result<(), StoreError> {
    for (name, bytes, _) in files {
        if have.contains(name) {
            continue;
        }
        let (src, dst) = (dir.join(name), out.join(name));
        if let Some(parent) = dst.parent().filter(|p| !p.exists()) {
            fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        let linked = !opts.copy && fs::hard_link(&src, &dst).is_ok();
        if linked {
            report.linked += 1;
        } else {
            copy_file(&src, &dst)?;
            report.copied += 1;
            report.bytes_copied += bytes;
        }
        have.insert(name.clone());
    }
    Ok(())
}

/// Copies `src` to `dst` from an open handle, durably.
fn copy_file(src: &Path, dst: &Path) -> Result<(), StoreError> {
    let mut f = File::open(src).map_err(io_err(src))?;
    let mut w = File::create(dst).map_err(io_err(dst))?;
    let copied = io::copy(&mut f, &mut w).and_then(|_| w.sync_all());
    if let Err(e) = copied {
        drop(w);
        let _ = fs::remove_file(dst);
        return Err(io_err(dst)(e));
    }
    Ok(())
}

/// Opens the copy and checks every file of it; damage is an error naming the files.
fn check_copy(out: &Path, mut report: SnapshotReport) -> Result<SnapshotReport, StoreError> {
    let copy = Store::open(out)?;
    let mut damaged = Vec::new();
    for (file, verdict) in copy.verify_files() {
        match verdict {
            Verdict::Intact => report.verified += 1,
            Verdict::Unrecorded => report.unrecorded += 1,
            Verdict::Damaged(problem) => damaged.push(format!("{file}: {problem}")),
        }
    }
    match damaged.first() {
        None => Ok(report),
        Some(_) => Err(StoreError::Damaged {
            path: out.to_path_buf(),
            message: format!(
                "the snapshot's files do not check out, so the store's do not either ({}); \
                 the copy was removed",
                damaged.join("; ")
            ),
        }),
    }
}
