use std::fs::File;
use std::io::{BufWriter, Write};

use anyhow::{bail, Context, Result};
use memdex_core::Granularity;
use memdex_eval::{
    compare_rankers, evaluate_questions, load_and_index, Agreement, Dataset, EvalOptions,
    EvalQuestion, EvalReport, LoadOptions, LoadReport, RunInfo,
};
use memdex_kernels::Placement;
use memdex_memory::{Reader, StageNames};
use memdex_rank::Preset;

use super::build::{self, Build, BuildTarget};
use crate::cli::{EvalArgs, EvalGranularity};
use crate::output::{print_json, spinner};

struct Progress(indicatif::ProgressBar);

impl memdex_memory::IndexProgress for Progress {
    fn on_session(&self) {
        self.0.inc(1);
    }
}

pub fn run(a: EvalArgs) -> Result<()> {
    if a.k.is_empty() || a.k.contains(&0) {
        bail!("--k needs positive cut-offs, e.g. 1,3,5,10");
    }
    let (format, dataset, granularity) = dataset_of(&a)?;
    // without --store: a temporary store, removed when `_tmp` drops (also on errors)
    let (_tmp, store_dir) = match &a.store {
        Some(d) => (None, d.clone()),
        None => {
            let t = tempfile::Builder::new().prefix("memdex-eval-").tempdir()?;
            let dir = t.path().to_path_buf();
            (Some(t), dir)
        }
    };
    // the ranking flags are checked before the build, not after it
    let opts = EvalOptions {
        dataset,
        granularity,
        ks: a.k.clone(),
        rank: super::common::rank_options(&a.rank, a.preset.options())?,
    };
    let (reader, questions, load) = build_and_load(&a, format, &store_dir, &opts)?;
    let t = std::time::Instant::now();
    let mut report = evaluate(&a, &reader, &questions, &opts)?;
    let search_s = t.elapsed().as_secs_f64();
    report.config.run = Some(RunInfo {
        input: a.input.display().to_string(),
        extraction: reader.store().manifest().extraction.clone(),
        index: load.index.clone(),
        warnings: load.warnings.len(),
        rank_seconds: search_s,
    });
    print_report(&a, &report, &load, search_s)
}

