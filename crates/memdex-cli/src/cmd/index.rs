use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use memdex_eval::{load_and_index, Dataset, LoadOptions};
use memdex_ingest::{ItemizeOptions, JsonlOptions, JsonlSessions};
use memdex_memory::{
    BuildSpec, Builder, ExtractOptions, IndexOptions, IndexProgress, IndexReport, KernelHandle,
};
use memdex_store::{LshMeta, Store, StoreSpec};
use serde::Serialize;

use crate::cli::{IndexArgs, InputFormat, LshDevice};
use crate::output::print_json;

/// Progress of a build: input bytes behind the committed segments (rate and ETA), sessions
/// read, keys embedded and rows committed with their rates, and the peak anonymous memory seen.
struct Bars {
    bar: ProgressBar,
    start: std::time::Instant,
    sessions: AtomicU64,
    keys: AtomicU64,
    rows: AtomicU64,
    peak_anon_kb: AtomicU64,
}

impl Bars {
    fn new() -> Bars {
        Bars {
            bar: crate::output::progress_bytes("indexed"),
            start: std::time::Instant::now(),
            sessions: AtomicU64::new(0),
            keys: AtomicU64::new(0),
            rows: AtomicU64::new(0),
            peak_anon_kb: AtomicU64::new(0),
        }
    }

    fn sample_memory(&self) {
        if let Some(kb) = crate::output::rss_anon_kb() {
            self.peak_anon_kb.fetch_max(kb, Ordering::Relaxed);
        }
    }

    fn message(&self) {
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        let (sessions, keys, rows) = (
            self.sessions.load(Ordering::Relaxed),
            self.keys.load(Ordering::Relaxed),
            self.rows.load(Ordering::Relaxed),
        );
        self.bar.set_message(format!(
            "{sessions} sessions read ({:.0}/s), {keys} keys embedded ({:.0}/s), \
             {rows} rows committed ({:.0}/s)",
            sessions as f64 / secs,
            keys as f64 / secs,
            rows as f64 / secs
        ));
    }
}

impl IndexProgress for Bars {
    fn on_session(&self) {
        self.sessions.fetch_add(1, Ordering::Relaxed);
    }
    fn on_embedded(&self, keys: usize) {
        self.keys.fetch_add(keys as u64, Ordering::Relaxed);
        self.sample_memory();
        self.message();
    }
    fn on_committed(&self, rows: u64, position: Option<(u64, u64)>) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
        if let Some((done, total)) = position {
            self.bar.set_length(total);
            self.bar.set_position(done);
        }
        self.sample_memory();
        self.message();
    }
}

#[derive(Serialize)]
struct Out<'a> {
    store: String,
    model: &'a str,
    granularity: String,
    #[serde(flatten)]
    report: &'a IndexReport,
    /// Rates over the wall time and each stage's busy fraction.
    throughput: memdex_memory::Throughput,
    store_rows: u64,
    manifest_version: u64,
    /// `shared` or `inline`.
    layout: memdex_store::Layout,
    /// Distinct contents stored once (shared layout; 0 for inline).
    store_contents: usize,
    /// Bytes of every segment and content file.
    store_bytes: u64,
    /// Peak anonymous resident memory seen during the run (MB; Linux).
    peak_rss_anon_mb: Option<f64>,
}

