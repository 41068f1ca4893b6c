//! One module per subcommand; shared model loading here.

mod bench;
#[cfg(feature = "model-extractor")]
mod bench_extract;
mod bench_load;
mod bench_lsh;
mod bench_rank;
mod bench_search;
mod build;
mod embed;
mod eval;
mod fact_model;
mod index;
mod info;
pub mod mcp;
mod model;
mod search;
mod serve;
mod store_admin;
mod structure_views;
mod synth;

use anyhow::{Context, Result};
use memdex_core::{DeviceChoice, Granularity};
use memdex_embed::{load_encoder, EmbedOptions, Embedder, Encoder};
use memdex_kernels::{KernelRanker, Kernels, Placement};
use memdex_memory::{OpenOptions, RankChoice};
use memdex_rank::SharedRanker;

use crate::cli_serve::RankDeviceArg;

use std::path::Path;
use std::sync::Arc;

use crate::cli::{BenchCommand, Cli, Command, ExtractArgs, ModelArgs, StructureArgs};
use memdex_memory::ExtractOptions;
use memdex_rank::{RankOptions, Stages};
use memdex_store::Manifest;

/// Where and how a store is (or will be) built, for [`extract_options`].
pub struct StoreAt<'a> {
    pub dir: &'a Path,
    pub granularity: Granularity,
    /// A new store's key context when `--key-context` is not given.
    pub key_context: usize,
}

/// The extraction for a store: `--key-context` as given, else the store's own (an existing
/// store keeps its keys), else the new store's default; 0 unless the store holds turns
/// (asking for more there is an error).
#[cfg(feature = "model-extractor")]
pub use fact_model::load_extractor;
pub use fact_model::{as_fact_extractor, extraction, fact_model, report_fact_model};

pub fn extract_options(a: &ExtractArgs, facts: bool, at: &StoreAt<'_>) -> Result<ExtractOptions> {
    if let Some(n) = a
        .key_context
        .filter(|&n| n > 0 && at.granularity != Granularity::Turn)
    {
        anyhow::bail!(
            "--key-context {n} applies to turn stores only ({} items already hold the \
             exchange); use --granularity turn or leave it out",
            at.granularity
        );
    }
    let recorded = || {
        Manifest::load(at.dir)
            .ok()
            .map(|m| m.extraction.key_context)
    };
    let key_context = a.key_context.map(usize::from).or_else(recorded);
    Ok(ExtractOptions {
        events: a.extract_events,
        facts,
        neighbors: a.neighbors,
        key_context: key_context.unwrap_or(at.key_context),
    }
    .for_granularity(at.granularity))
}

/// The structures `a` asks for (None each when not asked).
pub fn structure_configs(
    a: &StructureArgs,
) -> (
    Option<memdex_store::ThoughtsConfig>,
    Option<memdex_store::TreeConfig>,
) {
    let thoughts = a.thoughts.then(|| memdex_store::ThoughtsConfig {
        buckets: a.thought_buckets,
        tables: a.thought_tables,
        merge_cosine: a.thought_merge_cosine,
        ..memdex_structures::default_thoughts()
    });
    let tree = a.tree.then_some(memdex_store::TreeConfig {
        theta0: a.tree_theta0,
        lambda: a.tree_lambda,
        content_chars: a.tree_content_chars,
    });
    (thoughts, tree)
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
        Command::Bench(BenchCommand::Search(a)) => bench_search::run(*a),
        Command::Bench(BenchCommand::Rank(a)) => bench_rank::run(*a),
        #[cfg(feature = "model-extractor")]
        Command::Bench(BenchCommand::Extract(a)) => bench_extract::run(a),
        #[cfg(not(feature = "model-extractor"))]
        Command::Bench(BenchCommand::Extract(_)) => Err(fact_model::not_built()),
        Command::Bench(BenchCommand::Load(a)) => bench_load::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Compact(a) => serve::compact(a),
        Command::Snapshot(a) => store_admin::snapshot(a),
        Command::Verify(a) => store_admin::verify(a),
        Command::Restore(a) => store_admin::restore(a),
        Command::Model(c) => model::run(c),
        Command::Thoughts(a) => structure_views::thoughts(a),
        Command::Tree(a) => structure_views::tree(a),
        Command::Mcp(a) => mcp::run(a),
    }
}

