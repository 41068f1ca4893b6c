//! One module per subcommand; shared model loading here.

mod bench;
mod bench_lsh;
mod bench_search;
mod embed;
mod eval;
mod index;
mod info;
mod search;
mod serve;
mod synth;

use anyhow::{Context, Result};
use memdex_embed::{select_device, CpuBackend, EmbedOptions, Embedder, Precision};

use crate::cli::{
    BenchCommand, Cli, Command, CpuBackendArg, ExtractArgs, ModelArgs, PrecisionArg, RankArgs,
    SmallBatchArg,
};
use memdex_engine::{ExtractOptions, RankOptions, Stages};

pub fn extract_options(a: &ExtractArgs, facts: bool) -> ExtractOptions {
    ExtractOptions {
        events: a.extract_events,
        facts,
        neighbors: a.neighbors,
    }
}

/// Where the default model lives (relative to the working directory).
pub const DEFAULT_MODEL_DIR: &str = "models/all-MiniLM-L6-v2";

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Index(a) => index::run(a),
        Command::Search(a) => search::run(a),
        Command::Embed(a) => embed::run(a),
        Command::Info(a) => info::run(a),
        Command::Eval(a) => eval::run(a),
        Command::Synth(a) => synth::run(a),
        Command::Bench(BenchCommand::Embed(a)) => bench::run(a),
        Command::Bench(BenchCommand::Lsh(a)) => bench_lsh::run(a),
        Command::Bench(BenchCommand::Search(a)) => bench_search::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Compact(a) => serve::compact(a),
        Command::Snapshot(a) => serve::snapshot(a),
    }
}

/// Loads the model named by `--model`, else `fallback` (a store's recorded model) when it
/// still resolves, else the default directory.
pub fn load_embedder(args: &ModelArgs, fallback: Option<&str>) -> Result<Embedder> {
    let spec = match (&args.model, fallback) {
        (Some(m), _) => m.clone(),
        (None, Some(f)) if memdex_embed::ModelFiles::resolve(f).is_ok() => f.to_string(),
        _ => DEFAULT_MODEL_DIR.to_string(),
    };
    let device = select_device(args.device)?;
    let opts = EmbedOptions {
        token_budget: args.token_budget,
        max_batch: args.max_batch,
        max_length: args.max_length,
        query_prefix: args.query_prefix.clone(),
        passage_prefix: args.passage_prefix.clone(),
        precision: args.precision.map(|p| match p {
            PrecisionArg::F32 => Precision::F32,
            PrecisionArg::F16 => Precision::F16,
            PrecisionArg::Bf16 => Precision::Bf16,
        }),
        cpu_backend: match args.cpu_backend {
            CpuBackendArg::Fast => CpuBackend::Fast,
            CpuBackendArg::Candle => CpuBackend::Candle,
        },
        small_batch_weights: match args.small_batch_weights {
            SmallBatchArg::F32 => memdex_embed::SmallBatchWeights::F32,
            SmallBatchArg::F16 => memdex_embed::SmallBatchWeights::F16,
        },
    };
    let e =
        Embedder::load(&spec, device, &opts).with_context(|| format!("loading model {spec}"))?;
    tracing::info!(
        "model {} (dim {}, max length {}, {:?} pooling) on {} ({})",
        e.info().name,
        e.dim(),
        e.info().max_length,
        e.info().pooling,
        memdex_embed::device_name(e.device()),
        e.backend_name()
    );
    Ok(e)
}

/// `base` with the stages the user set on the command line.
pub fn rank_options(a: &RankArgs, base: RankOptions) -> anyhow::Result<RankOptions> {
    stages(a)
        .apply(base, &|field| format!("--{}", field.replace('_', "-")))
        .map_err(anyhow::Error::msg)
}

/// The stages the user set on the command line.
pub fn stages(a: &RankArgs) -> Stages {
    Stages {
        retriever: a.retriever,
        bm25: a.bm25,
        fusion: a.fusion,
        dense_weight: a.dense_weight,
        fragrel_alpha: a.fragrel_alpha,
        fragrel_w: a.fragrel_w,
        fragrel_scope: a.fragrel_scope,
        fragrel_semantic: a.fragrel_semantic,
        recency: a.recency,
        importance: a.importance,
        time: a.time,
        time_boost: a.time_boost,
        when_boost: a.when_boost,
    }
}
