// memdex's default ranking pipeline fused, in two kernels over the rows of each query's range
// (live rows only: the host passes a tenant's live rows). memdex_rank_dense: the dense
// cosines, the queries of one range in tiles (tile.cuh: a block reads each row once for its
// tile; grid = tiles × splits), into each query's scratch. memdex_rank_topk, one block per query
// (grid = nq, 256 threads): hybrid min-max fusion with the keyword scores -> FragRel
// environment along the timeline -> importance -> time stage -> top-k. The semantics are the
// CPU reference's (crates/memdex-kernels/src/rank.rs, = memdex_rank::rank's defaults); scores
// never leave the scratch until the selection.
//
// Output: 2k slots per query. With the time stage's `front` and some row flagged, the
// first k are the flagged rows' top-k and the last k the others'; otherwise the first k are
// the top-k and the last k are empty. The host concatenates and keeps k.
// With out_all (not null) there is no selection: every range row's final score is written
// there at the query's offset (`front` is left to the host, which has the flags), for callers
// that need the whole order (evaluation metrics).
//
// scratch: nq x 3 x stride floats (stride >= longest range). sparse / flags: one entry per
// row of each range, ranges concatenated; offsets[q] is where query q's entries start.
// time_mode: 0 none, 1 front, 2 boost (time_factor). sparse_fused: sparse is the keyword side
// already normalised and weighted by the host (query expansion on), added as it is.
#include "fragrel.cuh"
#include "tile.cuh"

#define RK_THREADS (MEMDEX_WARPS * 32)

#define RK_PARAMS                                                                            \
    const uint32_t *__restrict__ ranges, const uint32_t *__restrict__ positions,             \
        const uint32_t *__restrict__ groups, const uint8_t *__restrict__ importance,         \
        const float *__restrict__ sparse, const uint8_t *__restrict__ flags,                 \
        const uint32_t *__restrict__ offsets,                                                \
        const uint32_t *__restrict__ time_mode, const float *__restrict__ time_factor,       \
        float w_dense, float w_sparse, uint32_t sparse_fused, uint32_t fragrel, float alpha,  \
        float w,                                                                             \
        uint32_t use_importance, float w_importance, uint32_t k, float *__restrict__ scratch, \
        uint32_t stride, float *__restrict__ out_s, uint32_t *__restrict__ out_r,            \
        float *__restrict__ out_all
#define RK_ARGS                                                                              \
    ranges, positions, groups, importance, sparse, flags, offsets,                           \
        time_mode, time_factor, w_dense, w_sparse, sparse_fused, fragrel, alpha, w,          \
        use_importance,                                                                      \
        w_importance, k, scratch, stride, out_s, out_r, out_all

// Block-wide minima (even slots) and maxima (odd slots) of four values; every thread gets them.
// NaN is ignored, as f64::min/max ignore it on the CPU.
__device__ __forceinline__ void rk_block_min_max(float v[4], float (*sh)[MEMDEX_WARPS]) {
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float x = __shfl_xor_sync(0xffffffffu, v[j], o);
            v[j] = (j % 2 == 0) ? fminf(v[j], x) : fmaxf(v[j], x);
        }
        if (lane == 0) sh[j][warp] = v[j];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float r = sh[j][0];
        for (int x = 1; x < MEMDEX_WARPS; ++x) r = (j % 2 == 0) ? fminf(r, sh[j][x]) : fmaxf(r, sh[j][x]);
        v[j] = r;
    }
    __syncthreads();
}

// (x - lo) / (hi - lo), or 0 when the span is not positive (constant, empty or NaN).
__device__ __forceinline__ float rk_min_max(float x, float lo, float hi) {
    const float span = hi - lo;
    return span > 0.f ? (x - lo) / span : 0.f;
}

