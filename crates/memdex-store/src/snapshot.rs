//! Consistent copies of a store that is being written (served) at the same time.
//!
//! Committed segment files never change, and a manifest names only committed files. So: read
//! the manifest, open every segment file it names (an open handle keeps the data even if
//! compaction unlinks the name afterwards), copy the files from the handles, then write the
//! manifest. If compaction removed a named file before it could be opened, start over with
//! the newer manifest. No lock is taken; the writer is never blocked.

use std::fs::{self, File};
use std::io;
use std::path::Path;

use crate::error::{io as io_err, StoreError};
use crate::manifest::{write_durably, Manifest, MANIFEST, SEGMENTS_DIR};

/// Copies the latest committed version of the store in `dir` to `out` (created; must not
/// hold a store yet). Returns the manifest version copied.
pub fn snapshot(dir: &Path, out: &Path) -> Result<u64, StoreError> {
    if out.join(MANIFEST).exists() {
        return Err(StoreError::InvalidAppend {
            message: format!("{}: already holds a store", out.display()),
        });
    }
    let seg_out = out.join(SEGMENTS_DIR);
    fs::create_dir_all(&seg_out).map_err(io_err(&seg_out))?;
    for attempt in 0.. {
        let manifest = Manifest::load(dir)?;
        let mut handles = Vec::with_capacity(manifest.segments.len());
        let mut vanished = false;
        for file in manifest.files() {
            let p = dir.join(SEGMENTS_DIR).join(file);
            match File::open(&p) {
                Ok(f) => handles.push((f, file.to_string())),
                Err(e) if e.kind() == io::ErrorKind::NotFound && attempt < 100 => {
                    vanished = true;
                    break;
                }
                Err(e) => return Err(io_err(&p)(e)),
            }
        }
        if vanished {
            tracing::info!("a segment was compacted away while snapshotting; retrying");
            continue;
        }
        for (mut f, name) in handles {
            let dst = seg_out.join(&name);
            let mut w = File::create(&dst).map_err(io_err(&dst))?;
            io::copy(&mut f, &mut w).map_err(io_err(&dst))?;
            w.sync_all().map_err(io_err(&dst))?;
        }
        crate::manifest::sync_dir(&seg_out)?;
        if let Some(meta) = &manifest.structures {
            if copy_structures(dir, out, meta, attempt)? {
                continue;
            }
        }
        let json = serde_json::to_vec_pretty(&manifest).map_err(|e| StoreError::Manifest {
            path: out.join(MANIFEST),
            message: e.to_string(),
        })?;
        write_durably(
            &out.join(format!("{MANIFEST}.tmp")),
            &out.join(MANIFEST),
            &json,
        )?;
        return Ok(manifest.version);
    }
    unreachable!("the loop returns")
}

/// Copies the structure segments `meta` names; `true` when one vanished (a concurrent
/// rewrite): the caller starts over with the newer manifest.
fn copy_structures(
    dir: &Path,
    out: &Path,
    meta: &crate::meta::StructuresMeta,
    attempt: usize,
) -> Result<bool, StoreError> {
    let aux_out = out.join(crate::structure_segments::STRUCTURES_DIR);
    fs::create_dir_all(&aux_out).map_err(io_err(&aux_out))?;
    for rel in crate::structure_segments::files(meta) {
        let (src, dst) = (dir.join(&rel), out.join(&rel));
        let mut f = match File::open(&src) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound && attempt < 100 => return Ok(true),
            Err(e) => return Err(io_err(&src)(e)),
        };
        let mut w = File::create(&dst).map_err(io_err(&dst))?;
        io::copy(&mut f, &mut w).map_err(io_err(&dst))?;
        w.sync_all().map_err(io_err(&dst))?;
    }
    crate::manifest::sync_dir(&aux_out)?;
    Ok(false)
}
