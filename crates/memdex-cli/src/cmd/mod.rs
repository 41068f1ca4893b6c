//! One module per subcommand; shared model loading here.

mod bench;
mod bench_lsh;
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
    BenchCommand, Bm25Arg, Cli, Command, CpuBackendArg, ExtractArgs, FragRelScopeArg, FusionArg,
    ModelArgs, PrecisionArg, RankArgs, RetrieverArg, TimeArg,
};
use memdex_engine::{
    Bm25Flavour, ExtractOptions, FragRel, FragRelScope, Fusion, RankOptions, Retriever, TimeMode,
    TimeStage,
};

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
    let mut o = base;
    if let Some(r) = a.retriever {
        o.retriever = match r {
            RetrieverArg::Dense => Retriever::Dense,
            RetrieverArg::Bm25 => Retriever::Bm25,
            RetrieverArg::Hybrid => Retriever::Hybrid,
        };
    }
    if let Some(b) = a.bm25 {
        o.bm25 = match b {
            Bm25Arg::Official => Bm25Flavour::Official,
            Bm25Arg::Memdex => Bm25Flavour::Memdex,
        };
    }
    if let Some(f) = a.fusion {
        o.fusion = match f {
            FusionArg::Minmax => Fusion::MinMax,
            FusionArg::Rrf => Fusion::Rrf { k: 60.0 },
        };
    }
    if let Some(w) = a.dense_weight {
        anyhow::ensure!(
            (0.0..=1.0).contains(&w),
            "--dense-weight must be in [0, 1], got {w}"
        );
        o.weights = (w, 1.0 - w);
    }
    let (mut p, mut scope) = o.fragrel.unwrap_or((
        FragRel {
            alpha: 0.0,
            ..FragRel::default()
        },
        FragRelScope::Session,
    ));
    if let Some(alpha) = a.fragrel_alpha {
        anyhow::ensure!(alpha >= 0.0, "--fragrel-alpha must be ≥ 0, got {alpha}");
        p.alpha = alpha;
    }
    if let Some(w) = a.fragrel_w {
        anyhow::ensure!(
            (0.0..=1.0).contains(&w),
            "--fragrel-w must be in [0, 1], got {w}"
        );
        p.w = w;
    }
    if let Some(sc) = a.fragrel_scope {
        scope = match sc {
            FragRelScopeArg::Session => FragRelScope::Session,
            FragRelScopeArg::History => FragRelScope::History,
        };
    }
    o.fragrel = (p.alpha > 0.0).then_some((p, scope));
    if let Some(r) = a.recency {
        anyhow::ensure!(
            (0.0..=1.0).contains(&r),
            "--recency must be in [0, 1], got {r}"
        );
        o.recency = (r > 0.0).then_some(r);
    }
    if let Some(i) = a.importance {
        anyhow::ensure!(i >= 0.0, "--importance must be ≥ 0, got {i}");
        o.importance = (i > 0.0).then_some(i);
    }
    if let Some(x) = a.fragrel_semantic {
        anyhow::ensure!(x >= 0.0, "--fragrel-semantic must be ≥ 0, got {x}");
        o.semantic = (x > 0.0).then_some(x);
    }
    if let Some(t) = a.time {
        o.time = match t {
            TimeArg::Off => None,
            TimeArg::Front => Some(TimeStage {
                mode: TimeMode::Front,
                ..o.time.unwrap_or_default()
            }),
            TimeArg::Boost => Some(TimeStage {
                mode: TimeMode::Boost(1.0),
                ..o.time.unwrap_or_default()
            }),
        };
    }
    if let Some(b) = a.time_boost {
        anyhow::ensure!(b >= 0.0, "--time-boost must be ≥ 0, got {b}");
        match &mut o.time {
            Some(TimeStage {
                mode: TimeMode::Boost(x),
                ..
            }) => *x = b,
            _ => anyhow::bail!("--time-boost needs --time boost"),
        }
    }
    if let Some(b) = a.when_boost {
        anyhow::ensure!(b >= 0.0, "--when-boost must be ≥ 0, got {b}");
        match &mut o.time {
            Some(st) => st.when_boost = b,
            None if b == 0.0 => {}
            None => anyhow::bail!("--when-boost needs the time stage (--time front|boost)"),
        }
    }
    Ok(o)
}