// One selection pass over the rows whose flag matches `want` (2: any), into out (k slots).
__device__ __forceinline__ void rk_select(float (*ls)[MEMDEX_MAX_K], uint32_t (*lr)[MEMDEX_MAX_K],
                                          const float* fin, const uint8_t* __restrict__ qflags,
                                          uint32_t start,
                                          uint32_t n, uint32_t want, uint32_t k, float* out_s,
                                          uint32_t* out_r) {
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    memdex_lists_init(ls, lr);
    __syncthreads();
    for (uint32_t base = warp * 32; base < n; base += MEMDEX_WARPS * 32) {
        const uint32_t i = base + lane;
        const bool ok = i < n && (want == 2 || (uint32_t)(qflags[i] != 0) == want);
        const float v = ok ? memdex_sanitize(fin[i]) : -INFINITY;
        const uint32_t okmask = __ballot_sync(0xffffffffu, ok);
        for (uint32_t src = 0; src < 32; ++src) {
            const float vs = __shfl_sync(0xffffffffu, v, src);
            if (lane == 0 && ((okmask >> src) & 1u))
                memdex_list_insert(ls[warp], lr[warp], k, vs, start + base + src);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) memdex_lists_merge(ls, lr, k, out_s, out_r);
    __syncthreads();
}

// Dense cosines of a tile's queries with their range's rows (this block's split of it): range
// row i's cosine goes to scratch[q · 3 · stride + i] of each query q of the tile (unsanitised:
// the hybrid step's min-max ignores NaN). Dynamic shared memory: cap × (C·512 + 4) bytes.
template <int C, int S>
__device__ __forceinline__ void rank_dense(const __half* __restrict__ emb, uint32_t dim,
                                           const float* __restrict__ queries,
                                           const uint32_t* __restrict__ ranges,
                                           const uint32_t* __restrict__ tile_q,
                                           const uint32_t* __restrict__ tile_off, uint32_t cap,
                                           uint32_t splits, float* __restrict__ scratch,
                                           uint32_t stride) {
    const uint32_t t0 = tile_off[blockIdx.x], nt = tile_off[blockIdx.x + 1] - t0;
    const uint32_t* tq = tile_q + t0;
    float4* qs = memdex_dynamic_smem();
    float* qn = reinterpret_cast<float*>(qs + cap * MEMDEX_TILE_F4(C));
    memdex_tile_load<C>(queries, dim, tq, nt, qs, qn);
    __syncthreads();
    const uint32_t start = ranges[2 * tq[0]];
    uint32_t lo, hi;
    memdex_split(start, ranges[2 * tq[0] + 1], blockIdx.y, splits, lo, hi);
    auto all = [](uint32_t, uint32_t) { return true; };
    auto sink = [&](uint32_t t, uint32_t r, float c) {
        scratch[(uint64_t)tq[t] * 3 * stride + (r - start)] = c;
    };
    memdex_tile_scan<C, S>(emb, dim, lo, hi, qs, qn, nt, false, all, sink);
}

#define RK_DENSE_PARAMS                                                                      \
    const __half *__restrict__ emb, uint32_t dim, const float *__restrict__ queries,         \
        const uint32_t *__restrict__ ranges, const uint32_t *__restrict__ tile_q,            \
        const uint32_t *__restrict__ tile_off, uint32_t cap, uint32_t splits,                \
        float *__restrict__ scratch, uint32_t stride
// The instantiations: MEMDEX_TILED_INSTANCES (tile.cuh).
#define RK_DENSE_KERNEL(name, C, S)                                                          \
    extern "C" __global__ void __launch_bounds__(RK_THREADS) name(RK_DENSE_PARAMS) {         \
        rank_dense<C, S>(emb, dim, queries, ranges, tile_q, tile_off, cap, splits, scratch,  \
                         stride);                                                            \
    }
MEMDEX_TILED_INSTANCES(RK_DENSE_KERNEL, memdex_rank_dense)

// The rest of the pipeline for one query, from the dense cosines memdex_rank_dense left in
// its scratch.
__device__ __forceinline__ void rank_topk(RK_PARAMS) {
    __shared__ float ls[MEMDEX_WARPS][MEMDEX_MAX_K];
    __shared__ uint32_t lr[MEMDEX_WARPS][MEMDEX_MAX_K];
    __shared__ float ca[RK_THREADS], cn[RK_THREADS], cz[RK_THREADS];  // chunk maps, then carries
    __shared__ float red[4][MEMDEX_WARPS];
    const uint32_t qi = blockIdx.x, tid = threadIdx.x;
    const uint32_t start = ranges[2 * qi], end = ranges[2 * qi + 1];
    const uint32_t n = end > start ? end - start : 0;
    const float* qsparse = sparse + offsets[qi];
    const uint8_t* qflags = flags + offsets[qi];
    float* s = scratch + (uint64_t)qi * 3 * stride;  // dense, then fused
    float* fn = s + stride;                           // forward numerator, then the final score
    float* fz = fn + stride;                          // forward denominator

    // 1. the dense cosines are in s (memdex_rank_dense)
    // 2. hybrid: min-max of dense and sparse over the range, then the weighted sum
    {
        float v[4] = {INFINITY, -INFINITY, INFINITY, -INFINITY};
        for (uint32_t i = tid; i < n; i += RK_THREADS) {
            v[0] = fminf(v[0], s[i]); v[1] = fmaxf(v[1], s[i]);
            v[2] = fminf(v[2], qsparse[i]); v[3] = fmaxf(v[3], qsparse[i]);
        }
        rk_block_min_max(v, red);
        // sparse_fused: the host normalised and weighted the keyword side (BM25 and query
        // expansion): it is added as it is
        for (uint32_t i = tid; i < n; i += RK_THREADS)
            s[i] = w_dense * rk_min_max(s[i], v[0], v[1]) +
                   (sparse_fused ? qsparse[i] : w_sparse * rk_min_max(qsparse[i], v[2], v[3]));
    }
    __syncthreads();

    // 3. FragRel (fragrel.cuh) over the range; without it the fused score is final
    if (fragrel) {
        memdex_fragrel_env<RK_THREADS>(s, fn, fz, n, start, positions, groups, nullptr, alpha, w,
                                       ca, cn, cz);
    } else {
        for (uint32_t i = tid; i < n; i += RK_THREADS) fn[i] = s[i];
        __syncthreads();
    }

    // 4. importance: shift a negative minimum up, then scale
    if (use_importance) {
        float v[4] = {INFINITY, -INFINITY, INFINITY, -INFINITY};
        for (uint32_t i = tid; i < n; i += RK_THREADS)
            v[0] = fminf(v[0], fn[i]);
        rk_block_min_max(v, red);
        const float shift = v[0] < 0.f ? v[0] : 0.f;
        for (uint32_t i = tid; i < n; i += RK_THREADS)
            fn[i] = (fn[i] - shift) * (1.f + w_importance * log10f((float)importance[start + i]));
    }
    __syncthreads();

    // 5. time stage: only when some row is flagged
    const uint32_t mode = time_mode[qi];
    bool flagged = false;
    for (uint32_t i = tid; i < n && mode != 0; i += RK_THREADS) flagged |= qflags[i] != 0;
    const bool any = __syncthreads_or(flagged) != 0;
    if (any && mode == 2) {
        float v[4] = {INFINITY, -INFINITY, INFINITY, -INFINITY};
        for (uint32_t i = tid; i < n; i += RK_THREADS)
            v[0] = fminf(v[0], fn[i]);
        rk_block_min_max(v, red);
        const float shift = fminf(v[0], 0.f);
        const float b = time_factor[qi];
        for (uint32_t i = tid; i < n; i += RK_THREADS)
            fn[i] = (fn[i] - shift) * (qflags[i] != 0 ? 1.f + b : 1.f);
        __syncthreads();
    }

    // 6. every score (the host orders them), or the selection: flagged rows first under
    // `front`, else one list
    if (out_all != nullptr) {
        float* o = out_all + offsets[qi];
        for (uint32_t i = tid; i < n; i += RK_THREADS)
            o[i] = memdex_sanitize(fn[i]);
        return;
    }
    float* os = out_s + (uint64_t)qi * 2 * k;
    uint32_t* orow = out_r + (uint64_t)qi * 2 * k;
    if (any && mode == 1) {
        rk_select(ls, lr, fn, qflags, start, n, 1, k, os, orow);
        rk_select(ls, lr, fn, qflags, start, n, 0, k, os + k, orow + k);
    } else {
        rk_select(ls, lr, fn, qflags, start, n, 2, k, os, orow);
        for (uint32_t j = tid; j < k; j += RK_THREADS) {
            os[k + j] = -INFINITY;
            orow[k + j] = MEMDEX_NO_ROW;
        }
    }
}

extern "C" __global__ void __launch_bounds__(RK_THREADS) memdex_rank_topk(RK_PARAMS) {
    rank_topk(RK_ARGS);
}
