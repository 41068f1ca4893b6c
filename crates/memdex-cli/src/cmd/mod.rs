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
mod structure_views;
mod synth;

use anyhow::{Context, Result};
use memdex_core::{DeviceChoice, Granularity};
use memdex_embed::{load_encoder, EmbedOptions, Embedder, Encoder};
use memdex_kernels::{KernelRanker, Kernels, Placement};
use memdex_rank::{BatchRanker, SharedRanker};

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
        Command::Snapshot(a) => serve::snapshot(a),
        Command::Model(c) => model::run(c),
        Command::Thoughts(a) => structure_views::thoughts(a),
        Command::Tree(a) => structure_views::tree(a),
        Command::Mcp(a) => mcp::run(a),
    }
}

/// Loads the model named by `--model`, else `fallback` (a store's recorded model) when it
/// still resolves, else the default directory.
/// The model for a long-running server over `store` (`serve`, `mcp`): `args`' model, else the
/// one the store's manifest names, and the directory to record as the store's model source
/// (canonical when it exists).
pub fn load_serving_embedder(args: &ModelArgs, store: &Path) -> Result<(Embedder, String)> {
    let stored = memdex_store::Manifest::load(store)
        .ok()
        .and_then(|m| m.model_source);
    let embedder = load_embedder(args, stored.as_deref())?;
    let source = embedder
        .files()
        .dir
        .canonicalize()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| embedder.files().source.clone());
    Ok((embedder, source))
}

pub fn load_embedder(args: &ModelArgs, fallback: Option<&str>) -> Result<Embedder> {
    let spec = match (&args.model, fallback) {
        (Some(m), _) => m.clone(),
        (None, Some(f)) if memdex_embed::ModelFiles::resolve(f).is_ok() => f.to_string(),
        _ => DEFAULT_MODEL_DIR.to_string(),
    };
    let opts = EmbedOptions {
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
        cpu_isa: None,   // MEMDEX_CPU_ISA, else the CPU's best
        cpu_split: None, // MEMDEX_CPU_SPLIT, else batches side by side
    };
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

/// The kernels of `device`: the CPU reference, or memdex's CUDA kernels (feature `cuda`),
/// keeping at most `resident_mb` MiB of tenants' rows on the device (default: a quarter of
/// its memory).
pub(crate) fn load_kernels(
    device: DeviceChoice,
    resident_mb: Option<u64>,
) -> Result<Box<dyn Kernels + Send + Sync>> {
    #[cfg(feature = "cuda")]
    let gpu = |n: usize| -> Result<memdex_kernels::gpu::Gpu> {
        let g = memdex_kernels::gpu::Gpu::new(n)?;
        Ok(match resident_mb {
            Some(mb) => g.with_resident_budget(usize::try_from(mb << 20).unwrap_or(usize::MAX)),
            None => g,
        })
    };
    #[cfg(not(feature = "cuda"))]
    let _ = resident_mb;
    match device {
        DeviceChoice::Cpu => Ok(Box::new(memdex_kernels::cpu::Cpu)),
        #[cfg(feature = "cuda")]
        DeviceChoice::Cuda(n) => Ok(Box::new(gpu(n)?)),
        #[cfg(feature = "cuda")]
        DeviceChoice::Auto => match gpu(0) {
            Ok(g) => Ok(Box::new(g)),
            Err(e) => {
                tracing::warn!("no CUDA device for the kernels ({e}); using the CPU reference");
                Ok(Box::new(memdex_kernels::cpu::Cpu))
            }
        },
        #[cfg(not(feature = "cuda"))]
        DeviceChoice::Cuda(_) => anyhow::bail!(
            "{device}: this memdex was built without the `cuda` feature \
             (scripts/build-cuda.sh builds one)"
        ),
        #[cfg(not(feature = "cuda"))]
        DeviceChoice::Auto => {
            tracing::info!("built without `cuda`: the kernels run their CPU reference");
            Ok(Box::new(memdex_kernels::cpu::Cpu))
        }
    }
}

/// The ranker of `--rank-device` and `--device-scan` for a model `encoder` on `device`:
/// * `auto`: memdex's CUDA kernels when the model runs on an accelerator and they load
///   there, each batch placed by the cost model; else the CPU ranker;
/// * `cuda`: the kernels on the model's CUDA device (or the first), every batch they run;
/// * `cpu`: the CPU ranker;
/// * `kernels`: the kernels on the model's device, every batch (their CPU reference on the CPU).
///
/// The CPU ranker (alone, or the kernels' fallback) scores its dense stage on the model's
/// device when the scan is on (auto: when the model runs on an accelerator).
pub(crate) fn ranker(
    choice: RankDeviceArg,
    scan: crate::cli_serve::DeviceScanArg,
    model: &ModelArgs,
    encoder: &dyn Encoder,
) -> Result<SharedRanker> {
    let (device, mb) = (model.device, model.rank_memory_mb);
    let accelerator = encoder.is_accelerator();
    let cpu = memdex_memory::cpu_ranker(encoder, scan.choice());
    let (kernels, placement) = match choice {
        RankDeviceArg::Cpu => return Ok(Arc::new(cpu)),
        RankDeviceArg::Auto if !accelerator => return Ok(Arc::new(cpu)),
        RankDeviceArg::Auto => (load_kernels(device, mb)?, Placement::Auto),
        RankDeviceArg::Cuda => {
            let on = match device {
                DeviceChoice::Cuda(n) => DeviceChoice::Cuda(n),
                _ => DeviceChoice::Cuda(0),
            };
            let kernels = load_kernels(on, mb).context("--rank-device cuda")?;
            (kernels, Placement::Device)
        }
        RankDeviceArg::Kernels => {
            let ranker = KernelRanker::with_cpu(
                Arc::from(load_kernels(device, mb)?),
                Placement::Device,
                cpu,
            );
            return Ok(Arc::new(ranker));
        }
    };
    if kernels.device() == "cpu" {
        tracing::info!("no CUDA kernels here: the CPU ranker ranks");
        return Ok(Arc::new(cpu));
    }
    let ranker = KernelRanker::with_cpu(Arc::from(kernels), placement, cpu);
    tracing::info!("ranking through {}", ranker.describe());
    Ok(Arc::new(ranker))
}

/// The kernels of the model's device behind the ranking seam, every batch they can run on
/// them (the CPU reference on the CPU): what `bench rank` and `eval --rank-check` compare with
/// the CPU ranker.
pub(crate) fn checked_ranker(model: &ModelArgs, placement: Placement) -> Result<KernelRanker> {
    let kernels = load_kernels(model.device, model.rank_memory_mb)?;
    Ok(KernelRanker::new(Arc::from(kernels), placement))
}