/// The benchmark's format (memdex-ingest's registry), its questions' conventions and the
/// granularity its items are evaluated at.
fn dataset_of(a: &EvalArgs) -> Result<(&'static memdex_ingest::Format, Dataset, Granularity)> {
    let format = a.format.of(&a.input)?;
    let Some(dataset) = Dataset::of(format) else {
        bail!(
            "{}: the {} format carries no questions; memdex eval reads a benchmark: {}",
            a.input.display(),
            format.name,
            (memdex_ingest::FORMATS.iter())
                .filter(|f| Dataset::of(f).is_some())
                .map(|f| f.name)
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    let granularity = match a.granularity {
        EvalGranularity::Turn => Granularity::Turn,
        EvalGranularity::Session => Granularity::Session,
    };
    Ok((format, dataset, granularity))
}

/// Builds (or reuses) the store in `store_dir` from the benchmark file through the one build
/// path and opens it for reading with the ranker `a` asks for; its questions and what loading
/// found.
fn build_and_load(
    a: &EvalArgs,
    format: &'static memdex_ingest::Format,
    store_dir: &std::path::Path,
    opts: &EvalOptions,
) -> Result<(Reader, Vec<EvalQuestion>, LoadReport)> {
    let embedder = super::common::load_embedder(&a.model, None)?;
    let ranker = super::common::ranker(a.rank_device, a.device_scan, &a.model, &embedder)?;
    let target = BuildTarget {
        store: store_dir,
        granularity: opts.granularity,
        format,
        // `--preset default` evaluates a store as `memdex index` builds it by default (facts
        // on, turns keyed with the message they answer); the reference baselines do neither
        facts: a.facts.unwrap_or(a.preset == Preset::Default),
        key_context: usize::from(a.preset == Preset::Default),
        model_source: None,
        on_error: a.on_error,
        device: a.model.device,
    };
    let Build {
        mut builder,
        opts: index,
        model,
    } = build::open(&a.build, &target, embedder)?;
    let pb = spinner("sessions");
    let load_opts = LoadOptions {
        format,
        granularity: opts.granularity,
        on_error: a.on_error,
    };
    let (questions, load) = load_and_index(
        &a.input,
        &load_opts,
        &index,
        &mut builder,
        &Progress(pb.clone()),
    )
    .with_context(|| format!("loading {}", a.input.display()))?;
    pb.finish_and_clear();
    super::fact_model::report_fact_model(&model);
    let reader = builder.into_reader(ranker, StageNames::Flags)?;
    tracing::info!("ranker: {}", reader.ranker().describe());
    Ok((reader, questions, load))
}

/// Ranks and scores every question (the per-question log when asked), and with
/// `--rank-check` compares the kernels' top-10 with the CPU ranker's.
fn evaluate(
    a: &EvalArgs,
    reader: &Reader,
    questions: &[EvalQuestion],
    opts: &EvalOptions,
) -> Result<EvalReport> {
    let mut log = match &a.log {
        Some(p) => {
            Some(BufWriter::new(File::create(p).with_context(|| {
                format!("{}: cannot create", p.display())
            })?))
        }
        None => None,
    };
    let mut report = evaluate_questions(
        reader,
        questions,
        opts,
        log.as_mut().map(|w| w as &mut dyn Write),
    )?;
    if let Some(mut w) = log {
        w.flush()?;
    }
    if a.rank_check {
        let ranker = super::common::checked_ranker(&a.model, Placement::Device)?;
        let agreement = compare_rankers(reader, &ranker, questions, &opts.rank)?;
        if !a.json {
            print_agreement(&agreement);
        }
        report.agreement = Some(agreement);
    }
    Ok(report)
}

/// The report as JSON, or the table and a summary line; loading's warnings on stderr.
fn print_report(a: &EvalArgs, report: &EvalReport, load: &LoadReport, search_s: f64) -> Result<()> {
    if !load.warnings.is_empty() {
        eprintln!("{} warnings while reading, e.g.:", load.warnings.len());
        for w in load.warnings.iter().take(5) {
            eprintln!("  {w}");
        }
    }
    if a.json {
        return print_json(report);
    }
    print_table(report, &a.k);
    let idx = &load.index;
    println!(
        "indexed {} items ({} keys embedded, {} reused) in {:.1}s; ranked {} questions in {:.2}s",
        idx.items_written,
        idx.keys_embedded,
        idx.keys_reused,
        idx.seconds,
        report.questions,
        search_s
    );
    Ok(())
}

fn print_agreement(g: &Agreement) {
    println!(
        "ranker {}: top-{} of {} questions identical {}, near ties only {}, different {} \
         (max score diff {:.1e}); per batch of {}: CPU ranker {:.1} ms, ranker {:.1} ms",
        g.ranker,
        g.k,
        g.queries,
        g.identical,
        g.near_ties_only,
        g.different,
        g.max_score_diff,
        g.batch,
        g.cpu_ms_per_batch,
        g.ranker_ms_per_batch
    );
}

fn print_table(r: &EvalReport, ks: &[usize]) {
    println!("questions evaluated: {}", r.questions);
    for (reason, n) in &r.skipped {
        println!("skipped {n}: {reason}");
    }
    let row = |name: &str, m: &memdex_eval::LevelMetrics| {
        let mut line = format!("{name:<28}");
        if let Some(v) = m.get("mrr") {
            line.push_str(&format!(" {v:>6.3}"));
        }
        for k in ks {
            for metric in ["recall_any", "recall_all", "ndcg_any"] {
                if let Some(v) = m.get(&format!("{metric}@{k}")) {
                    line.push_str(&format!(" {v:>6.3}"));
                }
            }
        }
        println!("{line}");
    };
    let mut header = format!("{:<28} {:>6}", "level", "MRR");
    for k in ks {
        header.push_str(&format!(
            " {:>6} {:>6} {:>6}",
            format!("any@{k}"),
            format!("all@{k}"),
            format!("ndcg@{k}")
        ));
    }
    println!("{header}");
    let turn_ranked = r.levels.contains_key("turn");
    let label = |level: &str| {
        if level == "session" && turn_ranked {
            "turn→session"
        } else {
            "session"
        }
    };
    for level in ["turn", "session"] {
        if let Some(m) = r.levels.get(level) {
            row(
                if level == "turn" {
                    "turn"
                } else {
                    label(level)
                },
                m,
            );
        }
    }
    for (t, levels) in &r.by_type {
        for level in ["turn", "session"] {
            if let Some(m) = levels.get(level) {
                let name = if level == "turn" {
                    "turn"
                } else {
                    label(level)
                };
                row(&format!("  {t} [{name}]"), m);
            }
        }
    }
    let l = &r.latency_ms;
    println!(
        "latency ms: search p50 {:.2} / p99 {:.2} (query embedding p50 {:.2}, ranking p50 {:.2} / p99 {:.2})",
        l.search_p50, l.search_p99, l.embed_p50, l.rank_p50, l.rank_p99
    );
    if let Some(alt) = &r.answer_session_gold {
        println!(
            "alternative gold ({}), {} questions:",
            alt.note, alt.questions
        );
        for (level, m) in &alt.levels {
            row(level, m);
        }
    }
}
