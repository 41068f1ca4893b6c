// Batched cosine top-k over tenant-contiguous f16 rows, without writing scores to global memory.
//
// Query q scans rows [ranges[2q], ranges[2q+1]) of `emb` (N × dim f16, row-major). Queries with
// the same range come in tiles (tile.cuh): a block reads each row once for its tile's queries.
// A tile's range is cut into `splits` parts (<= 1024), one block each (grid = tiles × splits,
// 256 threads): every warp scores two rows at a time, one per half-warp, for every query of
// the tile (16-byte streaming loads, f32 accumulation) and keeps, per query, its own sorted
// top-k in shared memory; the block merges each query's 8 lists and writes k candidates to
// out[(q * splits + part) * k ..]. With splits > 1, memdex_topk_merge reduces the parts.
//
// Dynamic shared memory: cap × (C·512 + 4 + 8·MEMDEX_WARPS·k) bytes (cap = the longest tile).
//
// Optional bucket mask (TiM LSH): row_buckets (N × tables, u16) and query_masks (nq × tables ×
// words u32 bit sets, words = ceil(buckets / 32)); a row is scored for a query only if, in some
// table, its bucket's bit is set for that query. Rows no query of the tile selects are not read
// at all (their bytes are saved).
#include "tile.cuh"

#define SEG_PARAMS                                                                            \
    const __half *__restrict__ emb, uint32_t dim, const float *__restrict__ queries,          \
        const uint32_t *__restrict__ ranges, const uint32_t *__restrict__ tile_q,             \
        const uint32_t *__restrict__ tile_off, uint32_t cap,                                  \
        const uint16_t *__restrict__ row_buckets, const uint32_t *__restrict__ query_masks,   \
        uint32_t tables, uint32_t words, uint32_t k, uint32_t splits,                         \
        float *__restrict__ out_s, uint32_t *__restrict__ out_r
#define SEG_ARGS                                                                              \
    emb, dim, queries, ranges, tile_q, tile_off, cap, row_buckets, query_masks, tables, words, \
        k, splits, out_s, out_r

template <int C, int S>
__device__ __forceinline__ void segmented_topk(SEG_PARAMS) {
    const uint32_t part = blockIdx.y, warp = threadIdx.x / 32;
    const uint32_t t0 = tile_off[blockIdx.x], nt = tile_off[blockIdx.x + 1] - t0;
    const uint32_t* tq = tile_q + t0;
    float4* qs = memdex_dynamic_smem();
    float* qn = reinterpret_cast<float*>(qs + cap * MEMDEX_TILE_F4(C));
    float* ls = qn + cap;  // [warp][query][k]
    uint32_t* lr = reinterpret_cast<uint32_t*>(ls + MEMDEX_WARPS * cap * k);
    memdex_tile_load<C>(queries, dim, tq, nt, qs, qn);
    for (uint32_t i = threadIdx.x; i < MEMDEX_WARPS * cap * k; i += blockDim.x) {
        ls[i] = -INFINITY;
        lr[i] = MEMDEX_NO_ROW;
    }
    __syncthreads();

    uint32_t lo, hi;
    memdex_split(ranges[2 * tq[0]], ranges[2 * tq[0] + 1], part, splits, lo, hi);
    const uint32_t stride = tables * words;
    auto sel = [&](uint32_t t, uint32_t r) {
        return memdex_row_selected(row_buckets, query_masks + (uint64_t)tq[t] * stride, tables,
                                   words, r);
    };
    auto sink = [&](uint32_t t, uint32_t r, float s) {
        const uint32_t o = (warp * cap + t) * k;
        memdex_list_insert(ls + o, lr + o, k, memdex_sanitize(s), r);
    };
    memdex_tile_scan<C, S>(emb, dim, lo, hi, qs, qn, nt, query_masks != nullptr, sel, sink);
    __syncthreads();
    for (uint32_t t = threadIdx.x; t < nt; t += blockDim.x) {
        const uint64_t o = ((uint64_t)tq[t] * splits + part) * k;
        memdex_lists_merge_strided(ls + t * k, lr + t * k, cap * k, k, out_s + o, out_r + o);
    }
}

// The instantiations: MEMDEX_TILED_INSTANCES (tile.cuh).
#define SEG_KERNEL(name, C, S)                                                                 \
    extern "C" __global__ void __launch_bounds__(MEMDEX_WARPS * 32) name(SEG_PARAMS) {         \
        segmented_topk<C, S>(SEG_ARGS);                                                        \
    }
MEMDEX_TILED_INSTANCES(SEG_KERNEL, memdex_segmented_topk)

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
