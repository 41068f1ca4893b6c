//! How the fast CPU encoder spreads a bulk job over the CPU's threads.
//!
//! Two ways (`MEMDEX_CPU_SPLIT`, or [`crate::EmbedOptions::cpu_split`]):
//! - [`CpuSplit::Operators`]: one batch at a time, each step of its pass (GEMM row blocks,
//!   attention per sequence) split across all threads. The threads meet after every step
//!   (~50 per layer-stack pass), so one descheduled thread stalls the other.
//! - [`CpuSplit::Batches`] (default): each thread runs whole batches alone, on a rayon pool of
//!   its own with one thread, taking the next batch (longest first) when it finishes one.
//!   No step waits for another thread; each thread's batch is the job's token budget divided
//!   among the threads, so memory stays that of one full batch.
//!
//! A job of one batch (a query, a small append) always runs split by operators: batches side
//! by side need at least two.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::error::EmbedError;

/// The environment variable that overrides the default split.
pub const SPLIT_ENV: &str = "MEMDEX_CPU_SPLIT";

/// How a bulk embedding job uses the CPU's threads (fast CPU encoder only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum CpuSplit {
    /// Each thread runs whole batches alone; no synchronisation inside a pass.
    #[default]
    Batches,
    /// One batch at a time, every step of its pass split across all threads.
    Operators,
}

impl CpuSplit {
    pub fn name(self) -> &'static str {
        match self {
            CpuSplit::Batches => "batches",
            CpuSplit::Operators => "operators",
        }
    }

    /// `MEMDEX_CPU_SPLIT` (`batches`, `operators`; empty or `auto` = the default).
    pub fn from_env() -> Result<CpuSplit, EmbedError> {
        let value = std::env::var(SPLIT_ENV).unwrap_or_default();
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(CpuSplit::default()),
            "batches" | "batch" => Ok(CpuSplit::Batches),
            "operators" | "ops" => Ok(CpuSplit::Operators),
            _ => Err(EmbedError::Setting {
                name: SPLIT_ENV,
                message: format!("{value:?}: use batches, operators or auto"),
            }),
        }
    }
}

impl std::fmt::Display for CpuSplit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Runs `jobs` jobs on `workers` threads, each with a one-thread rayon pool of its own (so
/// the kernels' parallel loops stay on it), jobs taken in index order as threads free up.
/// `done` sees each result on the calling thread as it arrives. The first error stops the
/// workers after the jobs they are running and is returned.
pub(crate) fn run_side_by_side<T: Send>(
    workers: usize,
    jobs: usize,
    work: impl Fn(usize) -> Result<T, EmbedError> + Sync,
    mut done: impl FnMut(usize, T),
) -> Result<(), EmbedError> {
    let pools = (0..workers.clamp(1, jobs.max(1)))
        .map(|i| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(move |_| format!("memdex-embed-{i}"))
                .build()
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| EmbedError::Setting {
            name: "threads",
            message: format!("cannot start the encoder's worker threads: {e}"),
        })?;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel();
    let mut first_err = None;
    std::thread::scope(|scope| {
        for pool in &pools {
            let (tx, next, stop, work) = (tx.clone(), &next, &stop, &work);
            scope.spawn(move || {
                pool.install(|| loop {
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    if j >= jobs || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let r = work(j);
                    let failed = r.is_err();
                    if tx.send((j, r)).is_err() || failed {
                        break;
                    }
                })
            });
        }
        drop(tx);
        for (j, r) in rx {
            match r {
                Ok(v) if first_err.is_none() => done(j, v),
                Ok(_) => {}
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    first_err.get_or_insert(e);
                }
            }
        }
    });
    first_err.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_once_and_on_single_thread_pools() {
        let mut seen = vec![0usize; 37];
        run_side_by_side(
            3,
            37,
            |j| Ok((j, rayon::current_num_threads())),
            |j, (k, threads)| {
                assert_eq!(j, k);
                assert_eq!(threads, 1, "a worker's kernels must not fan out");
                seen[j] += 1;
            },
        )
        .unwrap();
        assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
        run_side_by_side(4, 0, |_| Ok(()), |_, _| panic!("no jobs")).unwrap();
    }

    #[test]
    fn the_first_error_stops_the_job() {
        let mut ok = 0;
        let err = run_side_by_side(
            2,
            1_000,
            |j| {
                if j == 5 {
                    Err(EmbedError::Tokenize {
                        index: j,
                        message: "bad".into(),
                    })
                } else {
                    Ok(j)
                }
            },
            |_, _| ok += 1,
        )
        .unwrap_err();
        assert!(err.to_string().contains("input 5"), "{err}");
        assert!(ok < 1_000);
    }
}
