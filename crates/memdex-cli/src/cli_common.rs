//! Arguments several commands share: where the model comes from and runs, and the memory
//! structures a store keeps.

use clap::Args;
use memdex_core::DeviceChoice;
use memdex_embed::{
    CpuBackend, CudaEncoder, LargeBatchGemm, Precision, SmallBatchWeights, WeightFormat,
};

/// The derived memory structures a store keeps (fixed once built; `index` and `eval` build
/// them, `serve` maintains them).
#[derive(Debug, Clone, Copy, Args)]
pub struct StructureArgs {
    /// TiM thought memory: post-think every new session into (subject, relation, object)
    /// thoughts in LSH buckets (insert, forget contradicted or negated ones, merge
    /// duplicates); `memdex thoughts` shows them, `--thought-weight` ranks with them.
    #[arg(long, env = "MEMDEX_THOUGHTS")]
    pub thoughts: bool,
    /// MemTree: insert every new item into an online tree with aggregated parents;
    /// `memdex tree` shows it, `--tree-weight` ranks with it.
    #[arg(long, env = "MEMDEX_TREE")]
    pub tree: bool,
    /// Thoughts: LSH buckets per table (even).
    #[arg(long, env = "MEMDEX_THOUGHT_BUCKETS", default_value_t = 16)]
    pub thought_buckets: u32,
    /// Thoughts: LSH tables.
    #[arg(long, env = "MEMDEX_THOUGHT_TABLES", default_value_t = 4)]
    pub thought_tables: u32,
    /// Thoughts: a new thought this close (cosine) to a live one of the same subject in a
    /// shared bucket is merged into it.
    #[arg(long, env = "MEMDEX_THOUGHT_MERGE_COSINE", default_value_t = 0.9)]
    pub thought_merge_cosine: f32,
    /// Tree: θ0 of the depth-adaptive threshold θ(d) = θ0·e^{λd}.
    #[arg(long, env = "MEMDEX_TREE_THETA0", default_value_t = 0.4)]
    pub tree_theta0: f32,
    /// Tree: λ of θ(d) = θ0·e^{λd}.
    #[arg(long, env = "MEMDEX_TREE_LAMBDA", default_value_t = 0.1)]
    pub tree_lambda: f32,
    /// Tree: characters of an aggregate node's content at most.
    #[arg(long, env = "MEMDEX_TREE_CONTENT_CHARS", default_value_t = 400)]
    pub tree_content_chars: u32,
}

/// Where the model comes from and where it runs.
#[derive(Debug, Args, Clone)]
pub struct ModelArgs {
    /// Model directory (sentence-transformers layout) or a hub repo id found in the local
    /// Hugging Face cache (HF_HOME). Default: the store's recorded model, else
    /// models/all-MiniLM-L6-v2 (fetch it with scripts/fetch-model.sh).
    #[arg(long, env = "MEMDEX_MODEL")]
    pub model: Option<String>,
    /// Compute device: auto, cpu, cuda or cuda:N.
    #[arg(long, env = "MEMDEX_DEVICE", default_value = "auto")]
    pub device: DeviceChoice,
    /// Device memory (MiB) the kernel ranker keeps tenants' rows and texts resident in, least
    /// recently used tenants evicted past it (default: a quarter of the device's memory).
    #[arg(long, env = "MEMDEX_RANK_MEMORY_MB")]
    pub rank_memory_mb: Option<u64>,
    /// Padded tokens per forward pass (default 8192 on CPU, 65536 on CUDA).
    #[arg(long, env = "MEMDEX_TOKEN_BUDGET")]
    pub token_budget: Option<usize>,
    /// Inputs per forward pass at most (default 256 on CPU, 1024 on CUDA).
    #[arg(long, env = "MEMDEX_MAX_BATCH")]
    pub max_batch: Option<usize>,
    /// Override the model's max sequence length (tokens, special tokens included).
    #[arg(long, env = "MEMDEX_MAX_LENGTH")]
    pub max_length: Option<usize>,
    /// Override the query prefix of the model profile (E5: "query: ").
    #[arg(long, env = "MEMDEX_QUERY_PREFIX")]
    pub query_prefix: Option<String>,
    /// Override the passage prefix of the model profile (E5: "passage: ").
    #[arg(long, env = "MEMDEX_PASSAGE_PREFIX")]
    pub passage_prefix: Option<String>,
    /// CPU encoder: fast (memdex's fused kernels), candle (the reference implementation), or
    /// fused (the CUDA fused encoder's plan on its CPU reference: slow, a correctness check).
    #[arg(long, env = "MEMDEX_CPU_BACKEND", value_enum, default_value = "fast")]
    pub cpu_backend: CpuBackend,
    /// CUDA encoder: candle (candle's BERT, one kernel per op: the reference) or fused
    /// (memdex's fused forward pass, f16: ~50 operations a batch replayed as a CUDA graph per
    /// batch shape; a model it does not run falls back to candle with a warning).
    /// Default: MEMDEX_CUDA_ENCODER, else candle.
    #[arg(long, value_enum)]
    pub cuda_encoder: Option<CudaEncoder>,
    /// Weights and activations: f32, f16 or bf16 (default: f32 on CPU, f16 on CUDA; the fast
    /// CPU encoder is f32 only, other precisions run candle's encoder).
    #[arg(long, env = "MEMDEX_PRECISION", value_enum)]
    pub precision: Option<Precision>,
    /// Fast CPU encoder: weights read for batches of ≤ 32 tokens (search queries). f16 halves
    /// the memory traffic (the encoder then fits the L3 cache) with f32 sums; f32 is exact.
    #[arg(
        long,
        env = "MEMDEX_SMALL_BATCH_WEIGHTS",
        value_enum,
        default_value = "f16"
    )]
    pub small_batch_weights: SmallBatchWeights,
    /// Fast CPU encoder: products of larger batches (bulk embedding). auto: i16, else f32.
    /// i16: 16-bit integers with exact sums and per-row / per-column scales (AVX2
    /// vpmaddwd; AVX-512 VNNI vpdpwssd; vectors at cosine > 0.9999 to f32's; f32 where neither
    /// runs). f32: FMA (on AVX-512 the gemm crate's kernels). bf16: bf16 operands, f32 sums
    /// (cosine > 0.999 to f32's): on AMX (tdpbf16ps; CPUs with amx_tile + amx_bf16 and the
    /// Linux permission; opt-in until measured there), else a slow tile emulator with the
    /// same arithmetic, to check its accuracy on any CPU.
    #[arg(
        long,
        env = "MEMDEX_LARGE_BATCH_GEMM",
        value_enum,
        default_value = "auto"
    )]
    pub large_batch_gemm: LargeBatchGemm,
    /// Weight files: dense (model.safetensors / pytorch_model.bin) or gguf (the directory's
    /// model.gguf; `memdex model convert` writes one for E5). With gguf the fast CPU encoder
    /// dequantises to f32 at load; `--cpu-backend candle` and CUDA run the quantized blocks
    /// through candle's quantized matmul.
    #[arg(long, env = "MEMDEX_WEIGHTS", value_enum, default_value = "dense")]
    pub weights: WeightFormat,
}
