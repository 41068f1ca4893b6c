//! Flags of `memdex serve`, `memdex compact` and `memdex mcp`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use crate::cli_common::{ModelArgs, StructureArgs};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Store directory (created on the first append if missing).
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// Listen address. Without --api-key only loopback addresses are accepted. Port 0 picks a
    /// free port; the bound address is printed on stdout as {"listening": ADDR}.
    #[arg(long, env = "MEMDEX_ADDR", default_value = "127.0.0.1:7700")]
    pub addr: SocketAddr,
    /// Admin API key (`Authorization: Bearer KEY`): may do everything.
    #[arg(long, env = "MEMDEX_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// JSON file {"tenant": "key", ...}: each key reaches only its tenant.
    #[arg(long, env = "MEMDEX_TENANT_KEYS")]
    pub tenant_keys: Option<PathBuf>,
    /// Do not serve the memory inspector page at /ui (the API is served either way).
    #[arg(long, env = "MEMDEX_NO_UI")]
    pub no_ui: bool,
    /// Largest request body in bytes.
    #[arg(long, env = "MEMDEX_MAX_BODY_BYTES", default_value_t = 4 << 20)]
    pub max_body_bytes: usize,
    /// Requests handled at once; more answer 429.
    #[arg(long, env = "MEMDEX_MAX_IN_FLIGHT", default_value_t = 512)]
    pub max_in_flight: usize,
    /// Connections open at once; more are closed as they arrive.
    #[arg(long, env = "MEMDEX_MAX_CONNECTIONS", default_value_t = 4096)]
    pub max_connections: usize,
    /// Seconds a connection may take to send a request's headers.
    #[arg(long, env = "MEMDEX_HEADER_TIMEOUT", default_value_t = 10)]
    pub header_timeout: u64,
    /// Seconds a request body may take to arrive (then 408).
    #[arg(long, env = "MEMDEX_BODY_TIMEOUT", default_value_t = 30)]
    pub body_timeout: u64,
    /// Estimated tokens a model worker batches from the queue at once.
    #[arg(long, env = "MEMDEX_QUEUE_TOKENS", default_value_t = 8192)]
    pub queue_tokens: usize,
    /// Model workers: threads that take batches from the one embedding queue, each with its
    /// own copy of the model (on CUDA each issuing on a stream of its own). `auto` (default):
    /// with a CUDA model, one, and a second kept only if at start it raises the rate of
    /// query-sized warm-up batches by 10 % (logged at info); on the CPU one (the encoder
    /// already spreads a batch over every core). Or a number, 1 to 64.
    #[arg(
        long,
        env = "MEMDEX_MODEL_WORKERS",
        value_parser = model_workers,
        default_value = "auto"
    )]
    pub model_workers: ModelWorkers,
    /// Embedding jobs that may wait; more answer 429.
    #[arg(long, env = "MEMDEX_QUEUE_JOBS", default_value_t = 1024)]
    pub queue_jobs: usize,
    /// Seconds between background compaction checks (0: off; `POST /v1/admin/compact` still
    /// works).
    #[arg(long, env = "MEMDEX_COMPACT_EVERY", default_value_t = 30)]
    pub compact_every: u64,
    /// MiB the per-tenant ranking caches (BM25 indexes, importance, session groups) hold at
    /// most; past it the least recently searched tenants are dropped and rebuilt on their
    /// next search.
    #[arg(long, env = "MEMDEX_CACHE_MB", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub cache_mb: u64,
    /// Score the dense stage of searches on the model's device, all searches of a model
    /// batch together whatever their tenants (segments stay resident in device memory):
    /// auto = on when the model runs on CUDA.
    #[arg(long, env = "MEMDEX_DEVICE_SCAN", value_enum, default_value = "auto")]
    pub device_scan: DeviceScanArg,
    /// Where searches are ranked: auto = memdex's CUDA kernels when the model runs on CUDA,
    /// each model batch placed on the GPU or the CPU by a cost model measured as it serves
    /// (tiny tenants stay on the CPU); cuda = the GPU for every batch the kernel runs (its
    /// default stages; others rank on the CPU); cpu = the CPU ranker on each request thread;
    /// kernels = memdex's kernels on the model's device for every batch (their CPU reference
    /// with a CPU model: a check, slower than the CPU ranker).
    #[arg(long, env = "MEMDEX_RANK_DEVICE", value_enum, default_value = "auto")]
    pub rank_device: RankDeviceArg,
    /// Hash every store file before listening and refuse to start on a damaged one (without
    /// it, files opening did not hash are hashed in the background while serving, and a
    /// search hashes a file it needs first; docs/serving.md "Damage").
    #[arg(long, env = "MEMDEX_VERIFY_ON_START")]
    pub verify_on_start: bool,
    /// Directory `POST /v1/admin/snapshot` writes snapshots into (default: `snapshots/`
    /// inside the store directory, so hard links work).
    #[arg(long, env = "MEMDEX_SNAPSHOT_DIR")]
    pub snapshot_dir: Option<PathBuf>,
    /// Async worker threads (HTTP); the model workers, the rank stage and the writer have
    /// threads of their own besides.
    #[arg(long, env = "MEMDEX_HTTP_THREADS", default_value_t = 2)]
    pub http_threads: usize,
    #[command(flatten)]
    pub structures: StructureArgs,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// `--model-workers`: `auto` or a count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelWorkers {
    /// Measured at start, up to 2 (CUDA); 1 on the CPU.
    Auto,
    Fixed(usize),
}

