//! What the subcommands share: loading the model, the door's options and rankers, the
//! kernels, the extraction and the structures a build asks for, the ranking stages the user
//! set. The dispatcher (`cmd::run`) is apart from these, so a command imports this module,
//! never the dispatcher.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use memdex_core::{DeviceChoice, Granularity};
use memdex_embed::{EmbedOptions, Embedder, Encoder};
use memdex_kernels::{KernelRanker, Kernels, Placement};
use memdex_memory::{ExtractOptions, OpenOptions, RankChoice};
use memdex_rank::{RankOptions, SharedRanker, Stages};
use memdex_store::Manifest;

use crate::cli::{ExtractArgs, ModelArgs, StructureArgs};
use crate::cli_serve::{DeviceScanArg, RankDeviceArg};

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

/// How the door opens a store for `args`' model, ranked as `rank` says: `memdex serve`,
/// `mcp` and `search` open their memory (or reader) this way; the model is `--model`, else
/// the store's recorded one, else the default directory ([`memdex_memory::model_spec`]).
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

/// Loads the model named by `--model`, else `recorded` (a store's recorded model) when it
/// still resolves, else the default directory: the door's one lookup
/// ([`memdex_memory::load_model`]).
pub fn load_embedder(args: &ModelArgs, recorded: Option<&str>) -> Result<Embedder> {
    let (e, spec) = memdex_memory::load_model(
        args.model.as_deref(),
        recorded,
        args.device,
        &embed_options(args),
    )
    .map_err(anyhow::Error::from)
    .with_context(|| "loading the model".to_string())?;
    tracing::info!(
        "model {} from {spec} (dim {}, max length {}, {:?} pooling) on {} ({})",
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
pub fn rank_options(stages: &Stages, base: RankOptions) -> Result<RankOptions> {
    stages
        .apply(base, &|field| format!("--{}", field.replace('_', "-")))
        .map_err(anyhow::Error::from)
}

/// The kernels of `device` (the door's: the CPU reference, or memdex's CUDA kernels).
pub fn load_kernels(
    device: DeviceChoice,
    resident_mb: Option<u64>,
) -> Result<Box<dyn Kernels + Send + Sync>> {
    Ok(memdex_memory::kernels(device, resident_mb)?)
}

/// The ranker of `--rank-device` and `--device-scan` for a model `encoder` on `args`' device
/// (the door's choice: [`memdex_memory::ranker`]).
pub fn ranker(
    choice: RankDeviceArg,
    scan: DeviceScanArg,
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
pub fn checked_ranker(model: &ModelArgs, placement: Placement) -> Result<KernelRanker> {
    let kernels: Arc<dyn Kernels + Send + Sync> =
        Arc::from(load_kernels(model.device, model.rank_memory_mb)?);
    Ok(KernelRanker::new(kernels, placement))
}
