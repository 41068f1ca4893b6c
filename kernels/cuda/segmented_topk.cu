// Batched cosine top-k over tenant-contiguous f16 rows, without writing scores to global memory.
//
// Query q scans rows [ranges[2q], ranges[2q+1]) of `emb` (N × dim f16, row-major). Its range is
// cut into `splits` parts (<= 1024), one block each (grid = nq × splits, 256 threads): every warp scores
// one row at a time (16-byte streaming loads, f32 accumulation) and keeps its own sorted top-k
// in shared memory; the block merges its 8 lists and writes k candidates to
// out[(q * splits + part) * k ..]. With splits > 1, memdex_topk_merge reduces the parts.
//
// Optional bucket mask (TiM LSH): row_buckets (N × tables, u16) and query_masks (nq × tables ×
// words u32 bit sets, words = ceil(buckets / 32)); a row is scored only if, in some table, its
// bucket's bit is set for the query. Rows that fail are not read at all (their bytes are saved).
#include "common.cuh"

#define SEG_PARAMS                                                                            \
    const __half *__restrict__ emb, uint32_t dim, const float *__restrict__ queries,          \
        const uint32_t *__restrict__ ranges, const uint16_t *__restrict__ row_buckets,        \
        const uint32_t *__restrict__ query_masks, uint32_t tables, uint32_t words, uint32_t k, \
        uint32_t splits, float *__restrict__ out_s, uint32_t *__restrict__ out_r
#define SEG_ARGS emb, dim, queries, ranges, row_buckets, query_masks, tables, words, k, splits, out_s, out_r

template <int C>
__device__ __forceinline__ void segmented_topk(SEG_PARAMS) {
    __shared__ float ls[MEMDEX_WARPS][MEMDEX_MAX_K];
    __shared__ uint32_t lr[MEMDEX_WARPS][MEMDEX_MAX_K];
    const uint32_t qi = blockIdx.x, part = blockIdx.y;
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    memdex_lists_init(ls, lr);
    MemdexQuery<C> q;
    memdex_load_query<C>(queries + (uint64_t)qi * dim, dim, q);
    __syncthreads();

    const uint32_t start = ranges[2 * qi], end = ranges[2 * qi + 1];
    const uint32_t len = end > start ? end - start : 0;
    const uint32_t chunk = (len + splits - 1) / splits;
    const uint32_t lo = start + min(len, part * chunk), hi = start + min(len, (part + 1) * chunk);
    const uint32_t* qmask =
        query_masks ? query_masks + (uint64_t)qi * tables * words : nullptr;

    for (uint32_t r = lo + warp; r < hi; r += MEMDEX_WARPS) {
        if (!memdex_row_selected(row_buckets, qmask, tables, words, r)) continue;  // warp-uniform
        const float s = memdex_sanitize(memdex_row_cosine<C>(emb, dim, r, q));
        if (lane == 0) memdex_list_insert(ls[warp], lr[warp], k, s, r);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        const uint64_t o = ((uint64_t)qi * splits + part) * k;
        memdex_lists_merge(ls, lr, k, out_s + o, out_r + o);
    }
}

// dim <= 1024 (4 chunks per lane) and dim <= 512 (2 chunks: half the registers, twice the
// blocks per SM); the host picks by dim.
extern "C" __global__ void __launch_bounds__(MEMDEX_WARPS * 32) memdex_segmented_topk(SEG_PARAMS) {
    segmented_topk<4>(SEG_ARGS);
}
extern "C" __global__ void __launch_bounds__(MEMDEX_WARPS * 32)
    memdex_segmented_topk_d512(SEG_PARAMS) {
    segmented_topk<2>(SEG_ARGS);
}

// Reduces `splits` (<= MEMDEX_MAX_SPLITS) sorted candidate lists of k per query to one
// (grid = nq, one warp per query). Each round every lane finds the best head among its lists
// (p = lane, lane + 32, ...), the warp takes the best of those — ordered by (score, row, list),
// so every lane agrees even between empty slots — and the owning lane advances that head.
#define MEMDEX_MAX_SPLITS 1024
extern "C" __global__ void __launch_bounds__(32)
memdex_topk_merge(const float* __restrict__ in_s, const uint32_t* __restrict__ in_r,
                  uint32_t splits, uint32_t k, float* __restrict__ out_s,
                  uint32_t* __restrict__ out_r) {
    __shared__ uint8_t head[MEMDEX_MAX_SPLITS];  // k <= 128 fits a byte
    const uint32_t qi = blockIdx.x, lane = threadIdx.x;
    const float* s = in_s + (uint64_t)qi * splits * k;
    const uint32_t* r = in_r + (uint64_t)qi * splits * k;
    for (uint32_t p = lane; p < splits; p += 32) head[p] = 0;
    __syncwarp();
    for (uint32_t j = 0; j < k; ++j) {
        float bs = -INFINITY;
        uint32_t br = MEMDEX_NO_ROW, bp = 0xffffffffu;
        for (uint32_t p = lane; p < splits; p += 32) {
            if (head[p] >= k) continue;
            const uint32_t a = p * k + head[p];
            if (bp == 0xffffffffu || memdex_better(s[a], r[a], bs, br)) {
                bs = s[a];
                br = r[a];
                bp = p;
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float os = __shfl_xor_sync(0xffffffffu, bs, o);
            const uint32_t orow = __shfl_xor_sync(0xffffffffu, br, o);
            const uint32_t op = __shfl_xor_sync(0xffffffffu, bp, o);
            const bool take = op != 0xffffffffu &&
                              (bp == 0xffffffffu || memdex_better(os, orow, bs, br) ||
                               (os == bs && orow == br && op < bp));
            if (take) {
                bs = os;
                br = orow;
                bp = op;
            }
        }
        if (lane == 0) {
            out_s[(uint64_t)qi * k + j] = bp == 0xffffffffu ? -INFINITY : bs;
            out_r[(uint64_t)qi * k + j] = bp == 0xffffffffu ? MEMDEX_NO_ROW : br;
        }
        if (bp != 0xffffffffu && lane == bp % 32) ++head[bp];
        __syncwarp();
    }
}