impl ModelWorkers {
    /// The engine's (most workers, measure) settings.
    pub fn engine(self) -> (usize, bool) {
        match self {
            ModelWorkers::Auto => (2, true),
            ModelWorkers::Fixed(n) => (n, false),
        }
    }
}

/// `--model-workers`: auto, or 1 to 64.
fn model_workers(s: &str) -> Result<ModelWorkers, String> {
    if s == "auto" {
        return Ok(ModelWorkers::Auto);
    }
    let n: usize = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of model workers (auto, or 1 to 64)"))?;
    match n {
        0 => Err("0 model workers would embed nothing: at least 1 is needed".into()),
        1..=64 => Ok(ModelWorkers::Fixed(n)),
        _ => Err(format!(
            "{n} model workers: at most 64 (each holds a copy of the model)"
        )),
    }
}

#[derive(Debug, Args)]
pub struct CompactArgs {
    /// Store directory (not while a server holds it: use `POST /v1/admin/compact` then).
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// Segments with fewer rows are merged with their small neighbours.
    #[arg(long, env = "MEMDEX_COMPACT_SMALL_ROWS", default_value_t = 4096)]
    pub small_rows: u64,
    /// Print the report as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
}

/// `--rank-device`: where searches are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RankDeviceArg {
    Auto,
    Cpu,
    Cuda,
    Kernels,
}

impl From<RankDeviceArg> for memdex_memory::RankDevice {
    fn from(a: RankDeviceArg) -> Self {
        match a {
            RankDeviceArg::Auto => memdex_memory::RankDevice::Auto,
            RankDeviceArg::Cpu => memdex_memory::RankDevice::Cpu,
            RankDeviceArg::Cuda => memdex_memory::RankDevice::Cuda,
            RankDeviceArg::Kernels => memdex_memory::RankDevice::Kernels,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceScanArg {
    Auto,
    On,
    Off,
}

impl DeviceScanArg {
    /// The explicit choice (None: auto, decided by the model's device).
    pub fn choice(self) -> Option<bool> {
        match self {
            DeviceScanArg::Auto => None,
            DeviceScanArg::On => Some(true),
            DeviceScanArg::Off => Some(false),
        }
    }
}

/// `memdex mcp`: the store as Model Context Protocol tools on stdio.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Store directory (created if missing).
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// Serve only this tenant's memory (the tools then take no tenant). Default: each call
    /// names its tenant.
    #[arg(long, env = "MEMDEX_TENANT")]
    pub tenant: Option<String>,
    /// Seconds between background compaction checks (0: never).
    #[arg(long, env = "MEMDEX_COMPACT_EVERY", default_value_t = 30)]
    pub compact_every: u64,
    /// Where searches are ranked (as `memdex serve --rank-device`).
    #[arg(long, env = "MEMDEX_RANK_DEVICE", value_enum, default_value = "auto")]
    pub rank_device: RankDeviceArg,
    #[command(flatten)]
    pub model: ModelArgs,
}
