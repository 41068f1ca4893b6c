//! The driver: mutate inputs from a corpus (the seeds, plus every input that behaved in a way
//! not seen before), run the harness under `catch_unwind`, collect panics as crashes.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use crate::mutate::mutate;
use crate::rng::Rng;
use crate::targets::Target;

/// Inputs kept at most (seeds included).
const MAX_CORPUS: usize = 4096;

/// How long a run lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// This many executions (deterministic: `cargo test`'s short pass).
    Execs(u64),
    /// This much wall-clock time (`scripts/fuzz.sh`).
    Time(Duration),
}

/// An input that made the harness panic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crash {
    pub input: Vec<u8>,
    /// `file:line:col: message` of the panic.
    pub message: String,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub execs: u64,
    /// Distinct crashes (by panic location), first input of each.
    pub crashes: Vec<Crash>,
    /// Inputs kept for behaving in a new way, seeds included.
    pub corpus: usize,
    pub slowest: Duration,
}

thread_local! {
    static IN_HARNESS: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Panics inside a harness are recorded quietly; any other panic (a failing test) goes to the
/// previous hook.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if IN_HARNESS.with(Cell::get) {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                    .unwrap_or_default();
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                LAST_PANIC.with(|p| *p.borrow_mut() = format!("{at}: {msg}"));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs one input: the signature, or the panic's `location: message`.
pub fn run_one(t: &Target, input: &[u8]) -> Result<u64, String> {
    install_hook();
    IN_HARNESS.with(|f| f.set(true));
    let r = panic::catch_unwind(AssertUnwindSafe(|| (t.run)(input)));
    IN_HARNESS.with(|f| f.set(false));
    r.map_err(|_| LAST_PANIC.with(|p| p.borrow().clone()))
}

/// The panic location (`file:line:col`) of a crash message, its identity.
fn location(message: &str) -> &str {
    message.split(": ").next().unwrap_or(message)
}

/// Watches a run from another thread: the input in flight and when it started.
#[derive(Debug, Default)]
pub struct Watch {
    started_ms: AtomicU64,
    input: Mutex<Vec<u8>>,
}

impl Watch {
    /// The input in flight and how long it has run, if one has.
    pub fn in_flight(&self, epoch: Instant) -> Option<(Duration, Vec<u8>)> {
        let s = self.started_ms.load(Ordering::Relaxed);
        if s == 0 {
            return None;
        }
        let now = epoch.elapsed().as_millis() as u64;
        let input = self.input.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Some((Duration::from_millis(now.saturating_sub(s)), input))
    }
}

/// Fuzzes `t` from its seeds for `budget`, reproducibly from `seed` under `Budget::Execs`.
/// `watch` (with the instant its times count from) lets another thread spot an input that
/// never finishes.
pub fn fuzz(
    t: &Target,
    budget: Budget,
    seed: u64,
    watch: Option<(&Arc<Watch>, Instant)>,
) -> Outcome {
    let mut rng = Rng::new(seed);
    let mut corpus: Vec<Vec<u8>> = (t.seeds)();
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    let seeds = corpus.len();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut out = Outcome::default();
    let mut crash_sites: HashSet<String> = HashSet::new();
    let mut record = |input: &[u8], msg: String, out: &mut Outcome| {
        if crash_sites.insert(location(&msg).to_string()) {
            out.crashes.push(Crash {
                input: input.to_vec(),
                message: msg,
            });
        }
    };
    for s in corpus.clone() {
        match run_one(t, &s) {
            Ok(sig) => {
                seen.insert(sig);
            }
            Err(msg) => record(&s, msg, &mut out),
        }
    }
    let start = Instant::now();
    loop {
        let more = match budget {
            Budget::Execs(n) => out.execs < n,
            Budget::Time(d) => start.elapsed() < d,
        };
        if !more {
            break;
        }
        // recent finds are mutated more often than old ones
        let parent = if rng.one_in(2) {
            corpus.len() - 1 - rng.small(corpus.len() - 1)
        } else {
            rng.below(corpus.len())
        };
        let donors: Vec<&[u8]> = (0..3)
            .filter_map(|_| corpus.get(rng.below(corpus.len())).map(Vec::as_slice))
            .collect();
        let child = mutate(&corpus[parent], t.shape, &mut rng, &donors);
        if let Some((w, epoch)) = watch {
            *w.input.lock().unwrap_or_else(|p| p.into_inner()) = child.clone();
            w.started_ms
                .store(epoch.elapsed().as_millis() as u64 + 1, Ordering::Relaxed);
        }
        let t0 = Instant::now();
        let r = run_one(t, &child);
        out.slowest = out.slowest.max(t0.elapsed());
        if let Some((w, _)) = watch {
            w.started_ms.store(0, Ordering::Relaxed);
        }
        out.execs += 1;
        match r {
            Ok(sig) => {
                if seen.insert(sig) {
                    if corpus.len() < MAX_CORPUS {
                        corpus.push(child);
                    } else {
                        // full: a new behaviour replaces a random non-seed input
                        let i = seeds + rng.below(corpus.len() - seeds);
                        corpus[i] = child;
                    }
                }
            }
            Err(msg) => record(&child, msg, &mut out),
        }
    }
    out.corpus = corpus.len();
    out
}

/// A smaller input that still panics at the same place, within `max_runs` executions:
/// halving chunk removal, then every run of up to 16 bytes at every offset, until nothing
/// more can go.
pub fn minimize(t: &Target, crash: &Crash, max_runs: usize) -> Vec<u8> {
    let site = location(&crash.message).to_string();
    let runs = Cell::new(0usize);
    let still = |b: &[u8]| {
        runs.set(runs.get() + 1);
        matches!(run_one(t, b), Err(m) if location(&m) == site)
    };
    let without = |b: &[u8], i: usize, n: usize| {
        let mut c = b[..i].to_vec();
        c.extend_from_slice(&b[(i + n).min(b.len())..]);
        c
    };
    let mut best = crash.input.clone();
    loop {
        let before = best.len();
        let mut chunk = best.len() / 2;
        while chunk > 16 {
            let mut i = 0;
            while i < best.len() && runs.get() < max_runs {
                let cand = without(&best, i, chunk);
                if still(&cand) {
                    best = cand;
                } else {
                    i += chunk;
                }
            }
            chunk /= 2;
        }
        for n in (1..=16).rev() {
            let mut i = 0;
            while i + n <= best.len() {
                let cand = without(&best, i, n);
                if still(&cand) {
                    best = cand;
                } else {
                    i += 1;
                }
                if runs.get() >= max_runs {
                    return best;
                }
            }
        }
        if best.len() == before || runs.get() >= max_runs {
            return best;
        }
    }
}
