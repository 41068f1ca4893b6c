//! How many model workers an engine keeps when it measures (`EngineOptions::measure_model_workers`,
//! `memdex serve --model-workers auto`, the default): on an accelerator it loads copies of the
//! encoder up to the maximum and, at start, times query-sized warm-up batches with one worker,
//! then two side by side, and so on; it keeps a further worker only while it raises the batch
//! rate by at least [`GAIN`]. So two workers are never kept slower than one (the H200 served
//! 3,327 searches/s with two candle workers against 9,861 with one). On the CPU one worker:
//! the encoder already spreads a batch over every core.

use std::time::Instant;

use memdex_core::TextKind;
use memdex_embed::Encoder;

/// A further worker is kept when the measured batch rate grows by at least this factor.
pub const GAIN: f64 = 1.10;
/// Timed batches per worker and round.
const BATCHES: usize = 12;

/// What the start-up measurement found: batches per second with 1, 2, … workers, and how many
/// were kept.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerMeasure {
    pub rates: Vec<f64>,
    pub kept: usize,
}

/// A query-sized batch: 32 short questions (~14 tokens each), as serving batches them.
fn probe() -> Vec<String> {
    (0..32)
        .map(|i| {
            format!(
                "what did my sister say about the trip to lisbon in week {i} and who came along"
            )
        })
        .collect()
}

/// `first` and, on an accelerator, up to `max - 1` copies of it, kept as the measurement says.
/// A copy that cannot be made or loaded leaves the workers measured so far (logged).
pub(crate) fn measured_encoders(
    first: Box<dyn Encoder>,
    max: usize,
) -> (Vec<Box<dyn Encoder>>, Option<WorkerMeasure>) {
    if !first.is_accelerator() || max <= 1 {
        return (vec![first], None);
    }
    let mut all = vec![first];
    for i in 1..max {
        match all[0].replica() {
            Some(Ok(r)) if r.info() == all[0].info() => all.push(r),
            Some(Ok(_)) => tracing::warn!("model worker {i}'s copy is another model; not used"),
            Some(Err(e)) => tracing::warn!("model worker {i}'s copy did not load ({e})"),
            None => {}
        }
        if all.len() <= i {
            break;
        }
    }
    let (kept, m) = keep_faster(all);
    (kept, Some(m))
}

/// Times `encoders` 1, 2, … at a time on the probe batch (each warmed first) and keeps the
/// first count that a further worker does not speed up by [`GAIN`].
pub(crate) fn keep_faster(
    encoders: Vec<Box<dyn Encoder>>,
) -> (Vec<Box<dyn Encoder>>, WorkerMeasure) {
    let texts = probe();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for e in &encoders {
        // warm-up: allocator, a graph per bucket, caches
        for _ in 0..2 {
            let _ = e.embed(&refs, TextKind::Query);
        }
    }
    let mut pool = encoders;
    let mut rates: Vec<f64> = Vec::new();
    let mut kept = 1;
    for n in 1..=pool.len() {
        let rest = pool.split_off(n);
        let (front, r) = rate(pool, &refs);
        pool = front;
        pool.extend(rest);
        rates.push(r);
        if n > 1 && r < rates[n - 2] * GAIN {
            break;
        }
        kept = n;
    }
    pool.truncate(kept.min(pool.len()).max(1));
    let m = WorkerMeasure {
        rates,
        kept: pool.len(),
    };
    tracing::info!(
        "model workers: {} batches/s with 1, 2, … workers side by side (query batches of 32); \
         keeping {}",
        m.rates
            .iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(", "),
        m.kept
    );
    (pool, m)
}

