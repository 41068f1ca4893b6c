use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use memdex_ingest::{Format, ReadOptions, Record};
use memdex_memory::{Builder, ExtractOptions, IndexOptions, IndexProgress, IndexReport};
use serde::Serialize;

use super::build::{self, Build, BuildTarget};
use crate::cli::IndexArgs;
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
    let embedder = super::common::load_embedder(&a.model, None)?;
    let source_hint = embedder
        .files()
        .dir
        .canonicalize()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| embedder.files().source.clone());
    let format = a.format.of(&a.input)?;
    let target = BuildTarget {
        store: &a.store,
        granularity: a.granularity,
        format,
        facts: a.facts,
        key_context: ExtractOptions::default().key_context,
        model_source: Some(source_hint),
        on_error: a.on_error,
        device: a.model.device,
    };
    let Build {
        mut builder,
        opts,
        model,
    } = build::open(&a.build, &target, embedder)?;
    let bars = Bars::new();
    let result = index_input(&a, format, &mut builder, &opts, &bars);
    bars.bar.finish_and_clear();
    super::fact_model::report_fact_model(&model);
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
    print_report(&a, &mut builder, &report, peak_rss_anon_mb)
}

/// The build's report: JSON, or a few lines for people (rejected records listed).
fn print_report(
    a: &IndexArgs,
    builder: &mut Builder,
    report: &IndexReport,
    peak_rss_anon_mb: Option<f64>,
) -> Result<()> {
    let store = builder.view()?.clone();
    let live_rows = store.rows();
    let m = builder.manifest();
    if a.json {
        return print_json(&Out {
            store: a.store.display().to_string(),
            model: &m.model.name,
            granularity: m.granularity.to_string(),
            report,
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
    print_skipped(report);
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

/// Sessions stored unchanged and records rejected.
fn print_skipped(report: &IndexReport) {
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
}

/// Indexes `a.input` in its format through `builder`: every format is a session source
/// (opened by the registry), and every one is indexed with the same `opts`. The first few
/// warnings of its records (dates that did not parse, …) go to stderr.
fn index_input(
    a: &IndexArgs,
    format: &Format,
    builder: &mut Builder,
    opts: &IndexOptions,
    bars: &Bars,
) -> Result<IndexReport> {
    let mut shown = 0;
    let read = ReadOptions {
        on_error: a.on_error,
        max_line_bytes: a.max_line_bytes,
        on_record: Some(Box::new(move |r: Record<'_>| {
            for w in r.warnings() {
                if shown < 5 {
                    eprintln!("warning: {w}");
                    shown += 1;
                }
            }
        })),
    };
    let source = (format.open)(&a.input, read)?;
    Ok(builder.index(source, opts, bars)?)
}
