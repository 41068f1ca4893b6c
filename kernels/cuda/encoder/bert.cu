// The fused forward pass of a BERT-family encoder (MiniLM, E5, bge) on CUDA: every step of
// the pass that is not a matrix product, in as few launches as the layer allows. The products
// (Q, K and V in one, the output projection, the feed-forward pair and, for long sequences,
// attention's QKᵀ and PV) go to cuBLAS; the order of the launches, their grids and arguments is
// the plan of crates/memdex-fused-bert (src/plan.rs), which also runs them on the CPU
// (src/reference.rs: one Rust reference per kernel below) and under kernels/emu's SIMT emulator
// (kernels/emu/bert_launch.cpp).
//
// Layouts: a batch is b sequences padded to L tokens, T = b·L token rows; hidden states are f16
// rows of H (row-major [T, H]); QKV is the product's [T, 3H] (Q | K | V, heads of dh = H / heads
// consecutive within each); lengths[b] counts each sequence's real tokens (padded rows are
// computed like the others and never read by a real one: keys past a length are masked).
// Arithmetic is f32; what is stored between launches is f16, as in candle's f16 model.
#include <cuda_fp16.h>
#include <stdint.h>

#define MEMDEX_BERT_THREADS 128  // every kernel here runs blocks of 4 warps

// Dynamic shared memory (the emulator defines its own).
#ifndef MEMDEX_EMULATED
__device__ __forceinline__ float* memdex_bert_smem() {
    extern __shared__ float4 memdex_bert_shared[];
    return reinterpret_cast<float*>(memdex_bert_shared);
}
#else
inline float* memdex_bert_smem() { return reinterpret_cast<float*>(memdex_dynamic_smem()); }
#endif

__device__ __forceinline__ float memdex_bert_h2f(__half h) { return __half2float(h); }
__device__ __forceinline__ __half memdex_bert_f2h(float f) { return __float2half_rn(f); }

__device__ __forceinline__ float memdex_bert_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float memdex_bert_warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// The sum of v over the block (every thread gets it). `scratch`: 4 floats of shared memory.
__device__ __forceinline__ float memdex_bert_block_sum(float v, float* scratch) {
    v = memdex_bert_warp_sum(v);
    __syncthreads();  // an earlier call's readers are done with scratch
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    float t = 0.f;
    for (uint32_t w = 0; w < blockDim.x / 32; ++w) t += scratch[w];
    return t;
}

// LayerNorm of the row held in `row` (h floats of shared memory), written to `out` as f16.
__device__ __forceinline__ void memdex_bert_norm_row(const float* row, uint32_t h,
                                                     const __half* gamma, const __half* beta,
                                                     float eps, float* scratch, __half* out) {
    float s = 0.f;
    for (uint32_t d = threadIdx.x; d < h; d += blockDim.x) s += row[d];
    const float mean = memdex_bert_block_sum(s, scratch) / (float)h;
    float q = 0.f;
    for (uint32_t d = threadIdx.x; d < h; d += blockDim.x) {
        const float c = row[d] - mean;
        q += c * c;
    }
    const float var = memdex_bert_block_sum(q, scratch) / (float)h;
    const float inv = 1.f / sqrtf(var + eps);
    for (uint32_t d = threadIdx.x; d < h; d += blockDim.x) {
        const float y = (row[d] - mean) * inv * memdex_bert_h2f(gamma[d]) + memdex_bert_h2f(beta[d]);
        out[d] = memdex_bert_f2h(y);
    }
}

// Embeddings: word + position + token type 0, then LayerNorm. One block per token row; shared
// memory: h floats.
extern "C" __global__ void __launch_bounds__(MEMDEX_BERT_THREADS)
memdex_bert_embed(const uint32_t* __restrict__ ids, uint32_t len, const __half* __restrict__ word,
                  const __half* __restrict__ pos, const __half* __restrict__ type0,
                  const __half* __restrict__ gamma, const __half* __restrict__ beta, uint32_t h,
                  float eps, __half* __restrict__ out) {
    __shared__ float scratch[4];
    float* row = memdex_bert_smem();
    const uint32_t t = blockIdx.x, i = t % len;
    const __half* w = word + (size_t)ids[t] * h;
    const __half* p = pos + (size_t)i * h;
    for (uint32_t d = threadIdx.x; d < h; d += blockDim.x)
        row[d] = memdex_bert_h2f(w[d]) + memdex_bert_h2f(p[d]) + memdex_bert_h2f(type0[d]);
    __syncthreads();
    memdex_bert_norm_row(row, h, gamma, beta, eps, scratch, out + (size_t)t * h);
}

// x ← LayerNorm(y + bias + x): a sub-layer's output projection added to its input. One block
// per token row (it owns the row, so x is read before it is written); shared memory: h floats.
extern "C" __global__ void __launch_bounds__(MEMDEX_BERT_THREADS)
memdex_bert_residual_norm(const __half* __restrict__ y, const __half* __restrict__ bias,
                          __half* __restrict__ x, const __half* __restrict__ gamma,
                          const __half* __restrict__ beta, uint32_t h, float eps) {
    __shared__ float scratch[4];
    float* row = memdex_bert_smem();
    const size_t base = (size_t)blockIdx.x * h;
    for (uint32_t d = threadIdx.x; d < h; d += blockDim.x)
        row[d] = memdex_bert_h2f(y[base + d]) + memdex_bert_h2f(bias[d]) +
                 memdex_bert_h2f(x[base + d]);
    __syncthreads();
    memdex_bert_norm_row(row, h, gamma, beta, eps, scratch, x + base);
}

