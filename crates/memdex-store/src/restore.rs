//! `memdex restore`: a store put back from a snapshot, under the writer's lock (no server may
//! hold the store meanwhile). Two ways:
//!
//! * **replace** (the default): the store becomes the snapshot's version. Files it already
//!   holds with the snapshot's checksum stay; the others are copied from the snapshot; files
//!   the version does not name are removed. What was written after the snapshot is gone. The
//!   version number and the id counters move forward, never back.
//! * **repair**: the store keeps its own version; only its damaged or missing files are
//!   copied from the snapshot, each only when the snapshot holds the same file (same name and
//!   recorded checksum: file names are never reused within a store). Nothing is lost when
//!   every damaged file is in the snapshot.
//!
//! Either way the snapshot is checked first (every file against its checksum) and the store
//! after.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::path::Path;

use serde::Serialize;

use crate::checksum::Checksum;
use crate::error::{io as io_err, StoreError};
use crate::manifest::{sync_dir, Manifest, SEGMENTS_DIR};
use crate::meta::STRUCTURES_DIR;
use crate::verify::verify;

/// How to restore.
#[derive(Debug, Clone, Copy, Default)]
pub struct RestoreOptions {
    /// Replace only the store's damaged or missing files (see the module docs).
    pub repair: bool,
}

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RestoreReport {
    /// `replace` or `repair`.
    pub mode: String,
    pub snapshot_version: u64,
    /// The store's manifest version now.
    pub manifest_version: u64,
    /// Files copied from the snapshot.
    pub copied: Vec<String>,
    pub bytes_copied: u64,
    /// Files the store already held with the snapshot's checksum.
    pub kept: usize,
    /// Files the restored version does not name, removed.
    pub removed: usize,
}

/// Restores the store in `dir` (created when missing) from the snapshot in `snapshot`.
pub fn restore(
    snapshot: &Path,
    dir: &Path,
    opts: &RestoreOptions,
) -> Result<RestoreReport, StoreError> {
    let snap = verify(snapshot)?;
    if let Some(bad) = snap.damaged_files().next() {
        return Err(StoreError::Damaged {
            path: snapshot.join(&bad.file),
            message: format!(
                "the snapshot does not check out ({} damaged file(s)); nothing was restored",
                snap.damaged
            ),
        });
    }
    let from = Manifest::load(snapshot)?;
    fs::create_dir_all(dir.join(SEGMENTS_DIR)).map_err(io_err(dir))?;
    let _lock = crate::writer::lock_store(dir)?;
    let mut report = RestoreReport {
        snapshot_version: from.version,
        ..RestoreReport::default()
    };
    if opts.repair {
        repair(snapshot, dir, &from, &mut report)?;
    } else {
        replace(snapshot, dir, from, &mut report)?;
    }
    let after = verify(dir)?;
    let Some(bad) = after.damaged_files().next() else {
        return Ok(report);
    };
    Err(StoreError::Damaged {
        path: dir.join(&bad.file),
        message: format!(
            "{} file(s) still damaged after the {} ({}); the files copied stay",
            after.damaged,
            report.mode,
            bad.problem.as_deref().unwrap_or("damaged")
        ),
    })
}

/// The store becomes `from`'s version (see the module docs).
fn replace(
    snapshot: &Path,
    dir: &Path,
    mut from: Manifest,
    report: &mut RestoreReport,
) -> Result<(), StoreError> {
    report.mode = "replace".into();
    let current = Manifest::load(dir).ok();
    for (name, _, recorded) in from.all_files() {
        let dst = dir.join(&name);
        let same = recorded.is_some() && Checksum::of_file(&dst).ok() == recorded;
        if same {
            report.kept += 1;
        } else {
            report.bytes_copied += copy_over(&snapshot.join(&name), &dst)?;
            report.copied.push(name);
        }
    }
    let on_disk = highest_file_id(dir)?;
    from.version = from.version.max(current.as_ref().map_or(0, |m| m.version)) + 1;
    from.next_segment_id = (from.next_segment_id())
        .max(current.as_ref().map_or(0, Manifest::next_segment_id))
        .max(on_disk + 1);
    from.next_id_floor =
        (from.next_item_id()).max(current.as_ref().map_or(0, Manifest::next_item_id));
    from.save(dir)?;
    report.manifest_version = from.version;
    report.removed = remove_unnamed(dir, &from)?;
    Ok(())
}

/// Copies the store's damaged files that `from` holds the same of (see the module docs).
fn repair(
    snapshot: &Path,
    dir: &Path,
    from: &Manifest,
    report: &mut RestoreReport,
) -> Result<(), StoreError> {
    report.mode = "repair".into();
    let current = Manifest::load(dir)?;
    let found = verify(dir)?;
    let theirs = from.all_files();
    for bad in found.damaged_files() {
        let mine = current
            .all_files()
            .into_iter()
            .find(|(f, ..)| *f == bad.file);
        let recorded = mine.and_then(|(_, _, c)| c);
        let same = (theirs.iter()).any(|(f, _, c)| *f == bad.file && c.is_some() && *c == recorded);
        if same {
            report.bytes_copied += copy_over(&snapshot.join(&bad.file), &dir.join(&bad.file))?;
            report.copied.push(bad.file.clone());
        }
    }
    report.manifest_version = current.version;
    Ok(())
}

/// Copies `src` over `dst` (temp, fsync, rename, fsync the directory); returns the bytes.
fn copy_over(src: &Path, dst: &Path) -> Result<u64, StoreError> {
    let parent = dst.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(io_err(parent))?;
    let tmp = dst.with_extension("arrow.restore");
    let copied = (|| {
        let mut f = File::open(src).map_err(io_err(src))?;
        let mut w = File::create(&tmp).map_err(io_err(&tmp))?;
        let n = io::copy(&mut f, &mut w).map_err(io_err(&tmp))?;
        w.sync_all().map_err(io_err(&tmp))?;
        fs::rename(&tmp, dst).map_err(io_err(dst))?;
        Ok(n)
    })();
    if copied.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    let n = copied?;
    sync_dir(parent)?;
    Ok(n)
}

/// The highest id in any file name under `segments/` and `structures/` (0: none).
fn highest_file_id(dir: &Path) -> Result<u64, StoreError> {
    let mut top = 0;
    for sub in [SEGMENTS_DIR, STRUCTURES_DIR] {
        let Ok(entries) = fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries {
            let name = e.map_err(io_err(dir.join(sub)))?.file_name();
            let digits: String = (name.to_string_lossy().chars())
                .filter(char::is_ascii_digit)
                .collect();
            top = top.max(digits.parse::<u64>().unwrap_or(0));
        }
    }
    Ok(top)
}

/// Removes the files under `segments/` and `structures/` that `m` does not name.
fn remove_unnamed(dir: &Path, m: &Manifest) -> Result<usize, StoreError> {
    let named: HashSet<String> = m.all_files().into_iter().map(|(f, ..)| f).collect();
    let mut removed = 0;
    for sub in [SEGMENTS_DIR, STRUCTURES_DIR] {
        let Ok(entries) = fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries {
            let e = e.map_err(io_err(dir.join(sub)))?;
            let name = format!("{sub}/{}", e.file_name().to_string_lossy());
            if !named.contains(&name) {
                fs::remove_file(e.path()).map_err(io_err(e.path()))?;
                removed += 1;
            }
        }
        sync_dir(&dir.join(sub))?;
    }
    Ok(removed)
}