/// Batches per second of `workers` embedding [`BATCHES`] probe batches each, side by side (each
/// encoder moved to a thread of its own and back); the better of two rounds. A worker whose
/// thread panicked is not returned.
fn rate(workers: Vec<Box<dyn Encoder>>, texts: &[&str]) -> (Vec<Box<dyn Encoder>>, f64) {
    let round = |workers: Vec<Box<dyn Encoder>>| {
        let n = workers.len();
        let start = Instant::now();
        let back: Vec<Box<dyn Encoder>> = std::thread::scope(|s| {
            let threads: Vec<_> = (workers.into_iter())
                .map(|w| {
                    s.spawn(move || {
                        for _ in 0..BATCHES {
                            let _ = w.embed(texts, TextKind::Query);
                        }
                        w
                    })
                })
                .collect();
            threads.into_iter().filter_map(|t| t.join().ok()).collect()
        });
        let r = (n * BATCHES) as f64 / start.elapsed().as_secs_f64().max(1e-9);
        (back, r)
    };
    let (workers, a) = round(workers);
    let (workers, b) = round(workers);
    (workers, a.max(b))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use memdex_embed::EmbedError;
    use memdex_testkit::{HookedEncoder, Replicas};

    use super::*;

    /// A batch's device time: long beside the host work around it (hashing 32 texts, a
    /// thread's wake-up on a loaded machine), so the rates compare the devices.
    const BUSY: Duration = Duration::from_millis(30);

    /// An encoder on a pretend accelerator whose every batch takes [`BUSY`]; with `lock`, its
    /// copies hold that lock over the whole call (as batches serialised on one device stream
    /// would), so two of them can never beat one but by noise.
    #[derive(Debug)]
    struct Device {
        inner: Box<dyn Encoder>,
        lock: Option<Arc<Mutex<()>>>,
    }

    impl Encoder for Device {
        fn info(&self) -> &memdex_core::ModelInfo {
            self.inner.info()
        }
        fn device(&self) -> String {
            "cuda:0".into()
        }
        fn is_accelerator(&self) -> bool {
            true
        }
        fn backend(&self) -> &'static str {
            self.inner.backend()
        }
        fn max_batch_tokens(&self) -> usize {
            self.inner.max_batch_tokens()
        }
        fn embed_with_progress(
            &self,
            texts: &[&str],
            kind: TextKind,
            progress: &mut dyn FnMut(usize),
        ) -> Result<memdex_embed::Embeddings, EmbedError> {
            let _held = self
                .lock
                .as_ref()
                .map(|l| l.lock().unwrap_or_else(|p| p.into_inner()));
            std::thread::sleep(BUSY);
            self.inner.embed_with_progress(texts, kind, progress)
        }
        fn replica(&self) -> Option<Result<Box<dyn Encoder>, EmbedError>> {
            let lock = self.lock.clone();
            let r = self.inner.replica()?;
            Some(r.map(|inner| Box::new(Device { inner, lock }) as Box<dyn Encoder>))
        }
    }

    /// A device encoder whose copies load (`Replicas::Clones`) or fail to (`Replicas::Fail`).
    fn device(serialised: bool, replicas: Replicas) -> Box<dyn Encoder> {
        let mut inner = HookedEncoder::new(8, "hooked", |_: &[&str], _: TextKind| Ok(()));
        inner.replicas = replicas;
        let lock = serialised.then(|| Arc::new(Mutex::new(())));
        Box::new(Device {
            inner: Box::new(inner),
            lock,
        })
    }

    fn pair(serialised: bool) -> Vec<Box<dyn Encoder>> {
        let first = device(serialised, Replicas::Clones);
        let replica = first.replica().expect("clones").expect("loads");
        vec![first, replica]
    }

    #[test]
    fn a_second_worker_is_kept_only_when_it_is_faster() {
        let (kept, m) = keep_faster(pair(false));
        assert_eq!((kept.len(), m.kept), (2, 2), "{m:?}");
        assert!(m.rates[1] > 1.5 * m.rates[0], "{m:?}");
        let (kept, m) = keep_faster(pair(true));
        assert_eq!((kept.len(), m.kept), (1, 1), "serialised copies: {m:?}");
        assert!(m.rates[1] < GAIN * m.rates[0], "{m:?}");
    }

    #[test]
    fn an_accelerator_keeps_the_measured_count() {
        for (serialised, want) in [(false, 2), (true, 1)] {
            let (kept, m) = measured_encoders(device(serialised, Replicas::Clones), 2);
            let m = m.expect("measured");
            assert_eq!(
                (kept.len(), m.kept, m.rates.len()),
                (want, want, 2),
                "{m:?}"
            );
        }
        // a copy that does not load leaves one worker, unmeasured against a second
        let (kept, m) = measured_encoders(device(false, Replicas::Fail), 2);
        assert_eq!((kept.len(), m.map(|m| m.rates.len())), (1, Some(1)));
    }

    #[test]
    fn the_cpu_keeps_one_worker_without_measuring() {
        let mut e = HookedEncoder::new(8, "hooked", |_: &[&str], _: TextKind| Ok(()));
        e.replicas = Replicas::Clones;
        let (kept, m) = measured_encoders(Box::new(e), 2);
        assert_eq!(kept.len(), 1);
        assert!(m.is_none(), "not an accelerator: nothing measured");
    }
}
