//! The engine's pass over the store's files at start (see `memdex_store`'s `integrity`):
//! opening hashed only the small files, so the others are hashed here — in the background
//! while the engine serves (a file a search needs first is hashed by that search), or before
//! the engine starts at all. A damaged file leaves every search once found; before start,
//! damage refuses the start.

use std::time::Instant;

use memdex_store::{Store, StoreError, Verdict};

use crate::RuntimeError;

/// When the engine hashes the store's files that opening did not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StartVerify {
    /// On a thread of its own once the engine runs (the default).
    #[default]
    Background,
    /// Before the engine starts; a damaged file refuses the start (`memdex serve
    /// --verify-on-start`).
    Before,
    /// Only as searches and compactions need them.
    Off,
}

/// Runs the pass over `store` as `mode` says.
pub(crate) fn at_start(store: &Store, mode: StartVerify) -> Result<(), RuntimeError> {
    match mode {
        StartVerify::Off => Ok(()),
        StartVerify::Before => match pass(store).into_iter().next() {
            None => Ok(()),
            Some((file, problem)) => Err(RuntimeError::from(memdex_pipeline::PipelineError::from(
                StoreError::Damaged {
                    path: store.dir().join(file),
                    message: format!("{problem}; the server does not start on a damaged store"),
                },
            ))),
        },
        StartVerify::Background => {
            let store = store.clone();
            let spawned = std::thread::Builder::new()
                .name("memdex-verify".into())
                .spawn(move || drop(pass(&store)));
            if let Err(e) = spawned {
                tracing::warn!("store verification thread not started: {e}");
            }
            Ok(())
        }
    }
}

/// Hashes every file of `store` not hashed yet; returns the damaged ones.
fn pass(store: &Store) -> Vec<(String, String)> {
    let start = Instant::now();
    let verdicts = store.verify_files();
    let damaged: Vec<(String, String)> = (verdicts.iter())
        .filter_map(|(f, v)| match v {
            Verdict::Damaged(p) => Some((f.clone(), p.clone())),
            _ => None,
        })
        .collect();
    let unrecorded = (verdicts.iter())
        .filter(|(_, v)| *v == Verdict::Unrecorded)
        .count();
    tracing::info!(
        "{}: {} files checked in {:.2} s: {} damaged, {unrecorded} without a recorded checksum",
        store.dir().display(),
        verdicts.len(),
        start.elapsed().as_secs_f64(),
        damaged.len()
    );
    damaged
}
