// FragRel environment scores fused with the top-k: what is ranked is s_i + alpha * env_i, with
//   env_i = sum_{j != i, same group} w^|pos_i - pos_j| s_j / sum_{j != i, same group} w^|pos_i - pos_j|
// (0 for an item alone in its group), s = cosine of the query with row i. Along the timeline both
// sums are exponential scans, forward F_i = d_i (F_{i-1} + s_{i-1}) and backward
// B_i = d_{i+1} (B_{i+1} + s_{i+1}) with d_i = w^(pos_i - pos_{i-1}) inside a group and 0 across
// a group boundary (and the same with s = 1 for the denominators): see memdex_score::fragrel.
//
// One block per query (grid = nq, 256 threads). The query's rows [start, end) must be its
// tenant's timeline in order (positions ascending within each contiguous group).
//   1. every warp scores rows (as segmented_topk) into scratch s[]
//   2. each thread owns a contiguous chunk; it composes its chunk's affine maps (x -> a x + b),
//      thread 0 scans the 256 chunk maps, each thread re-walks its chunk with the right carry:
//      forward first (F into scratch), then backward, writing s + alpha * env into scratch
//   3. top-k of the final scores over the rows that pass the optional bucket mask (the
//      environment always uses every row of the range).
// scratch: nq × 3 × stride floats (stride >= longest range); positions/groups: N u32 each.
#include "common.cuh"
#include "fragrel.cuh"

#define FR_THREADS (MEMDEX_WARPS * 32)

#define FR_PARAMS                                                                             \
    const __half *__restrict__ emb, uint32_t dim, const float *__restrict__ queries,          \
        const uint32_t *__restrict__ ranges, const uint32_t *__restrict__ positions,          \
        const uint32_t *__restrict__ groups, float alpha, float w,                            \
        const uint16_t *__restrict__ row_buckets, const uint32_t *__restrict__ query_masks,   \
        uint32_t tables, uint32_t words, uint32_t k, float *__restrict__ scratch,             \
        uint32_t stride, float *__restrict__ out_s, uint32_t *__restrict__ out_r
#define FR_ARGS                                                                              \
    emb, dim, queries, ranges, positions, groups, alpha, w, row_buckets, query_masks, tables, \
        words, k, scratch, stride, out_s, out_r

template <int C>
__device__ __forceinline__ void fragrel_topk(FR_PARAMS) {
    __shared__ float ls[MEMDEX_WARPS][MEMDEX_MAX_K];
    __shared__ uint32_t lr[MEMDEX_WARPS][MEMDEX_MAX_K];
    __shared__ float ca[FR_THREADS], cn[FR_THREADS], cz[FR_THREADS];  // chunk maps, then carries
    const uint32_t qi = blockIdx.x, tid = threadIdx.x;
    const uint32_t warp = tid / 32, lane = tid % 32;
    memdex_lists_init(ls, lr);
    const uint32_t start = ranges[2 * qi], end = ranges[2 * qi + 1];
    const uint32_t n = end > start ? end - start : 0;
    float* s = scratch + (uint64_t)qi * 3 * stride;
    float* fn = s + stride;  // forward numerator, later the final score
    float* fz = fn + stride; // forward denominator

    // 1. scores
    {
        MemdexQuery<C> q;
        memdex_load_query<C>(queries + (uint64_t)qi * dim, dim, q);
        for (uint32_t i = warp; i < n; i += MEMDEX_WARPS) {
            const float c = memdex_row_cosine<C>(emb, dim, start + i, q);
            if (lane == 0) s[i] = c;
        }
    }
    __syncthreads();

    // 2. s + alpha * env into fn (fragrel.cuh; every row of the range takes part)
    memdex_fragrel_env<FR_THREADS>(s, fn, fz, n, start, positions, groups, nullptr, alpha, w, ca,
                                   cn, cz);

    // 3. top-k of the final scores; lanes take consecutive rows, lane 0 inserts them in order
    const uint32_t* qmask = query_masks ? query_masks + (uint64_t)qi * tables * words : nullptr;
    for (uint32_t base = warp * 32; base < n; base += MEMDEX_WARPS * 32) {
        const uint32_t i = base + lane;
        const bool ok = i < n && memdex_row_selected(row_buckets, qmask, tables, words, start + i);
        const float v = ok ? memdex_sanitize(fn[i]) : -INFINITY;
        const uint32_t okmask = __ballot_sync(0xffffffffu, ok);
        for (uint32_t src = 0; src < 32; ++src) {
            const float vs = __shfl_sync(0xffffffffu, v, src);
            if (lane == 0 && ((okmask >> src) & 1u))
                memdex_list_insert(ls[warp], lr[warp], k, vs, start + base + src);
        }
    }
    __syncthreads();
    if (tid == 0) memdex_lists_merge(ls, lr, k, out_s + (uint64_t)qi * k, out_r + (uint64_t)qi * k);
}

// dim <= 1024 and dim <= 512 widths (see segmented_topk.cu)
extern "C" __global__ void __launch_bounds__(FR_THREADS) memdex_fragrel_topk(FR_PARAMS) {
    fragrel_topk<4>(FR_ARGS);
}
extern "C" __global__ void __launch_bounds__(FR_THREADS) memdex_fragrel_topk_d512(FR_PARAMS) {
    fragrel_topk<2>(FR_ARGS);
}
