//! The one assembly of a batch build, for `memdex index` and `memdex eval` alike: the store's
//! spec (granularity, model source, extraction, layout, TiM hashing, structures, extractor
//! model) and the index options (how the input format's sessions are cut and keyed, where
//! bucket ids are computed), whatever the input format. The format (memdex-ingest's
//! registry) only picks the session source and its default itemizing.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use memdex_core::{DeviceChoice, Granularity, OnError};
use memdex_embed::Embedder;
use memdex_ingest::{Format, ItemizeOptions};
use memdex_memory::{BuildSpec, Builder, IndexOptions, KernelHandle};
use memdex_store::{LshMeta, StoreSpec};

use super::fact_model::FactModel;
use crate::cli::{BuildArgs, LshDevice};

/// Where a build goes and what it reads, besides [`BuildArgs`].
pub struct BuildTarget<'a> {
    pub store: &'a Path,
    pub granularity: Granularity,
    /// The input's format (memdex-ingest's registry): how its sessions are itemized by
    /// default.
    pub format: &'static Format,
    /// Key expansion with extracted facts.
    pub facts: bool,
    /// A new store's key context when `--key-context` is not given.
    pub key_context: usize,
    /// The model directory recorded in a new store's manifest.
    pub model_source: Option<String>,
    pub on_error: OnError,
    /// The model's device (where bucket ids may be computed).
    pub device: DeviceChoice,
}

/// A store open for a batch build, with the options every input format is indexed with.
pub struct Build {
    pub builder: Builder,
    pub opts: IndexOptions,
    /// The extractor model, when `--extractor model:…` asked for one.
    pub model: Option<Arc<FactModel>>,
}

/// Opens `target.store` for a build with `embedder` as `args` say.
pub fn open(args: &BuildArgs, target: &BuildTarget<'_>, embedder: Embedder) -> Result<Build> {
    let at = super::common::StoreAt {
        dir: target.store,
        granularity: target.granularity,
        key_context: target.key_context,
    };
    let extract = super::common::extract_options(&args.extract, target.facts, &at)?;
    let model = super::fact_model::fact_model(&args.extract, target.facts)?;
    let (thoughts, tree) = super::common::structure_configs(&args.structures);
    let lsh = match (args.lsh_buckets, args.lsh_tables) {
        (Some(buckets), Some(tables)) => Some(LshMeta {
            seed: args.lsh_seed,
            buckets,
            tables,
            dim: embedder.dim() as u32,
        }),
        _ => None,
    };
    let spec = BuildSpec {
        store: StoreSpec {
            granularity: target.granularity,
            model_source: target.model_source.clone(),
            extraction: super::fact_model::extraction(&extract, model.as_ref()),
            layout: args.layout,
        },
        lsh,
        thoughts,
        tree,
        facts: super::fact_model::as_fact_extractor(&model),
    };
    let builder = Builder::open(target.store, Box::new(embedder), spec)?;
    let opts = IndexOptions {
        itemize: itemize(args, target),
        on_error: target.on_error,
        flush_items: args.flush_items.max(1),
        accel: hashing_kernels(args, target, &builder)?,
    };
    Ok(Build {
        builder,
        opts,
        model,
    })
}

/// How items are cut and keyed: the format's default, `--key-roles` over it.
fn itemize(args: &BuildArgs, target: &BuildTarget<'_>) -> ItemizeOptions {
    let mut itemize = (target.format.itemize)(target.granularity);
    if let Some(k) = args.key_roles {
        itemize.key_roles = k;
    }
    itemize
}

/// A hashing store on an accelerator model: bucket ids from memdex's lsh_project kernel there
/// (None: on the CPU).
fn hashing_kernels(
    args: &BuildArgs,
    target: &BuildTarget<'_>,
    builder: &Builder,
) -> Result<Option<KernelHandle>> {
    let hashes = builder.manifest().lsh.is_some();
    if !hashes || !builder.encoder().is_accelerator() || args.lsh_device != LshDevice::Auto {
        return Ok(None);
    }
    let k = super::common::load_kernels(target.device, None)?;
    let k: Arc<dyn memdex_kernels::Kernels + Send + Sync> = Arc::from(k);
    let accel = (k.device() != "cpu").then(|| KernelHandle(k));
    if let Some(k) = &accel {
        tracing::info!("TiM bucket ids computed on {}", k.0.device());
    }
    Ok(accel)
}