/// How the door opens a store for `args`' model, ranked as `rank` says: `memdex serve`,
/// `mcp` and `search` open their memory (or reader) this way; the model is `--model`, else
/// the store's recorded one, else the default directory.
pub fn open_options(args: &ModelArgs, rank: RankChoice) -> OpenOptions {
    OpenOptions {
        model: args.model.clone(),
        device: args.device,
        embed: embed_options(args),
        rank: RankChoice {
            resident_mb: args.rank_memory_mb,
            ..rank
        },
        ..OpenOptions::default()
    }
}

/// The encoder options `args` set.
fn embed_options(args: &ModelArgs) -> EmbedOptions {
    EmbedOptions {
        token_budget: args.token_budget,
        max_batch: args.max_batch,
        max_length: args.max_length,
        query_prefix: args.query_prefix.clone(),
        passage_prefix: args.passage_prefix.clone(),
        precision: args.precision,
        cpu_backend: args.cpu_backend,
        small_batch_weights: args.small_batch_weights,
        large_batch_gemm: args.large_batch_gemm,
        weights: args.weights,
        cuda_encoder: args.cuda_encoder, // None: MEMDEX_CUDA_ENCODER, else candle
        cpu_isa: None,                   // MEMDEX_CPU_ISA, else the CPU's best
        cpu_split: None,                 // MEMDEX_CPU_SPLIT, else batches side by side
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
    let opts = embed_options(args);
    let e =
        load_encoder(&spec, args.device, &opts).with_context(|| format!("loading model {spec}"))?;
    tracing::info!(
        "model {} (dim {}, max length {}, {:?} pooling) on {} ({})",
        e.info().name,
        e.dim(),
        e.info().max_length,
        e.info().pooling,
        Encoder::device(&e),
        e.backend_name()
    );
    Ok(e)
}

/// `base` with the stages the user set on the command line.
pub fn rank_options(stages: &Stages, base: RankOptions) -> anyhow::Result<RankOptions> {
    stages
        .apply(base, &|field| format!("--{}", field.replace('_', "-")))
        .map_err(anyhow::Error::from)
}

/// The kernels of `device` (the door's: the CPU reference, or memdex's CUDA kernels).
pub(crate) fn load_kernels(
    device: DeviceChoice,
    resident_mb: Option<u64>,
) -> Result<Box<dyn Kernels + Send + Sync>> {
    Ok(memdex_memory::kernels(device, resident_mb)?)
}

/// The ranker of `--rank-device` and `--device-scan` for a model `encoder` on `args`' device
/// (the door's choice: [`memdex_memory::ranker`]).
pub(crate) fn ranker(
    choice: RankDeviceArg,
    scan: crate::cli_serve::DeviceScanArg,
    args: &ModelArgs,
    encoder: &dyn Encoder,
) -> Result<SharedRanker> {
    let rank = RankChoice {
        device: choice.into(),
        device_scan: scan.choice(),
        resident_mb: args.rank_memory_mb,
    };
    Ok(memdex_memory::ranker(rank, args.device, encoder)?)
}

/// The kernels of the model's device behind the ranking seam, every batch they can run on
/// them (the CPU reference on the CPU): what `bench rank` and `eval --rank-check` compare with
/// the CPU ranker.
pub(crate) fn checked_ranker(model: &ModelArgs, placement: Placement) -> Result<KernelRanker> {
    let kernels = load_kernels(model.device, model.rank_memory_mb)?;
    Ok(KernelRanker::new(Arc::from(kernels), placement))
}