#define MEMDEX_BERT_GELU 0       // 0.5·x·(1 + erf(x/√2)), BERT's "gelu"
#define MEMDEX_BERT_GELU_TANH 1  // the tanh approximation ("gelu_new")
#define MEMDEX_BERT_RELU 2

__device__ __forceinline__ float memdex_bert_act(float x, uint32_t act) {
    if (act == MEMDEX_BERT_GELU) return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    if (act == MEMDEX_BERT_GELU_TANH) {
        const float c = 0.7978845608028654f;  // √(2/π)
        return 0.5f * x * (1.f + tanhf(c * (x + 0.044715f * x * x * x)));
    }
    return fmaxf(x, 0.f);
}

// u ← act(u + bias), in place over n = rows · cols values (the feed-forward's first product).
extern "C" __global__ void __launch_bounds__(MEMDEX_BERT_THREADS)
memdex_bert_bias_act(__half* __restrict__ u, const __half* __restrict__ bias, uint32_t cols,
                     uint32_t n, uint32_t act) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = memdex_bert_h2f(u[i]) + memdex_bert_h2f(bias[i % cols]);
    u[i] = memdex_bert_f2h(memdex_bert_act(v, act));
}

// Attention of one (sequence, head) in one block, for sequences short enough that its K and V
// fit shared memory (the plan's `attention_smem`): QKV's bias added as they are read, Q scaled
// by `scale`, softmax over the sequence's real keys, the context written to ctx[T, H] at the
// head's columns. Grid: b · heads. Shared memory: K as len × (dh + 1) floats (the pad keeps a
// warp's lanes, one key each, on distinct banks), V as len × dh, then per warp a query row
// (dh) and its probabilities (len).
extern "C" __global__ void __launch_bounds__(MEMDEX_BERT_THREADS)
memdex_bert_attention(const __half* __restrict__ qkv, const __half* __restrict__ bias,
                      const uint32_t* __restrict__ lengths, uint32_t len, uint32_t heads,
                      uint32_t dh, float scale, __half* __restrict__ ctx) {
    const uint32_t h = heads * dh, b = blockIdx.x / heads, head = blockIdx.x % heads;
    const uint32_t warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float* ks = memdex_bert_smem();
    float* vs = ks + len * (dh + 1);
    float* qs = vs + len * dh + warp * (dh + len);
    float* ps = qs + dh;
    const size_t rows = (size_t)b * len;
    for (uint32_t e = threadIdx.x; e < len * dh; e += blockDim.x) {
        const uint32_t j = e / dh, d = e % dh, c = head * dh + d;
        const __half* r = qkv + (rows + j) * 3 * h;
        ks[j * (dh + 1) + d] = memdex_bert_h2f(r[h + c]) + memdex_bert_h2f(bias[h + c]);
        vs[j * dh + d] = memdex_bert_h2f(r[2 * h + c]) + memdex_bert_h2f(bias[2 * h + c]);
    }
    __syncthreads();
    const uint32_t n = max(min(lengths[b], len), 1u);  // real keys
    for (uint32_t i = warp; i < len; i += warps) {
        const __half* r = qkv + (rows + i) * 3 * h;
        for (uint32_t d = lane; d < dh; d += 32)
            qs[d] = (memdex_bert_h2f(r[head * dh + d]) + memdex_bert_h2f(bias[head * dh + d])) * scale;
        __syncwarp();
        float m = -INFINITY;
        for (uint32_t j = lane; j < n; j += 32) {
            float s = 0.f;
            for (uint32_t d = 0; d < dh; ++d) s += qs[d] * ks[j * (dh + 1) + d];
            ps[j] = s;
            m = fmaxf(m, s);
        }
        m = memdex_bert_warp_max(m);
        float sum = 0.f;
        for (uint32_t j = lane; j < n; j += 32) {
            const float e = expf(ps[j] - m);
            ps[j] = e;
            sum += e;
        }
        sum = memdex_bert_warp_sum(sum);
        __syncwarp();
        const float inv = 1.f / sum;
        for (uint32_t d = lane; d < dh; d += 32) {
            float acc = 0.f;
            for (uint32_t j = 0; j < n; ++j) acc += ps[j] * vs[j * dh + d];
            ctx[(rows + i) * h + head * dh + d] = memdex_bert_f2h(acc * inv);
        }
        __syncwarp();  // the next row overwrites qs and ps
    }
}