pub fn run(a: IndexArgs) -> Result<()> {
    let embedder = super::load_embedder(&a.model, None)?;
    let source_hint = embedder
        .files()
        .dir
        .canonicalize()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| embedder.files().source.clone());
    let at = super::StoreAt {
        dir: &a.store,
        granularity: a.granularity,
        key_context: ExtractOptions::default().key_context,
    };
    let extract = super::extract_options(&a.extract, a.facts, &at)?;
    let model = super::fact_model(&a.extract, a.facts)?;
    let (thoughts, tree) = super::structure_configs(&a.structures);
    let lsh = match (a.lsh_buckets, a.lsh_tables) {
        (Some(buckets), Some(tables)) => Some(LshMeta {
            seed: a.lsh_seed,
            buckets,
            tables,
            dim: embedder.dim() as u32,
        }),
        _ => None,
    };
    let spec = BuildSpec {
        store: StoreSpec {
            granularity: a.granularity,
            model_source: Some(source_hint),
            extraction: super::extraction(&extract, model.as_ref()),
            layout: a.layout,
        },
        lsh,
        thoughts,
        tree,
        facts: super::as_fact_extractor(&model),
    };
    let mut builder = Builder::open(&a.store, Box::new(embedder), spec)?;
    let mut itemize = ItemizeOptions::new(a.granularity);
    if let Some(k) = a.key_roles {
        itemize.key_roles = k;
    }
    // a hashing store on a CUDA model: bucket ids from memdex's lsh_project kernel there
    let hashes = builder.manifest().lsh.is_some();
    let on_accelerator = builder.encoder().is_accelerator();
    let accel = if hashes && on_accelerator && a.lsh_device == LshDevice::Auto {
        let k = super::load_kernels(a.model.device, None)?;
        (k.device() != "cpu").then(|| KernelHandle(std::sync::Arc::from(k)))
    } else {
        None
    };
    if let Some(k) = &accel {
        tracing::info!("TiM bucket ids computed on {}", k.0.device());
    }
    let opts = IndexOptions {
        itemize,
        on_error: a.on_error,
        flush_items: a.flush_items.max(1),
        accel,
    };
    let bars = Bars::new();
    let result = match a.format {
        InputFormat::Jsonl => JsonlSessions::open(
            &a.input,
            JsonlOptions {
                on_error: a.on_error,
                max_line_bytes: a.max_line_bytes,
            },
        )
        .map_err(anyhow::Error::from)
        .and_then(|source| Ok(builder.index(source, &opts, &bars)?)),
        InputFormat::Longmemeval | InputFormat::Locomo => {
            let load = LoadOptions {
                dataset: if a.format == InputFormat::Locomo {
                    Dataset::Locomo
                } else {
                    Dataset::LongMemEval
                },
                granularity: a.granularity,
                on_error: a.on_error,
                flush_items: opts.flush_items,
            };
            load_and_index(&a.input, &load, &mut builder, &bars)
                .map(|(_, load)| {
                    for w in load.warnings.iter().take(5) {
                        eprintln!("warning: {w}");
                    }
                    load.index
                })
                .map_err(anyhow::Error::from)
        }
    };
    bars.bar.finish_and_clear();
    super::report_fact_model(&model);
    bars.sample_memory();
    let peak = bars.peak_anon_kb.load(Ordering::Relaxed);
    let peak_rss_anon_mb = (peak > 0).then(|| peak as f64 / 1024.0);
    let report = result.with_context(|| {
        format!(
            "indexing {} stopped; sessions before the failure are committed in {} and a re-run skips them",
            a.input.display(),
            a.store.display()
        )
    })?;
    let m = builder.manifest();
    let store = Store::open(&a.store)?;
    let live_rows = store.rows();
    if a.json {
        return print_json(&Out {
            store: a.store.display().to_string(),
            model: &m.model.name,
            granularity: m.granularity.to_string(),
            report: &report,
            throughput: report.throughput(),
            store_rows: live_rows,
            manifest_version: m.version,
            layout: m.layout,
            store_contents: store.contents().len(),
            store_bytes: m.bytes(),
            peak_rss_anon_mb,
        });
    }
    println!(
        "indexed {} sessions → {} {} items in {} segment(s) [{:.1}s, embedding {:.1}s, {} tokens; \
         {} new terms in the word table]",
        report.sessions_indexed,
        report.items_written,
        m.granularity,
        report.segments_written,
        report.seconds,
        report.embed_seconds,
        report.tokens_embedded,
        report.words_embedded
    );
    if report.sessions_unchanged > 0 {
        println!(
            "{} sessions already stored unchanged: skipped",
            report.sessions_unchanged
        );
    }
    if report.sessions_rejected > 0 {
        println!("{} records rejected:", report.sessions_rejected);
        for e in report.errors.iter().take(20) {
            println!("  {e}");
        }
        if report.errors.len() > 20 {
            println!("  … {} more", report.errors.len() - 20);
        }
    }
    println!(
        "store {}: {} items, {} layout, {:.1} MB, manifest version {}",
        a.store.display(),
        live_rows,
        m.layout,
        m.bytes() as f64 / 1e6,
        m.version
    );
    Ok(())
}
