//! Crash and failure injection for the tests, compiled in only with the `failpoints` feature
//! (never in a release build of the library). `MEMDEX_FAIL_POINT=NAME` aborts the process
//! when the writer reaches point NAME; `NAME:enospc` makes that point fail with "no space
//! left on device" instead; `MEMDEX_FAIL_AFTER=K` fires on the K-th time the point is reached
//! (default 1).
//!
//! Points: `before-manifest` (a segment file is durable, no manifest names it),
//! `before-tombstones` (a delete's manifest not yet written), `compact-before-manifest` (the
//! rewritten segments are durable, the manifest still names the old ones),
//! `compact-before-cleanup` (the new manifest is committed, the old files not yet removed).

use crate::StoreError;

#[cfg(feature = "failpoints")]
pub(crate) fn hit(name: &str) -> Result<(), StoreError> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static HITS: AtomicUsize = AtomicUsize::new(0);
    let Ok(spec) = std::env::var("MEMDEX_FAIL_POINT") else {
        return Ok(());
    };
    let (point, mode) = spec.split_once(':').unwrap_or((spec.as_str(), "abort"));
    if point != name {
        return Ok(());
    }
    let after: usize = std::env::var("MEMDEX_FAIL_AFTER")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(1);
    if HITS.fetch_add(1, Ordering::SeqCst) + 1 != after {
        return Ok(());
    }
    if mode == "enospc" {
        return Err(StoreError::Io {
            path: format!("(fail point {name})").into(),
            source: std::io::Error::from(std::io::ErrorKind::StorageFull),
        });
    }
    eprintln!("memdex: fail point {name} reached; aborting");
    std::process::abort();
}

#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn hit(_name: &str) -> Result<(), StoreError> {
    Ok(())
}