// Long sequences, step 1: QKV + bias into per-head Q (scaled), K and V, each [b, heads, len, dh]
// (the strided batches of cuBLAS's QKᵀ and PV). One thread per QKV value: n = T · 3H.
extern "C" __global__ void __launch_bounds__(MEMDEX_BERT_THREADS)
memdex_bert_split_heads(const __half* __restrict__ qkv, const __half* __restrict__ bias,
                        uint32_t len, uint32_t heads, uint32_t dh, float scale, uint32_t n,
                        __half* __restrict__ q, __half* __restrict__ k, __half* __restrict__ v) {
    const uint32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n) return;
    const uint32_t h = heads * dh, t = e / (3 * h), c = e % (3 * h);
    const uint32_t part = c / h, head = (c % h) / dh, d = c % dh;
    const uint32_t b = t / len, i = t % len;
    const size_t at = (((size_t)b * heads + head) * len + i) * dh + d;
    float x = memdex_bert_h2f(qkv[e]) + memdex_bert_h2f(bias[c]);
    if (part == 0) x *= scale;
    __half* dst = part == 0 ? q : (part == 1 ? k : v);
    dst[at] = memdex_bert_f2h(x);
}

// Long sequences, step 2: softmax of each row of scores [b · heads · len, len] (f32, from
// cuBLAS's QKᵀ) over its sequence's real keys, into probabilities (f16, 0 past the length).
// One warp per row.
extern "C" __global__ void __launch_bounds__(MEMDEX_BERT_THREADS)
memdex_bert_softmax(const float* __restrict__ scores, const uint32_t* __restrict__ lengths,
                    uint32_t len, uint32_t heads, uint32_t rows, __half* __restrict__ probs) {
    const uint32_t row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;  // a whole warp leaves together
    const uint32_t b = row / (heads * len);
    const uint32_t n = max(min(lengths[b], len), 1u);
    const float* s = scores + (size_t)row * len;
    __half* p = probs + (size_t)row * len;
    float m = -INFINITY;
    for (uint32_t j = lane; j < n; j += 32) m = fmaxf(m, s[j]);
    m = memdex_bert_warp_max(m);
    float sum = 0.f;
    for (uint32_t j = lane; j < n; j += 32) sum += expf(s[j] - m);
    sum = memdex_bert_warp_sum(sum);
    const float inv = 1.f / sum;
    for (uint32_t j = lane; j < len; j += 32)
        p[j] = memdex_bert_f2h(j < n ? expf(s[j] - m) * inv : 0.f);
}

// Long sequences, step 3: the per-head context [b, heads, len, dh] (cuBLAS's PV) back into rows
// ctx[T, H]. One thread per value: n = T · H.
extern "C" __global__ void __launch_bounds__(MEMDEX_BERT_THREADS)
memdex_bert_merge_heads(const __half* __restrict__ per_head, uint32_t len, uint32_t heads,
                        uint32_t dh, uint32_t n, __half* __restrict__ ctx) {
    const uint32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n) return;
    const uint32_t h = heads * dh, t = e / h, c = e % h, head = c / dh, d = c % dh;
    const uint32_t b = t / len, i = t % len;
    ctx[e] = per_head[(((size_t)b * heads + head) * len + i) * dh + d];
}

#define MEMDEX_BERT_POOL_MEAN 0
#define MEMDEX_BERT_POOL_CLS 1
#define MEMDEX_BERT_POOL_MAX 2
#define MEMDEX_BERT_POOL_MEAN_SQRT_LEN 3

// One vector per sequence from its real tokens' last hidden states (mean, CLS, max, or the sum
// over √length), L2-normalised when `normalize` (norm floored at 1e-12): out[b, H] in f32, the
// only thing a forward pass copies back. One block per sequence; shared memory: h floats.
extern "C" __global__ void __launch_bounds__(MEMDEX_BERT_THREADS)
memdex_bert_pool(const __half* __restrict__ x, const uint32_t* __restrict__ lengths, uint32_t len,
                 uint32_t h, uint32_t mode, uint32_t normalize, float* __restrict__ out) {
    __shared__ float scratch[4];
    float* row = memdex_bert_smem();
    const uint32_t b = blockIdx.x;
    const uint32_t n = max(min(lengths[b], len), 1u);
    const __half* s = x + (size_t)b * len * h;
    float sq = 0.f;
    for (uint32_t d = threadIdx.x; d < h; d += blockDim.x) {
        float v;
        if (mode == MEMDEX_BERT_POOL_CLS) {
            v = memdex_bert_h2f(s[d]);
        } else if (mode == MEMDEX_BERT_POOL_MAX) {
            v = -INFINITY;
            for (uint32_t i = 0; i < n; ++i) v = fmaxf(v, memdex_bert_h2f(s[(size_t)i * h + d]));
        } else {
            v = 0.f;
            for (uint32_t i = 0; i < n; ++i) v += memdex_bert_h2f(s[(size_t)i * h + d]);
            v /= mode == MEMDEX_BERT_POOL_MEAN ? (float)n : sqrtf((float)n);
        }
        row[d] = v;
        sq += v * v;
    }
    const float norm = memdex_bert_block_sum(sq, scratch);
    const float inv = normalize ? 1.f / fmaxf(sqrtf(norm), 1e-12f) : 1.f;
    for (uint32_t d = threadIdx.x; d < h; d += blockDim.x) out[(size_t)b * h + d] = row[d] * inv;
}
